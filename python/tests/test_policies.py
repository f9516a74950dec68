"""Policies step by step from Python: every policy of the engine, choose/observe, state
save/restore, determinism under a seed, and errors."""

import numpy as np
import pytest

import ldpb
from ldpb import _lib
from conftest import Trap

# Parameters under which each policy of the registry runs 300 rounds on 4 arms.
PARAMS = {"horizon": 300, "epsilon": 1.0}


def bernoulli_env(k, seed):
    rng = np.random.default_rng(seed)
    means = np.linspace(0.8, 0.2, k)
    return lambda arm: float(rng.uniform() < means[arm])


def observation(policy, mech, reward, rng):
    """What the policy observes: the privatized report for a local policy."""
    if policy.model == "local":
        return float(mech.privatize([reward], rng)[0])
    return reward


def test_registry():
    names = dict(ldpb.policies())
    for n in ("ucb1", "ts", "se", "ldp-ts-b", "ldp-ucb-l", "dp-ucb", "dp-se", "exp3",
              "dp-exp3-lap", "ldp-exp3-lap", "exp3-tau"):
        assert n in names
    assert names["dp-se"] == "central" and names["ldp-ts-b"] == "local"


@pytest.mark.parametrize("name", ["ucb1", "ts", "se", "ldp-ts-b", "ldp-ucb-b", "ldp-ucb-l", "ldp-se", "dp-ucb",
                          "dp-ucb-bound", "dp-se", "exp3", "dp-exp3-lap", "ldp-exp3-lap",
                          "exp3-tau", "dp-se-doubling"])
def test_every_policy_runs_saves_and_restores(name):
    mech_name = "laplace" if name in ("ldp-ucb-l", "ldp-exp3-lap") else "linear"
    kw = dict(PARAMS)
    if dict(ldpb.policies())[name] == "local":
        kw["mechanism"] = mech_name
    if name == "dp-se-doubling":
        kw["horizon"] = 0
    p = ldpb.Policy(name, 4, seed="pol", **kw)
    assert p.name == name and p.k == 4
    mech = ldpb.Mechanism(mech_name, 1.0)
    rng = ldpb.Rng.seeded("env")
    env = bernoulli_env(4, 1)
    for _ in range(150):
        arm = p.choose()
        assert 0 <= arm < 4
        p.observe(arm, observation(p, mech, env(arm), rng))
    state = p.save()
    q = ldpb.Policy(name, 4, seed="other", **kw)
    q.restore(state)
    assert q.save() == state
    assert [a.pulls for a in q.arms()] == [a.pulls for a in p.arms()]
    assert int(p.pulls().sum()) == 150
    with pytest.raises(ldpb.Corrupt):
        q.restore(state[: len(state) // 2])
    with pytest.raises(ldpb.Corrupt):
        q.restore(b"\xff" * len(state))


def test_same_seed_same_trajectory():
    def run(seed):
        p = ldpb.Policy("ts", 5, seed=seed)
        env = bernoulli_env(5, 3)
        out = []
        for _ in range(500):
            a = p.choose()
            p.observe(a, env(a))
            out.append(a)
        return out
    assert run("a") == run("a")
    assert run("a") != run("b")  # Thompson draws differ: equal 500-step paths are negligible


def test_ucb1_learns():
    p = ldpb.Policy("ucb1", 3, seed="l")
    env = bernoulli_env(3, 5)  # means 0.8, 0.5, 0.2
    for _ in range(3000):
        a = p.choose()
        p.observe(a, env(a))
    pulls = p.pulls()
    assert pulls[0] > pulls[1] > pulls[2]
    assert abs(p.arms()[0].estimate - 0.8) < 0.05


def test_propensity():
    p = ldpb.Policy("exp3", 4, horizon=100, seed="e")
    a = p.choose()
    assert 0 < p.propensity <= 1
    p.observe(a, 1.0, propensity=p.propensity)
    u = ldpb.Policy("ucb1", 4)
    with pytest.raises((ldpb.NotSupported, ldpb.StateError)):
        u.propensity


def test_errors_from_c():
    with pytest.raises(ldpb.InvalidArgument, match="unknown policy 'nope'"):
        ldpb.Policy("nope", 3)
    with pytest.raises(ldpb.OutOfRange) as e:
        ldpb.Policy("ucb1", 1)
    assert e.value.detail  # the policy's own message
    with pytest.raises(ldpb.InvalidArgument, match="dp-ucb: needs the horizon T"):
        ldpb.Policy("dp-ucb", 3, epsilon=1.0)
    p = ldpb.Policy("ldp-ts-b", 3, mechanism="linear", epsilon=1.0)
    with pytest.raises(ldpb.InvalidArgument):
        p.observe(0, 0.5)  # the linear mechanism reports bits only: the C check refuses it


def test_bad_arguments_raise_before_any_c_call(monkeypatch):
    p = ldpb.Policy("ucb1", 3)
    saved = dict(_lib._libs)
    monkeypatch.setattr(_lib, "_libs", {"client": Trap(), "sim": Trap()})
    with pytest.raises(ldpb.OutOfRange, match="arm 3 outside"):
        p.observe(3, 1.0)
    with pytest.raises(ldpb.InvalidArgument, match="finite"):
        p.observe(0, float("nan"))
    with pytest.raises(TypeError):
        p.observe(0.5, 1.0)
    with pytest.raises(ldpb.OutOfRange, match="propensity"):
        p.observe(0, 1.0, propensity=0.0)
    with pytest.raises(TypeError, match="unknown parameter 'epsilom'"):
        ldpb.Policy("ucb1", 3, epsilom=1.0)
    with pytest.raises(ldpb.InvalidArgument, match="unknown mechanism"):
        ldpb.Policy("ldp-ts-b", 3, mechanism="gauss")
    with pytest.raises(TypeError):
        p.restore("text")
    monkeypatch.setattr(_lib, "_libs", saved)
    p.close()
    with pytest.raises(ValueError, match="closed"):
        p.choose()
