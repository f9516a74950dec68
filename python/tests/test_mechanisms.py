"""Mechanisms, generators, de-biasing and the audit from Python, against the C side
(`ldpb privatize` and `ldpb audit` with the same seeds)."""

import math

import numpy as np
import pytest

import ldpb
from ldpb import _lib
from conftest import Trap as _Trap, run_ldpb

REWARDS = [0.0, 1.0, 0.25, 0.5, 0.75, 0.1, 0.9, -0.5, 1.5, 0.3333]


@pytest.mark.parametrize("mech", ldpb.MECHANISMS)
def test_privatize_equals_cli(mech):
    """The same seed and rewards give exactly `ldpb privatize --seed`'s outputs."""
    out = run_ldpb("privatize", "-m", mech, "-e", "0.8", "--seed", "py-test",
                   stdin="".join(f"{r!r}\n" for r in REWARDS))
    cli = np.array([float(x) for x in out.split()])
    py = ldpb.privatize(np.array(REWARDS), mech, 0.8, seed="py-test")
    assert py.dtype == np.float64 and py.shape == (len(REWARDS),)
    np.testing.assert_array_equal(py, cli)


def test_privatize_range_equals_cli():
    rewards = [1.0, 5.0, 3.0, 2.5, 0.0, 6.0]
    out = run_ldpb("privatize", "-m", "laplace", "-e", "2", "--seed", "r", "--range", "1,5",
                   stdin="".join(f"{r!r}\n" for r in rewards))
    py = ldpb.privatize(rewards, "laplace", 2.0, seed="r", range=(1, 5))
    np.testing.assert_array_equal(py, [float(x) for x in out.split()])


def test_kind_names_match_c():
    lib = _lib.client()
    for i, name in enumerate(ldpb.MECHANISMS, start=1):
        assert lib.ldpb_mech_kind_name(i).decode() == name


def test_batch_is_the_stream_of_single_draws():
    """One call over n values draws what calls over its pieces draw, in order."""
    m = ldpb.Mechanism("quadratic", 1.5, kappa=-0.3)
    x = np.linspace(-0.2, 1.2, 1001)
    a = m.privatize(x, ldpb.Rng.seeded("s"))
    r = ldpb.Rng.seeded("s")
    b = np.concatenate([m.privatize(x[:10], r), m.privatize(x[10:500], r),
                        m.privatize(x[500:], r)])
    np.testing.assert_array_equal(a, b)
    assert set(np.unique(a)) <= {0.0, 1.0}


def test_shapes_dtypes_and_out():
    m = ldpb.Mechanism("laplace", 1.0)
    x = np.arange(12, dtype=np.int32).reshape(3, 4) / 11
    y = m.privatize(x, ldpb.Rng.seeded("o"))
    assert y.shape == (3, 4)
    out = np.empty((3, 4))
    z = m.privatize(x, ldpb.Rng.seeded("o"), out=out)
    assert z is out
    np.testing.assert_array_equal(y, out)
    ints = m.privatize(np.array([0, 1, 1], dtype=np.uint8), ldpb.Rng.seeded("i"))
    np.testing.assert_array_equal(ints, m.privatize([0.0, 1.0, 1.0], ldpb.Rng.seeded("i")))
    assert m.privatize(np.array([])).shape == (0,)


def test_secure_by_default():
    """Without a seed two calls differ (Laplace outputs on a fine grid: a collision of 64 values
    has probability far below 1e-30)."""
    x = np.full(64, 0.5)
    a = ldpb.privatize(x, "laplace", 1.0)
    b = ldpb.privatize(x, "laplace", 1.0)
    assert not np.array_equal(a, b)
    assert repr(ldpb.Rng()) == "Rng(secure)"
    assert ldpb.Rng.seeded("x").is_seeded and not ldpb.Rng().is_seeded


def test_effective_epsilon_and_endpoints():
    for mech in ldpb.MECHANISMS:
        for eps in (0.1, 1.0, 4.0):
            m = ldpb.Mechanism(mech, eps)
            assert 0 < m.epsilon_effective <= eps
            assert m.epsilon == eps
    p0, p1 = ldpb.Mechanism("linear", 1.0).endpoints
    assert abs(p0 - 1 / (math.e + 1)) < 1e-15 and abs(p1 - math.e / (math.e + 1)) < 1e-15
    assert ldpb.Mechanism("laplace", 1.0).grid > 0


@pytest.mark.parametrize("mech", ["linear", "laplace"])
def test_debias_recovers_the_mean(mech):
    """De-biased mean of 2e5 reports within the library's 1 - 1e-9 radius of the truth
    (false-failure probability <= 1e-9 by the radius's own guarantee)."""
    rng = np.random.default_rng(7)
    x = rng.uniform(size=200_000)
    m = ldpb.Mechanism(mech, 1.0)
    y = m.privatize(x, ldpb.Rng.seeded("debias"))
    mu, exact = m.debias_mean(y.sum(), y.size)
    assert exact
    assert mu == m.debias(y)
    assert abs(mu - x.mean()) <= m.debias_radius(y.size, 1e-9)




def test_bad_arguments_raise_before_any_c_call(monkeypatch):
    m = ldpb.Mechanism("linear", 1.0)
    rng = ldpb.Rng.seeded("t")
    saved = dict(_lib._libs)
    monkeypatch.setattr(_lib, "_libs", {"client": _Trap(), "sim": _Trap()})
    with pytest.raises(TypeError, match="dtype"):
        m.privatize(np.array(["a", "b"]), rng)
    with pytest.raises(TypeError, match="dtype"):
        m.privatize(np.array([1 + 2j]), rng)
    with pytest.raises(TypeError, match="dtype"):
        m.privatize(np.array([True, False]), rng)
    with pytest.raises(TypeError, match="dtype"):
        m.privatize(np.array([0.5, None], dtype=object), rng)
    with pytest.raises(ldpb.InvalidArgument, match="element 2 is nan"):
        m.privatize([0.1, 0.2, float("nan")], rng)
    with pytest.raises(ldpb.InvalidArgument, match="element 0 is inf"):
        m.privatize([float("inf")], rng)
    with pytest.raises(TypeError, match="rng"):
        m.privatize([0.5], rng="secure")
    with pytest.raises(ldpb.OutOfRange, match="epsilon"):
        ldpb.Mechanism("linear", 0.0)
    with pytest.raises(ldpb.OutOfRange, match="epsilon"):
        ldpb.Mechanism("linear", 11.0)
    with pytest.raises(ldpb.InvalidArgument, match="epsilon must be finite"):
        ldpb.Mechanism("linear", float("nan"))
    with pytest.raises(ldpb.InvalidArgument, match="unknown mechanism 'gauss'"):
        ldpb.Mechanism("gauss", 1.0)
    with pytest.raises(ldpb.OutOfRange, match="kappa"):
        ldpb.Mechanism("quadratic", 1.0, kappa=2.0)
    with pytest.raises(ldpb.InvalidArgument, match="kappa applies only"):
        ldpb.Mechanism("linear", 1.0, kappa=0.2)
    with pytest.raises(ldpb.InvalidArgument, match="range"):
        ldpb.Mechanism("linear", 1.0, range=(1, 1))
    with pytest.raises(TypeError):
        ldpb.Mechanism("linear", "1")
    monkeypatch.setattr(_lib, "_libs", saved)
    # the generator was not touched by the refused calls
    assert rng.u64() == ldpb.Rng.seeded("t").u64()


def test_errors_map_from_c():
    """An error only the C library finds is raised as its class, with code and name."""
    with pytest.raises(ldpb.OutOfRange) as e:
        ldpb.Mechanism("exponential", 1.0, lam=1e6)  # no such mechanism at epsilon 1
    assert e.value.code == 3 and e.value.name == "LDPB_ERANGE"
    assert "Mechanism('exponential', 1.0)" in str(e.value)
    with pytest.raises(ldpb.OutOfRange):
        ldpb.Mechanism("laplace", 1e-9)  # refused by the C constructor, not in Python
    assert isinstance(e.value, ValueError)
    assert issubclass(ldpb.Timeout, TimeoutError)
    assert ldpb.errors.error_class(9) is ldpb.BudgetExceeded
    assert ldpb.errors.error_class(99) is ldpb.LdpbError


@pytest.mark.parametrize("mech,eps", [("linear", 1.0), ("laplace", 0.5), ("quadratic", 2.0)])
def test_audit_verdict_equals_cli(mech, eps):
    line = run_ldpb("audit", "-m", mech, "-e", repr(eps), "--seed", "py", "-n", "3000") \
        .strip().splitlines()[-1]
    r = ldpb.audit(mech, eps, seed="py", samples=3000)
    assert r.verdict == line
    assert r.passed == line.startswith("PASS")
    assert r.samples == 3000


def test_audit_errors():
    with pytest.raises(ldpb.OutOfRange, match="epsilon 20 outside"):
        ldpb.audit("linear", 20.0)
    with pytest.raises(ldpb.InvalidArgument, match="unknown mechanism"):
        ldpb.audit("gauss", 1.0)
    with pytest.raises(ldpb.OutOfRange, match="samples"):
        ldpb.audit("linear", 1.0, samples=5)
    with pytest.raises(ldpb.InvalidArgument, match="--kappa applies only"):
        ldpb.audit("linear", 1.0, kappa=0.1)
