#!/usr/bin/python3
"""Runs the UCB, LDP-UCB-B or LDP-UCB-L of Ren, Zhou, Liu and Shroff's public code (DPclass.py,
unmodified; not part of this repository) on their 'Bern' instance and prints, per episode, the
pseudo-regret at T computed from the final pull counts (their counts start at 1: one phantom pull
per arm, which is subtracted) and their own realised regret. docs/sim.md compares the means with
the ren2020 preset of `ldpb sim`.

    scripts/rzls20_compare.py DIR {none|Bernoulli|Laplace} EPSILON EPISODES [FIRST_SEED]

DIR holds their DPclass.py. Episode i seeds numpy with FIRST_SEED + i. matplotlib, which
DPclass.py imports for its plots, is replaced by an empty module. Needs numpy (python3-numpy)."""
import sys
import types

if len(sys.argv) not in (5, 6):
    sys.exit(__doc__)
sys.path.insert(0, sys.argv[1])
mpl = types.ModuleType("matplotlib")
mpl.pyplot = types.ModuleType("matplotlib.pyplot")
sys.modules["matplotlib"] = mpl
sys.modules["matplotlib.pyplot"] = mpl.pyplot

import numpy as np  # noqa: E402
from DPclass import ucb_bandit  # noqa: E402

kind = None if sys.argv[2] == "none" else sys.argv[2]
eps = float(sys.argv[3])
episodes = int(sys.argv[4])
first = int(sys.argv[5]) if len(sys.argv) == 6 else 0
mu = np.hstack([0.9 * np.ones(1), 0.8 * np.ones(5), 0.7 * np.ones(5), 0.6 * np.ones(5),
                0.5 * np.ones(4)])  # main.py's mu_array
gap = mu.max() - mu
T = 100000
total = 0.0
for i in range(first, first + episodes):
    np.random.seed(i)
    b = ucb_bandit(len(mu), T, mu, eps, kind)
    b.reset()
    b.run()
    pulls = b.k_n - 1
    assert pulls.sum() == T
    pseudo = float((pulls * gap).sum())
    total += pseudo
    print(f"episode {i}: pseudo-regret {pseudo:.1f}, realised regret {float(b.total_regret[0]):.1f}",
          flush=True)
print(f"mean pseudo-regret over {episodes} episodes: {total / episodes:.1f}")
