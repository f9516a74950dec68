#!/usr/bin/python3
"""The bench_sim loops in numpy, as a researcher would write them: one Python iteration per
round, vectorized over the arms within a round. Same environments (mixed-bernoulli K = 20, c1
K = 5), same algorithms (ucb1, ts, LDP twins, dp-ucb, dp-se, and EXP3 of Auer et al. 2002),
same timing rule as bench/sim.c:
T rounds over the thread's CPU time, the median of three runs of T rounds, every run at least
--seconds CPU seconds long (wall-clock rounds/s beside it). Prints figures only.

Run with Debian's interpreter (/usr/bin/python3, python3-numpy): the python3 first on PATH may be
a build without numpy. --tsv prints label, k, rounds/s, min, max, wall rounds/s, T per line."""
import argparse
import math
import os
import sys
import time

import numpy as np

# The means of the 20-arm JZL23/RZLS20 instance, every arm Bernoulli (RZLS20's 'Bern').
MIXED_BERNOULLI = np.array([0.9] + [0.8] * 5 + [0.7] * 5 + [0.6] * 5 + [0.5] * 4)
# Sajed & Sheffet 2019, sec. 5, C1 at K = 5: 0.75 then K - 1 arms of 0.7.
C1 = np.array([0.75] + [0.7] * 4)

EPS = 1.0
# The linear (CTB) mechanism at max span, docs/derivations.md 2: P(y = 1) = p0 + s x.
P0 = 1.0 / (math.exp(EPS) + 1.0)
S_CTB = (math.exp(EPS) - 1.0) / (math.exp(EPS) + 1.0)


def ts(T, mu, rng, ldp=False):
    K = len(mu)
    S = np.zeros(K)
    F = np.zeros(K)
    for t in range(T):
        theta = rng.beta(S + 1.0, F + 1.0)
        a = int(np.argmax(theta))
        x = rng.random() < mu[a]
        if ldp:
            x = rng.random() < P0 + S_CTB * x
        if x:
            S[a] += 1
        else:
            F[a] += 1
    return S + F


def ucb1(T, mu, rng, ldp=False):
    K = len(mu)
    n = np.zeros(K)
    s = np.zeros(K)
    for t in range(1, T + 1):
        if t <= K:
            a = t - 1
        else:
            idx = s / n + np.sqrt(2.0 * math.log(t) / n)
            a = int(np.argmax(idx))
        x = float(rng.random() < mu[a])
        if ldp:
            x = float(rng.random() < P0 + S_CTB * x)
        n[a] += 1
        s[a] += x
    return n


def dp_ucb(T, mu, rng):
    """Mishra-Thakurta private UCB: one binary tree per arm (leaf = the arm's pull count),
    Lap(Lv / eps) noise on each node when it completes, index widened by nu / n."""
    K = len(mu)
    Lv = T.bit_length()  # ceil(log2(T + 1))
    gamma = 1.0 / T
    nu = Lv * Lv / EPS * math.log(K * T * Lv / gamma)
    alpha = np.zeros((K, Lv))  # exact p-sums
    alpha_hat = np.zeros((K, Lv))  # noisy p-sums
    n = np.zeros(K, dtype=np.int64)
    shat = np.zeros(K)
    for t in range(1, T + 1):
        if t <= K:
            a = t - 1
        else:
            idx = shat / n + np.sqrt(2.0 * math.log(t) / n) + nu / n
            a = int(np.argmax(idx))
        x = float(rng.random() < mu[a])
        n[a] += 1
        c = int(n[a])
        i = (c & -c).bit_length() - 1  # lowest set bit of the arm's count
        alpha[a, i] = x + alpha[a, :i].sum()
        alpha[a, :i] = 0.0
        alpha_hat[a, :i] = 0.0
        alpha_hat[a, i] = alpha[a, i] + rng.laplace(0.0, Lv / EPS)
        shat[a] = alpha_hat[a].sum()
    return n


def dp_se(T, mu, rng):
    """Sajed-Sheffet DP successive elimination, one pull per round: round robin over S, fresh
    means every epoch, Lap(1/(eps r)) on each mean at the epoch end, then elimination."""
    K = len(mu)
    beta = 1.0 / T
    S = np.arange(K)
    n = np.zeros(K, dtype=np.int64)
    t = 0
    e = 0
    while t < T:
        e += 1
        delta = 2.0 ** -e
        l8 = math.log(8 * len(S) * e * e / beta)
        l4 = math.log(4 * len(S) * e * e / beta)
        R = max(32 * l8 / delta**2, 8 * l4 / (EPS * delta)) + 1
        r = math.ceil(R)
        sums = np.zeros(K)
        if len(S) == 1:  # the survivor is pulled for the rest of the run
            a = int(S[0])
            while t < T:
                x = rng.random() < mu[a]
                n[a] += 1
                t += 1
            return n
        for _ in range(r):
            for a in S:
                if t == T:
                    return n  # mid-epoch: no elimination
                x = rng.random() < mu[a]
                sums[a] += x
                n[a] += 1
                t += 1
        h = math.sqrt(l8 / (2 * R))
        c = l4 / (R * EPS)
        mut = sums[S] / r + rng.laplace(0.0, 1.0 / (EPS * r), size=len(S))
        S = S[mut.max() - mut <= 2 * h + 2 * c]
    return n


def exp3(T, mu, rng):
    """EXP3 (Auer et al. 2002) with the Cor. 3.2 gamma for T, in log space: the weights are
    exp(s - max s), the importance-weighted gain g / p of the played arm is added to its s."""
    K = len(mu)
    gamma = min(1.0, math.sqrt(K * math.log(K) / ((math.e - 1.0) * T)))
    eta = gamma / K
    s = np.zeros(K)
    n = np.zeros(K, dtype=np.int64)
    for t in range(T):
        w = np.exp(s - s.max())
        p = (1.0 - gamma) * w / w.sum() + gamma / K
        a = int(np.searchsorted(np.cumsum(p), rng.random() * p.sum(), side="right"))
        a = min(a, K - 1)
        x = float(rng.random() < mu[a])
        s[a] += eta * x / p[a]
        n[a] += 1
    return n


CASES = [
    ("ts", MIXED_BERNOULLI, lambda T, mu, rng: ts(T, mu, rng)),
    ("ucb1", MIXED_BERNOULLI, lambda T, mu, rng: ucb1(T, mu, rng)),
    ("ldp-ts-b", MIXED_BERNOULLI, lambda T, mu, rng: ts(T, mu, rng, ldp=True)),
    ("ldp-ucb-b", MIXED_BERNOULLI, lambda T, mu, rng: ucb1(T, mu, rng, ldp=True)),
    ("dp-ucb", C1, dp_ucb),
    ("dp-se", C1, dp_se),
    ("exp3", MIXED_BERNOULLI, exp3),
]


def run(fn, mu, T):
    """One run on fresh state: (CPU seconds of this thread, wall seconds)."""
    rng = np.random.default_rng(1)
    c0, w0 = time.thread_time(), time.perf_counter()
    fn(T, mu, rng)
    return time.thread_time() - c0, time.perf_counter() - w0


def measure(fn, mu, min_s):
    T = 1024
    while True:
        s = run(fn, mu, T)[0]
        if s >= 0.2 * min_s:
            break
        T *= 2
    T = math.ceil(T * 1.2 * min_s / s)
    for attempt in range(4):
        secs = [run(fn, mu, T) for _ in range(3)]
        shortest = min(c for c, _ in secs)
        if shortest >= min_s or attempt == 3:
            break
        T = math.ceil(T * 1.2 * min_s / shortest)
    rates = sorted(T / c for c, _ in secs)
    wall = sorted(T / w for _, w in secs)[1]
    return rates, wall, T


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tsv", action="store_true")
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--only")
    args = ap.parse_args()
    print(f"# numpy {np.__version__}, Python {sys.version.split()[0]} ({sys.executable}), "
          f"{os.cpu_count()} processors; load average {os.getloadavg()}")
    if args.tsv:
        print("label\tk\trounds_per_cpu_s\tmin\tmax\twall_rounds_per_s\tT")
    else:
        print(f"{'case':<10} {'K':>3} {'rounds/s':>10} {'(min - max)':>21} {'wall r/s':>10} "
              f"{'T':>9}")
    sys.stdout.flush()
    for label, mu, fn in CASES:
        if args.only and args.only != label:
            continue
        rates, wall, T = measure(fn, mu, args.seconds)
        if args.tsv:
            print(f"{label}\t{len(mu)}\t{rates[1]:.0f}\t{rates[0]:.0f}\t{rates[2]:.0f}\t"
                  f"{wall:.0f}\t{T}")
        else:
            print(f"{label:<10} {len(mu):>3} {rates[1]:>10.0f} ({rates[0]:>8.0f} - "
                  f"{rates[2]:>8.0f}) {wall:>10.0f} {T:>9}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
