#!/usr/bin/env python3
"""numpy twin of bench_linucb: the round of LinUCB and JDP LinUCB at d = 10, K = 20.

The same algorithm as aggregator/src/linucb.c, written the way one would in numpy: per round
the released d x d matrix is built from the exact (d+1)x(d+1) sum and the m noise slots,
factorised with np.linalg.cholesky, theta and the K quadratic forms solved against the factor,
beta_t from the log-determinant (Shariff & Sheffet 2018, Prop. 4); observe adds the outer product
and redraws the noise slot of every tree level that changes (Wishart by the Bartlett
decomposition, or the symmetric Gaussian). Decision sets come from a pool of 256 pre-drawn rounds,
cycled. Figures: T rounds over the thread's CPU time, median of three runs, each at least
--seconds CPU seconds; --tsv prints the labels bench_linucb prints.
"""
import argparse
import math
import time

import numpy as np

D, K, POOL, HORIZON = 10, 20, 256, 1000000


def constants(variant, d=D, n=HORIZON, eps=1.0, delta=0.1, L=1.0, rho=1.0):
    alpha = 1.0 / n
    m = 1 + (n - 1).bit_length()
    lt = math.sqrt(L * L + 1.0)
    lt2 = lt * lt
    c = dict(m=m, alpha=alpha, lt=lt)
    if variant == "linucb":
        c.update(shift=rho, rho_min=rho, rho_max=rho, gamma=0.0)
    elif variant == "jdp-wishart":
        k = d + 1 + math.ceil(224 * m * math.log(8 * m / delta) * math.log(2 / delta) / eps**2)
        smk = math.sqrt(m * k)
        a8 = math.sqrt(d) + math.sqrt(2 * math.log(8 * n / alpha))
        a2 = math.sqrt(d) + math.sqrt(2 * math.log(2 * n / alpha))
        shift = lt2 * (smk - a8) ** 2 - 4 * lt2 * smk * a8
        c.update(k=k, shift=-shift, rho_min=4 * lt2 * smk * a8, rho_max=8 * lt2 * smk * a8,
                 gamma=lt * math.sqrt(smk * a2))
    else:
        s = math.sqrt(16 * m * lt2 * lt2 * math.log(4 / delta) ** 2 / eps**2)
        l2n = math.log(2 * n / alpha)
        ups = s * math.sqrt(2 * m) * (4 * math.sqrt(d) + 2 * l2n)
        c.update(s=s, shift=2 * ups, rho_min=ups, rho_max=3 * ups,
                 gamma=math.sqrt(1 / ups) * math.sqrt(m) * s * (math.sqrt(d) + math.sqrt(2 * l2n)))
    return c


def draw_node(variant, c, rng):
    p = D + 1
    if variant == "jdp-wishart":
        A = np.tril(rng.standard_normal((p, p)), -1)
        A[np.diag_indices(p)] = np.sqrt(rng.chisquare(c["k"] - np.arange(p)))
        return c["lt"] ** 2 * (A @ A.T)
    Z = rng.standard_normal((p, p)) * c["s"]
    return (Z + Z.T) / math.sqrt(2.0)


def run(variant, T, pool_x, pool_y):
    rng = np.random.default_rng(1)
    c = constants(variant)
    p, m = D + 1, c["m"]
    M = np.zeros((p, p))
    noisy = variant != "linucb"
    slots = np.array([draw_node(variant, c, rng) for _ in range(m)]) if noisy else None
    nsum = slots.sum(axis=0) if noisy else np.zeros((p, p))
    eye = np.eye(D)
    c0, w0 = time.thread_time(), time.perf_counter()
    for t in range(T):
        X = pool_x[t % POOL]
        R = M + nsum
        V = R[:D, :D] + c["shift"] * eye
        u = R[:D, D]
        Lf = np.linalg.cholesky(V)
        W = np.linalg.solve(Lf, np.column_stack((u, X.T)))
        theta = np.linalg.solve(Lf.T, W[:, 0])
        q = np.sqrt((W[:, 1:] ** 2).sum(axis=0))
        logdet = 2.0 * np.log(np.diag(Lf)).sum()
        arg = 2 * math.log(2 / c["alpha"]) + logdet - D * math.log(c["rho_min"])
        beta = math.sqrt(max(arg, 0.0)) + math.sqrt(c["rho_max"]) + c["gamma"]
        a = int(np.argmax(X @ theta + beta * q))
        v = np.append(X[a], pool_y[t % POOL][a])
        M += np.outer(v, v)
        if noisy:
            changed = t ^ (t + 1)
            for lvl in range(m):
                if (changed >> lvl) & 1:
                    slots[lvl] = draw_node(variant, c, rng)
            nsum = slots.sum(axis=0)
    return time.thread_time() - c0, time.perf_counter() - w0


def measure(variant, min_s, pool_x, pool_y):
    T = 64
    while True:
        s = run(variant, T, pool_x, pool_y)[0]
        if s >= 0.2 * min_s:
            break
        T *= 2
    T = math.ceil(T * 1.2 * min_s / s)
    secs = [run(variant, T, pool_x, pool_y) for _ in range(3)]
    rates = sorted(T / cs for cs, _ in secs)
    wall = sorted(T / w for _, w in secs)[1]
    return rates, wall, T


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tsv", action="store_true")
    ap.add_argument("--seconds", type=float, default=1.0)
    a = ap.parse_args()
    rng = np.random.default_rng(42)
    X = rng.standard_normal((POOL, K, D))
    X /= np.linalg.norm(X, axis=2, keepdims=True)
    theta = rng.standard_normal(D)
    theta /= np.linalg.norm(theta)
    pool_y = np.where(rng.random((POOL, K)) < 0.5 * (1 + X @ theta), 1.0, -1.0)
    print("# numpy %s" % np.__version__)
    if a.tsv:
        print("label\td\tk\trounds_per_cpu_s\tmin\tmax\twall_rounds_per_s\tT")
    for variant in ("linucb", "jdp-wishart", "jdp-gaussian"):
        rates, wall, T = measure(variant, a.seconds, X, pool_y)
        if a.tsv:
            print("%s\t%d\t%d\t%.0f\t%.0f\t%.0f\t%.0f\t%d" % (variant, D, K, rates[1], rates[0],
                                                            rates[2], wall, T))
        else:
            print("%-14s d=%d K=%d %10.0f rounds/cpu-s (T=%d)" % (variant, D, K, rates[1], T))


if __name__ == "__main__":
    main()
