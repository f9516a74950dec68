"""The client from Python against a real ldpb-aggregator (an ldp-ts-b daemon, linear
mechanism, epsilon 1, 3 arms): assign, report, report_and_assign, queue and flush, status, the
ledger on disk, errors mapped from ldpb_err with the library's detail message, the experiment=
keyword (the "default" experiment, and names checked before any C call); and the
contextual calls against a linucb daemon (assign with features, report_context) and an
ldp-linucb-gaussian one (assign_local, report_local)."""

import os

import numpy as np
import pytest

import ldpb
from ldpb import _lib
from conftest import Daemon, Trap, run_ldpb


def test_assign_report_status(daemon, tmp_path):
    ledger = tmp_path / "device.ledger"
    with ldpb.Client(daemon.url, daemon.pub, ledger=ledger, reward_range=(1, 5)) as c:
        a = c.assign()
        assert 0 <= a.arm < 3
        assert a.mechanism == "linear" and a.epsilon == 1.0
        assert 0 < a.propensity <= 1 and len(a.id) > 0
        c.report(a, 4.0)
        assert c.spent == 1.0
        nxt, acked = None, False
        for _ in range(5):
            nxt, acked = c.report_and_assign(c.assign(), 5.0)
            assert acked and nxt is not None
        st = c.status()
        assert st.policy == "ldp-ts-b" and st.model == "local"
        assert st.reports == 6 and len(st.arms) == 3
        assert sum(arm.pulls for arm in st.arms) == 6
        assert len(c.public_key) == 32
    assert os.path.exists(ledger)
    # the ledger survives: a new handle sees the spends
    with ldpb.Client(daemon.url, daemon.pub, ledger=ledger) as c2:
        assert c2.spent == 6.0


def test_native_transport(daemon):
    """The native dialer (transport="sp"): the same calls, the same counts; a name the library
    does not know is refused before any C call."""
    with ldpb.Client(daemon.url, daemon.pub, transport="sp") as c:
        before = c.status().reports
        c.report(c.assign(), 1.0)
        nxt, acked = c.report_and_assign(c.assign(), 0.0)
        assert acked and nxt is not None
        assert c.status().reports == before + 2
    with pytest.raises(ldpb.InvalidArgument):
        ldpb.Client(daemon.url, daemon.pub, transport="pigeon")


def test_queue_and_flush(daemon):
    with ldpb.Client(daemon.url, daemon.pub, queue=":memory:", seed="q") as c:
        for _ in range(10):
            c.queue_report(c.assign(), 1.0)
        assert c.queued == 10
        st = c.flush()
        assert st == ldpb.FlushStats(10, 0, 0, 0)
        assert c.queued == 0
        assert c.status().reports == 10


def test_budget_error_has_code_and_detail(daemon):
    with ldpb.Client(daemon.url, daemon.pub, epsilon_cap=0.5) as c:
        with pytest.raises(ldpb.BudgetExceeded) as e:
            c.assign()
    assert e.value.code == 9 and e.value.name == "LDPB_EBUDGET"
    assert "cap" in e.value.detail and e.value.detail in str(e.value)


def test_wrong_server_key(daemon, tmp_path):
    run_ldpb("keygen", "--out", str(tmp_path / "other"))
    with ldpb.Client(daemon.url, str(tmp_path / "other" / "aggregator.pub"), timeout_ms=300,
                     attempts=1) as c:
        with pytest.raises((ldpb.CryptoError, ldpb.Timeout)):
            c.assign()


def test_unreachable_and_closed(tmp_path):
    c = ldpb.Client(f"ipc://{tmp_path}/none.sock", b"\x01" * 32, timeout_ms=100, attempts=1)
    with pytest.raises(ldpb.Timeout) as e:
        c.status()
    assert "no answer" in e.value.detail
    c.close()
    c.close()
    with pytest.raises(ValueError, match="closed"):
        c.assign()


def test_bad_arguments(daemon, monkeypatch):
    with pytest.raises(ldpb.IOFailure):
        ldpb.Client(daemon.url, "/nonexistent/aggregator.pub")
    with ldpb.Client(daemon.url, daemon.pub) as c:
        a = c.assign()
        saved = dict(_lib._libs)
        monkeypatch.setattr(_lib, "_libs", {"client": Trap(), "sim": Trap()})
        with pytest.raises(ldpb.InvalidArgument, match="finite"):
            c.report(a, float("nan"))
        with pytest.raises(TypeError):
            c.report("assignment", 1.0)
        with pytest.raises(ldpb.OutOfRange, match="context"):
            c.assign(context=[0.0] * 257)
        with pytest.raises(ldpb.InvalidArgument, match="server_key"):
            ldpb.Client(daemon.url, b"short")
        with pytest.raises(ldpb.OutOfRange, match="epsilon_cap"):
            ldpb.Client(daemon.url, daemon.pub, epsilon_cap=0)
        with pytest.raises(ldpb.InvalidArgument, match="reward_range"):
            ldpb.Client(daemon.url, daemon.pub, reward_range=(2, 1))
        monkeypatch.setattr(_lib, "_libs", saved)
        c.report(a, 1.0)
        c.report(a, 1.0)  # a resend is answered as a duplicate, not counted twice
        assert c.status().reports == 1
        b = c.assign()
        b._c.id[0] ^= 0xFF  # an id the aggregator never issued
        with pytest.raises(ldpb.NotFound) as e:
            c.report(b, 1.0)
        assert e.value.code == 15 and e.value.detail


def test_experiment_keyword(daemon, monkeypatch):
    """experiment= on assign and status: "default" (or None) is today's request, with nothing on
    the wire, and the assignment and status say "default"; names that are not names, unknown
    operator ops and oversized settings fail before any C call."""
    with ldpb.Client(daemon.url, daemon.pub) as c:
        a = c.assign(experiment="default")
        assert a.experiment == "default" and "experiment='default'" in repr(a)
        c.report(a, 1.0)
        b = c.assign()
        assert b.experiment == "default"
        st = c.status(experiment="default")
        assert st.experiment == "default" and st.reports == 1
        assert c.status().experiment == "default"
        saved = dict(_lib._libs)
        monkeypatch.setattr(_lib, "_libs", {"client": Trap(), "sim": Trap()})
        for bad in ("", "Upper", "a b", "x" * 65, "caf\u00e9"):
            with pytest.raises(ldpb.InvalidArgument, match="experiment name"):
                c.assign(experiment=bad)
            with pytest.raises(ldpb.InvalidArgument, match="experiment name"):
                c.status(experiment=bad)
            with pytest.raises(ldpb.InvalidArgument, match="experiment name"):
                c.experiment("show", bad)
        with pytest.raises(TypeError):
            c.assign(experiment=3)
        with pytest.raises(ldpb.InvalidArgument, match="op"):
            c.experiment("drop", "e1")
        with pytest.raises(ldpb.OutOfRange, match="config"):
            c.experiment("create", "e1", "x" * 4097)
        monkeypatch.setattr(_lib, "_libs", saved)
        # the library's own argument checks, through the C call
        with pytest.raises(ldpb.InvalidArgument):
            c.experiment("list", "e1")
        with pytest.raises(ldpb.InvalidArgument):
            c.experiment("create", "e1")
    assert ldpb.NoExperiment.code == 19


def test_contextual_assign_and_report_context(tmp_path):
    d = Daemon(str(tmp_path), policy="linucb", arms=3,
               extra=("--mode", "nonprivate", "--allow-nonprivate", "--d", "2", "--horizon",
                      "1000"))
    try:
        x = np.array([[0.6, 0.0], [0.0, 0.8], [0.5, 0.5]])
        with ldpb.Client(d.url, d.pub, allow_raw=True) as c:
            for _ in range(4):
                a = c.assign(x)  # the (arms, d) features, sent row-major
                assert a.mechanism == "raw" and 0 <= a.arm < 3 and a.local_d == 0
                c.report_context(a, x[a.arm], 1.0 if a.arm == 1 else 0.0)
            a = c.assign(x.ravel())  # the flat form is the same request
            with pytest.raises(ldpb.NotFound) as e:
                c.report_context(a, x[a.arm] + 0.125, 1.0)  # not the row assigned
            assert e.value.detail
            st = c.status()
            assert st.policy == "linucb" and st.reports == 4
            with pytest.raises(ldpb.InvalidArgument, match="one-dimensional"):
                c.report_context(a, x, 1.0)
            with pytest.raises(ldpb.InvalidArgument, match="finite"):
                c.report_context(a, [0.1, float("nan")], 1.0)
    finally:
        assert d.stop() == 0


def test_local_contextual_mode(tmp_path):
    d = Daemon(str(tmp_path), policy="ldp-linucb-gaussian", arms=3,
               extra=("--mode", "local", "--d", "2", "--epsilon", "1", "--delta", "1e-6",
                      "--horizon", "1000"))
    try:
        x = np.array([[0.6, 0.0], [0.0, 0.8], [0.5, 0.5], [-0.7, 0.1]])
        with ldpb.Client(d.url, d.pub, seed="local", lifetime_delta=1e-3,
                         per_report_delta_cap=1e-5) as c:
            for i in range(3):
                a = c.assign_local(x)
                assert a.mechanism == "gaussian-stats" and 0 <= a.arm < 4
                assert a.local_d == 2 and a.local_delta == 1e-6
                assert a.local_feature_norm == 1.0 and a.local_reward_bound == 1.0
                assert 0 < a.propensity <= 1
                c.report_local(a, x[a.arm], 1.0)
            assert c.spent == 3.0
            st = c.status()
            assert st.policy == "ldp-linucb-gaussian" and st.model == "local"
            assert st.reports == 3
            with pytest.raises(ldpb.OutOfRange):
                c.assign_local([[2.0, 0.0], [0.0, 1.0]])  # a row longer than L = 1
            with pytest.raises(ldpb.InvalidArgument):
                c.assign_local(np.zeros((3, 5)))  # d other than the aggregator's
            a = c.assign_local(x)
            with pytest.raises(ldpb.InvalidArgument, match="x_chosen"):
                c.report_local(a, x, 1.0)
            with pytest.raises(ldpb.InvalidArgument):
                c.report(a, 1.0)  # local reports only go through report_local
        # a device without a delta budget cannot take part
        with ldpb.Client(d.url, d.pub) as c:
            with pytest.raises(ldpb.BudgetExceeded):
                c.assign_local(x)
    finally:
        assert d.stop() == 0


def test_contextual_calls_check_arguments_before_any_c_call(monkeypatch, tmp_path):
    monkeypatch.setattr(_lib, "_libs", {"client": Trap(), "sim": Trap()})
    c = ldpb.Client.__new__(ldpb.Client)
    c._h, c._rng = None, None
    with pytest.raises(ldpb.InvalidArgument, match=r"shape \(n, d\)"):
        c.assign_local(np.zeros(4))
    with pytest.raises(ldpb.InvalidArgument, match="finite"):
        c.assign_local([[0.1, float("inf")]])
    with pytest.raises(ldpb.OutOfRange, match="rows"):
        c.assign_local(np.zeros((4097, 2)))
    with pytest.raises(TypeError):
        c.report_local(object(), [0.1], 1.0)
    with pytest.raises(TypeError):
        c.report_context(object(), [0.1], 1.0)
    with pytest.raises(ldpb.OutOfRange, match="lifetime_delta"):
        ldpb.Client("ipc:///nowhere", bytes(32), lifetime_delta=2.0)
