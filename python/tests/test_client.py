"""The client from Python against a real ldpb-aggregator (an ldp-ts-b daemon, linear
mechanism, epsilon 1, 3 arms): assign, report, report_and_assign, queue and flush, status, the
ledger on disk, and errors mapped from ldpb_err with the library's detail message."""

import os

import pytest

import ldpb
from ldpb import _lib
from conftest import Trap, run_ldpb


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
