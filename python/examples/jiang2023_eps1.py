#!/usr/bin/env python3
"""Reproduces, from Python, the figure results/jiang2023/plots/jiang2023-eps1: mean cumulative
regret against t of every algorithm of the jiang2023 preset at epsilon 1 (20 arms, mixed laws;
LDP Thompson Sampling and UCB with the linear, quadratic and exponential mechanisms, and the
non-private TS and UCB1), from the same simulation `ldpb sim --preset jiang2023 --seed 1` runs.

At the preset's scale (50 trials, T = 1e5; the default) the curves are the numbers of
results/jiang2023/regret.csv, which --check compares line by line. Writes jiang2023-eps1.png
with matplotlib when it is installed, else prints the final regrets only.

    LDPB_LIBRARY_PATH=build/rel python3 python/examples/jiang2023_eps1.py [--check]
        [--trials N] [--horizon T] [--out FILE.png]
"""

import argparse
import csv
import os
import sys

import numpy as np

import ldpb

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "..", "..", "results", "jiang2023", "regret.csv")


def check(r: ldpb.SimResult, eps_rows: list) -> int:
    """Compares the run's eps = 1 curves with regret.csv's rows: the same %.6g texts."""
    by_key = {(row["algorithm"], row["mechanism"], row["epsilon"], int(row["t"])): row
              for row in eps_rows}
    diffs = 0
    for c, cf in enumerate(r.configs):
        for j, t in enumerate(r.t):
            row = by_key.get((cf.algorithm, cf.mechanism, cf.epsilon, int(t)))
            if row is None or row["mean_regret"] != "%.6g" % r.mean[c, j]:
                diffs += 1
    return diffs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=None, help="default: the preset's 50")
    ap.add_argument("--horizon", type=int, default=None, help="default: the preset's 1e5")
    ap.add_argument("--check", action="store_true",
                    help="compare with results/jiang2023/regret.csv (preset scale only)")
    ap.add_argument("--out", default="jiang2023-eps1.png")
    a = ap.parse_args()

    def progress(done: float) -> None:
        print(f"\r{100 * done:5.1f}%", end="", file=sys.stderr, flush=True)

    r = ldpb.simulate("jiang2023", seed="1", trials=a.trials, horizon=a.horizon,
                      progress=progress)
    print(file=sys.stderr)
    at1 = [c for c, cf in enumerate(r.configs) if cf.epsilon in ("1", "inf")]
    print(f"jiang2023: {r.trials} trials, T = {r.horizon}, {r.seconds:.1f} s")
    print(f"{'configuration':<36} {'regret at T':>12} {'95% interval':>24}")
    for c in at1:
        print(f"{r.label(c):<36} {r.mean[c, -1]:>12.1f} "
              f"[{r.ci_low[c, -1]:>10.1f}, {r.ci_high[c, -1]:>10.1f}]")

    rc = 0
    if a.check:
        if a.trials is not None or a.horizon is not None:
            print("--check needs the preset's scale (no --trials, --horizon)", file=sys.stderr)
            return 2
        with open(RESULTS) as f:
            rows = [row for row in csv.DictReader(f)]
        sub = ldpb.SimResult(r.t, [r.configs[c] for c in at1], r.regret[at1], r.mean[at1],
                             r.ci_low[at1], r.ci_high[at1], r.trials, r.horizon, r.seconds,
                             r.options)
        diffs = check(sub, [row for row in rows if row["epsilon"] in ("1", "inf")])
        print(f"check against {os.path.relpath(RESULTS)}: "
              f"{len(at1) * len(r.t) - diffs} of {len(at1) * len(r.t)} points equal")
        rc = 1 if diffs else 0

    try:
        import matplotlib
        matplotlib.use("Agg")
    except ImportError:
        print("matplotlib is not installed: no figure (Debian: python3-matplotlib)")
        return rc
    ax = r.plot(configs=at1)
    ax.set_title("jiang2023, epsilon 1: " + r.configs[0].title)
    ax.figure.savefig(a.out, dpi=120)
    print(f"wrote {a.out}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
