"""Simulations from Python against `ldpb sim`: the same options and seed give regret.csv's
numbers; thread counts do not matter; errors; the DataFrame and plot helpers."""

import csv
import os

import numpy as np
import pytest

import ldpb
from ldpb import _lib
from conftest import Trap, run_ldpb


def cli_regret(tmp_path, *args):
    out = tmp_path / "out"
    run_ldpb("sim", *args, "--out", str(out), "--no-plots", "--quiet", "--threads", "2")
    with open(out / "regret.csv") as f:
        return list(csv.DictReader(f))


def check_equal_to_csv(r, rows):
    n = len(r.t)
    assert len(rows) == len(r.configs) * n
    for c, cf in enumerate(r.configs):
        for j in range(n):
            row = rows[c * n + j]
            assert (row["preset"], row["algorithm"], row["mechanism"], row["epsilon"]) == \
                (cf.preset, cf.algorithm, cf.mechanism, cf.epsilon)
            assert int(row["k"]) == cf.k and int(row["t"]) == int(r.t[j])
            assert int(row["trials"]) == r.trials
            # regret.csv prints %.6g: the same text from the same double
            assert row["mean_regret"] == "%.6g" % r.mean[c, j]
            assert row["ci95_low"] == "%.6g" % r.ci_low[c, j]
            assert row["ci95_high"] == "%.6g" % r.ci_high[c, j]


def test_preset_equals_cli(tmp_path):
    rows = cli_regret(tmp_path, "--preset", "sajed2019-c2", "--trials", "3", "--horizon",
                      "20000", "--seed", "py")
    r = ldpb.simulate("sajed2019-c2", trials=3, horizon=20000, seed="py", threads=1)
    check_equal_to_csv(r, rows)


def test_shariff2018_equals_cli(tmp_path):
    rows = cli_regret(tmp_path, "--preset", "shariff2018", "--trials", "2", "--horizon", "3000",
                      "--seed", "py")
    r = ldpb.simulate("shariff2018", trials=2, horizon=3000, seed="py", threads=1)
    check_equal_to_csv(r, rows)
    assert [c.algorithm for c in r.configs[:4]] == ["linucb", "jdp-linucb-wishart",
                                                   "jdp-linucb-gaussian", "ldp-linucb-gaussian"]
    assert r.configs[0].model == "nonprivate" and r.configs[3].model == "local"
    assert r.configs[0].epsilon_value == float("inf") and r.configs[1].epsilon_value == 1.0
    assert r.regret.shape == (len(r.configs), 2, len(r.t))
    b = ldpb.simulate("shariff2018", trials=2, horizon=3000, seed="py", threads=2)
    np.testing.assert_array_equal(r.regret, b.regret)
    with pytest.raises(ldpb.InvalidArgument, match="k does not apply to preset shariff2018"):
        ldpb.simulate("shariff2018", k=3)


def test_sajed2019_nas_table_equals_cli(tmp_path):
    out = tmp_path / "nas"
    run_ldpb("sim", "--preset", "sajed2019-nas", "--trials", "30", "--gaps", "0.4,0.8",
             "--epsilons", "0.5,1", "--seed", "py", "--out", str(out), "--no-plots", "--quiet",
             "--threads", "2")
    with open(out / "stopping.csv") as f:
        want = f.read()
    t = ldpb.simulate("sajed2019-nas", trials=30, gaps=[0.4, 0.8], epsilons=[0.5, 1], seed="py",
                      threads=1)
    assert isinstance(t, ldpb.SimTable) and t.name == "stopping.csv"
    assert t.csv == want
    assert len(t) == 2 * 2 * 2 and t.header[:4] == ["preset", "algorithm", "epsilon", "gap"]
    assert t["mean_samples"].dtype == np.float64 and (t["mean_samples"] > 0).all()
    assert set(t["algorithm"]) == {"dp-nas", "dp-exp-nas"}
    with pytest.raises(ldpb.InvalidArgument, match="horizon does not apply"):
        ldpb.simulate("sajed2019-nas", horizon=100)


def test_custom_instance_equals_cli(tmp_path):
    rows = cli_regret(tmp_path, "--means", "0.9,0.8,0.5", "--algorithms",
                      "ucb1,ldp-ts-b,ldp-ucb-l,dp-se,exp3", "--mechanisms", "linear,laplace",
                      "--epsilons", "0.5,2", "--horizon", "5000", "--trials", "4")
    r = ldpb.simulate(means=[0.9, 0.8, 0.5],
                      algorithms=["ucb1", "ldp-ts-b", "ldp-ucb-l", "dp-se", "exp3"],
                      mechanisms="linear,laplace", epsilons=[0.5, 2], horizon=5000, trials=4)
    check_equal_to_csv(r, rows)
    assert r.regret.shape == (len(r.configs), 4, len(r.t))
    np.testing.assert_allclose(r.mean, r.regret.mean(axis=1), rtol=1e-12, atol=1e-12)
    assert r.t[-1] == 5000 and r.horizon == 5000


def test_threads_do_not_change_results():
    a = ldpb.simulate("tossou2017-stochastic", trials=3, horizon=3000, threads=1)
    b = ldpb.simulate("tossou2017-stochastic", trials=3, horizon=3000, threads=3)
    np.testing.assert_array_equal(a.regret, b.regret)
    c = ldpb.simulate("tossou2017-stochastic", trials=3, horizon=3000, seed="2", threads=1)
    assert not np.array_equal(a.regret, c.regret)


def test_progress_callback():
    seen = []
    ldpb.simulate(means=[0.9, 0.1], algorithms="ts", horizon=200000, trials=4, threads=1,
                  progress=seen.append)
    assert all(0.0 <= s <= 1.0 for s in seen)


def test_presets_listed():
    names = ldpb.presets()
    assert "jiang2023" in names and "sajed2019-nas" in names
    assert ldpb.preset_runnable("jiang2023") and not ldpb.preset_runnable("smith2013-bandit")
    assert ldpb.preset_runnable("shariff2018") and ldpb.preset_runnable("sajed2019-nas")


def test_errors():
    with pytest.raises(ldpb.InvalidArgument, match="unknown preset 'nope'"):
        ldpb.simulate("nope")
    with pytest.raises(ldpb.NotSupported, match="ldpb sim --preset smith2013-bandit"):
        ldpb.simulate("smith2013-bandit")
    with pytest.raises(ldpb.InvalidArgument, match="gaps applies to preset sajed2019-nas only"):
        ldpb.simulate("jiang2023", gaps=[0.1])
    with pytest.raises(ldpb.LdpbError) as e:
        ldpb.simulate(means=[0.9, 0.5], algorithms="ucb1", horizon=0)
    assert e.value.detail
    with pytest.raises(ldpb.LdpbError, match="nopolicy"):
        ldpb.simulate(means=[0.9, 0.5], algorithms="nopolicy")


def test_bad_arguments_raise_before_any_c_call(monkeypatch):
    monkeypatch.setattr(_lib, "_libs", {"client": Trap(), "sim": Trap()})
    with pytest.raises(TypeError, match="unknown option 'horizn'"):
        ldpb.simulate("jiang2023", horizn=10)
    with pytest.raises(ldpb.InvalidArgument, match="finite"):
        ldpb.simulate(means=[0.5, float("nan")], algorithms="ucb1")
    with pytest.raises(TypeError):
        ldpb.simulate(means=[0.5, object()], algorithms="ucb1")
    with pytest.raises(ldpb.OutOfRange, match="threads"):
        ldpb.simulate("jiang2023", threads=0)
    with pytest.raises(ldpb.InvalidArgument, match="seed"):
        ldpb.simulate("jiang2023", seed="")


def test_dataframe_or_clear_import_error():
    r = ldpb.simulate(means=[0.9, 0.5], algorithms="ucb1", horizon=1000, trials=2)
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="needs pandas"):
            r.to_dataframe()
        return
    df = r.to_dataframe()
    assert list(df.columns) == ["preset", "algorithm", "mechanism", "epsilon", "k", "t",
                                "mean_regret", "ci95_low", "ci95_high", "trials"]
    assert len(df) == len(r.t)


def test_plot_or_clear_import_error(tmp_path):
    r = ldpb.simulate(means=[0.9, 0.5], algorithms="ucb1,ts", horizon=1000, trials=2)
    try:
        import matplotlib
        matplotlib.use("Agg")
    except ImportError:
        with pytest.raises(ImportError, match="needs matplotlib"):
            r.plot()
        return
    ax = r.plot()
    ax.figure.savefig(os.path.join(tmp_path, "p.png"))
    assert len(ax.lines) == 2
