"""Contextual policies from Python against the C API: the same seed and inputs give the decisions
and final state of tests/python/ctxpolicy_trace (a C program over ldpb_ctxpolicy_*); save and
restore round-trip; the local policy's two steps equal observe(); bad arguments raise before any
C call."""

import os
import subprocess

import numpy as np
import pytest

import ldpb
from ldpb import _lib
from conftest import BUILD, Trap

NAMES = ["linucb", "jdp-linucb-wishart", "jdp-linucb-gaussian", "ldp-linucb-gaussian"]


def rounds(seed, T, k, d):
    """T decision sets of k unit-norm rows (shrunk by 1 - 1e-12 so that no rounding takes one
    past L = 1) and a reward in {-1, +1} for every action."""
    g = np.random.default_rng(seed)
    x = g.normal(size=(T, k, d))
    x /= np.linalg.norm(x, axis=2, keepdims=True) * (1 + 1e-12)
    y = np.where(g.uniform(size=(T, k)) < 0.5 + 0.4 * x[:, :, 0], 1.0, -1.0)
    return x, y


def c_trace(name, d, k, T, seed, x, y):
    path = os.path.join(BUILD, "tests", "python", "ctxpolicy_trace")
    if not os.access(path, os.X_OK):
        pytest.fail(f"ctxpolicy_trace not built at {path}")
    lines = [f"{name} {d} {k} {T} {seed}"]
    for t in range(T):
        lines.append(" ".join("%.17g" % v for v in x[t].ravel()) + " " +
                     " ".join("%.17g" % v for v in y[t]))
    p = subprocess.run([path], input="\n".join(lines) + "\n", capture_output=True, text=True,
                       check=False)
    assert p.returncode == 0, p.stderr
    out = p.stdout.split("\n")
    arms = [tuple(int(v) for v in line.split()) for line in out[:T]]
    assert out[T].startswith("state ")
    return arms, bytes.fromhex(out[T][6:])


@pytest.mark.parametrize("name", NAMES)
def test_decisions_and_state_equal_the_c_api(name):
    d, k, T = 3, 5, 120
    x, y = rounds(7, T, k, d)
    want_arms, want_state = c_trace(name, d, k, T, "trace-7", x, y)
    p = ldpb.ContextualPolicy(name, d=d, horizon=T, seed="trace-7")
    got = []
    for t in range(T):
        arm, ties = p.choose_with_ties(x[t])
        got.append((arm, ties))
        p.observe(x[t, arm], y[t, arm])
    assert got == want_arms
    assert p.save() == want_state
    assert p.rounds == T
    assert len({a for a, _ in got}) > 1  # not a constant answer


@pytest.mark.parametrize("name", NAMES)
def test_save_restore_round_trip(name):
    d, k, T = 2, 4, 60
    x, y = rounds(3, T, k, d)
    p = ldpb.ContextualPolicy(name, d=d, horizon=T + 10, seed="a")
    for t in range(T // 2):
        a = p.choose(x[t])
        p.observe(x[t, a], y[t, a])
    state = p.save()
    q = ldpb.ContextualPolicy(name, d=d, horizon=T + 10)
    q.restore(state)
    assert q.save() == state and q.rounds == T // 2
    if name == "linucb":
        # no generator in its decisions without ties: the restored policy goes on alike
        for t in range(T // 2, T):
            a, ties = p.choose_with_ties(x[t])
            assert ties == 1 and q.choose(x[t]) == a
            p.observe(x[t, a], y[t, a])
            q.observe(x[t, a], y[t, a])
        assert q.save() == p.save()
    with pytest.raises(ldpb.Corrupt):
        q.restore(state[: len(state) // 2])
    other = "linucb" if name != "linucb" else "jdp-linucb-gaussian"
    with pytest.raises(ldpb.Corrupt):
        ldpb.ContextualPolicy(other, d=d, horizon=T + 10).restore(state)


def test_local_steps_apart_equal_observe():
    d, k, T = 3, 4, 40
    x, y = rounds(5, T, k, d)
    p = ldpb.ContextualPolicy("ldp-linucb-gaussian", d=d, horizon=T, seed="s")
    q = ldpb.ContextualPolicy("ldp-linucb-gaussian", d=d, horizon=T, seed="s")
    assert p.model == "local" and p.report_len == (d + 1) * (d + 2) // 2
    for t in range(T):
        a = p.choose(x[t])
        assert q.choose(x[t]) == a
        p.observe(x[t, a], y[t, a])
        z = q.privatize(x[t, a], y[t, a])
        assert z.shape == (q.report_len,) and z.dtype == np.float64
        q.add_report(z)
    assert p.save() == q.save()
    with pytest.raises(ldpb.StateError):
        p.observe(x[0, 0], 1.0)
    r = ldpb.ContextualPolicy("ldp-linucb-gaussian", d=d, horizon=T)
    bad = q.privatize(x[0, 0], 1.0)
    bad[0] = 1e9
    with pytest.raises(ldpb.ProtocolError):
        r.add_report(bad)
    assert r.rounds == 0
    with pytest.raises(ldpb.InvalidArgument, match="only ldp-linucb-gaussian"):
        ldpb.ContextualPolicy("linucb", d=d, horizon=T).privatize(x[0, 0], 1.0)


def test_c_side_refusals():
    with pytest.raises(ldpb.InvalidArgument, match="unknown contextual policy 'ucb1'"):
        ldpb.ContextualPolicy("ucb1", d=2, horizon=10)
    with pytest.raises(ldpb.OutOfRange, match="delta"):
        ldpb.ContextualPolicy("jdp-linucb-gaussian", d=2, horizon=10, delta=1.5)
    p = ldpb.ContextualPolicy("linucb", d=2, horizon=10)
    with pytest.raises(ldpb.OutOfRange):
        p.choose([[2.0, 0.0], [0.0, 1.0]])  # a row longer than L = 1
    for name in NAMES:
        with pytest.raises(ldpb.OutOfRange):
            ldpb.ContextualPolicy(name, d=2, horizon=10).observe([2.0, 0.0], 1.0)
        with pytest.raises(ldpb.OutOfRange):  # L = 3 admits it
            ldpb.ContextualPolicy(name, d=2, horizon=10, L=3).observe([3.5, 0.0], 1.0)
        ldpb.ContextualPolicy(name, d=2, horizon=10, L=3).observe([2.0, 0.0], 1.0)
    assert [n for n, _ in ldpb.contextual_policies()] == NAMES


def test_bad_arguments_raise_before_any_c_call(monkeypatch):
    p = ldpb.ContextualPolicy("linucb", d=2, horizon=10)
    monkeypatch.setattr(_lib, "_libs", {"client": Trap(), "sim": Trap()})
    with pytest.raises(ldpb.InvalidArgument, match=r"shape \(n, 2\)"):
        p.choose(np.zeros((3, 3)))
    with pytest.raises(ldpb.InvalidArgument, match=r"shape \(n, 2\)"):
        p.choose(np.zeros(2))
    with pytest.raises(ldpb.OutOfRange, match="rows"):
        p.choose(np.zeros((0, 2)))
    with pytest.raises(ldpb.InvalidArgument, match="finite"):
        p.choose([[0.1, float("nan")], [0.0, 0.5]])
    with pytest.raises(TypeError):
        p.choose([["a", "b"]])
    with pytest.raises(ldpb.InvalidArgument, match=r"shape \(2,\)"):
        p.observe([0.1, 0.2, 0.3], 1.0)
    with pytest.raises(ldpb.InvalidArgument, match="finite"):
        p.observe([0.1, 0.2], float("inf"))
    with pytest.raises(TypeError):
        p.observe([0.1, 0.2], "1")
    with pytest.raises(TypeError):
        p.restore("text")
    with pytest.raises(ldpb.OutOfRange, match="d 0"):
        ldpb.ContextualPolicy("linucb", d=0, horizon=10)
    with pytest.raises(ldpb.OutOfRange, match="horizon"):
        ldpb.ContextualPolicy("linucb", d=2, horizon=0)
    with pytest.raises(TypeError, match="unknown parameter 'feature_norm'"):
        ldpb.ContextualPolicy("linucb", d=2, horizon=10, feature_norm=1.0)
    with pytest.raises(ldpb.InvalidArgument, match="finite"):
        ldpb.ContextualPolicy("linucb", d=2, horizon=10, rho=float("nan"))
    with pytest.raises(ldpb.InvalidArgument, match="name"):
        ldpb.ContextualPolicy("", d=2, horizon=10)
    monkeypatch.undo()
    p.close()
    with pytest.raises(ValueError, match="closed"):
        p.choose([[0.1, 0.2]])
