"""Nothing leaks: loops of 1e5 calls through each kind of handle keep the resident memory flat.

Each loop runs 1e4 warm-up calls, reads VmRSS, runs 1e5 more and reads it again; a leak of even
64 bytes per call would add 6.4 MB, so the bound of 2 MB separates a leak from allocator noise."""

import gc

import numpy as np

import ldpb

N = 100_000
WARMUP = 10_000
BOUND = 2 * 1024 * 1024


def rss() -> int:
    gc.collect()
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def flat(step):
    for i in range(WARMUP):
        step(i)
    before = rss()
    for i in range(N):
        step(i)
    grown = rss() - before
    assert grown < BOUND, f"resident memory grew by {grown} bytes over {N} calls"


def test_privatize_loop():
    m = ldpb.Mechanism("laplace", 1.0)
    rng = ldpb.Rng.seeded("leak")
    x = np.linspace(0, 1, 16)
    flat(lambda i: m.privatize(x, rng))


def test_mechanism_and_rng_handles():
    def step(i):
        m = ldpb.Mechanism("quadratic", 1.0, kappa=0.25)
        r = ldpb.Rng() if i % 2 else ldpb.Rng.seeded("h")
        m.privatize([0.5], r)
        r.close()
        m.close()
    flat(step)


def test_errors_do_not_leak():
    m = ldpb.Mechanism("linear", 1.0)

    def step(i):
        try:
            ldpb.Mechanism("exponential", 1.0, lam=1e6)  # refused in C
        except ldpb.OutOfRange:
            pass
        try:
            m.privatize([float("nan")])
        except ldpb.InvalidArgument:
            pass
    flat(step)


def test_policy_loop():
    p = ldpb.Policy("ldp-ts-b", 5, mechanism="linear", seed="leak")

    def step(i):
        a = p.choose()
        p.observe(a, float(i & 1))
        if i % 1000 == 0:
            p.restore(p.save())
    flat(step)


def test_policy_handles():
    def step(i):
        with ldpb.Policy("dp-se", 4, horizon=1000, seed="h") as p:
            p.observe(p.choose(), 1.0)
    flat(step)


def test_contextual_policy_loop():
    p = ldpb.ContextualPolicy("ldp-linucb-gaussian", d=3, horizon=N + WARMUP, seed="leak")
    x = np.linspace(-0.5, 0.5, 12).reshape(4, 3)

    def step(i):
        a = p.choose(x)
        p.observe(x[a], float(i & 1))
        if i % 1000 == 0:
            p.restore(p.save())
    flat(step)


def test_contextual_policy_handles():
    x = np.linspace(-0.5, 0.5, 12).reshape(4, 3)

    def step(i):
        with ldpb.ContextualPolicy("jdp-linucb-gaussian", d=3, horizon=100, seed="h") as p:
            p.observe(x[p.choose(x)], 1.0)
    flat(step)
