"""The device side: :class:`Client` asks the aggregator for an arm, privatizes the reward on
the device through its privacy ledger, and reports it, sealed, over nanomsg.

A thin layer over ``ldpb/client.h`` (docs/client.md has the protocol and the rules): every
call is the C library's, the ledger is charged durably before a privatized value leaves, and a
failure raises the :mod:`ldpb.errors` class of its code, with the library's detail message.
"""

from __future__ import annotations

import ctypes
import os
from ctypes import byref, c_int, c_uint8, c_void_p
from typing import Any, List, NamedTuple, Optional, Sequence, Tuple, Union

from . import _check, _lib
from ._handle import Handle
from .errors import InvalidArgument, raise_for

PathLike = Union[str, "os.PathLike[str]"]
CONTEXT_MAX = 256
_FEATURES_MAX = 64  # report_context: LDPB_ERANGE beyond
_LOCAL_ACTIONS_MAX = 4096  # LDPB_CLIENT_LOCAL_ACTIONS_MAX
_LOCAL_D_MAX = 32  # LDPB_CTXSTAT_D_MAX
_EXPERIMENT_OPS = {"create": 1, "list": 2, "show": 3, "stop": 4}  # ldpb_experiment_op
_CONFIG_MAX = 4096  # LDPB_CLIENT_CONFIG_MAX


def _experiment(name: Optional[str]) -> Optional[bytes]:
    """An ``experiment=`` argument for the C calls: None stays None ("default"); a name is
    checked as the library checks it, so a bad one fails before any C call."""
    if name is None:
        return None
    if not isinstance(name, str):
        raise TypeError("experiment must be a str or None")
    b = name.encode()
    ok = 1 <= len(b) <= _lib.EXPERIMENT_NAME_MAX and all(
        ch in b"abcdefghijklmnopqrstuvwxyz0123456789._-" for ch in b)
    if not ok:
        raise InvalidArgument(f"{name!r} is not an experiment name (1 to "
                              f"{_lib.EXPERIMENT_NAME_MAX} bytes of a-z, 0-9, '.', '_', '-')")
    return b


class Assignment:
    """An assignment from the aggregator: which ``arm`` to use, and how its report will be
    privatized (``mechanism``, ``epsilon``, ``kappa``). Pass it back to :meth:`Client.report`.

    Attributes: arm, mechanism (name), epsilon, kappa, propensity, expires_at_ms,
    policy_version, id (bytes), experiment; for the local contextual mode
    (:meth:`Client.assign_local`) also local_d, local_delta, local_feature_norm,
    local_reward_bound.
    """

    __slots__ = ("_c",)

    def __init__(self, c: "_lib.AssignmentC") -> None:
        self._c = c

    @property
    def arm(self) -> int:
        """The variant to use."""
        return int(self._c.arm)

    @property
    def mechanism(self) -> str:
        """"linear", "quadratic", "exponential", "laplace", "raw" or "gaussian-stats"."""
        return _lib.client().ldpb_client_mech_name(self._c.mechanism).decode()

    @property
    def epsilon(self) -> float:
        """Per-report epsilon (0 for raw)."""
        return float(self._c.epsilon)

    @property
    def kappa(self) -> float:
        """The quadratic curvature (0 for the other mechanisms)."""
        return float(self._c.kappa)

    @property
    def propensity(self) -> float:
        """The probability with which the policy chose this arm."""
        return float(self._c.propensity)

    @property
    def expires_at_ms(self) -> int:
        """Expiry, ms since the Unix epoch on the aggregator's clock."""
        return int(self._c.expires_at_ms)

    @property
    def policy_version(self) -> int:
        """The policy version the aggregator sent (0 if none)."""
        return int(self._c.policy_version)

    @property
    def id(self) -> bytes:
        """The opaque assignment id."""
        return bytes(self._c.id[: self._c.id_len])

    @property
    def local_d(self) -> int:
        """Local contextual mode: the feature dimension of the model (0 otherwise)."""
        return int(self._c.local_d)

    @property
    def local_delta(self) -> float:
        """Local contextual mode: the delta each report spends (0 otherwise)."""
        return float(self._c.local_delta)

    @property
    def local_feature_norm(self) -> float:
        """Local contextual mode: the bound L on a feature row's norm (0 otherwise)."""
        return float(self._c.local_feature_norm)

    @property
    def local_reward_bound(self) -> float:
        """Local contextual mode: the bound B rewards are clipped to (0 otherwise)."""
        return float(self._c.local_reward_bound)

    @property
    def experiment(self) -> str:
        """The experiment the assignment was issued in ("default" unless one was named)."""
        return self._c.experiment.decode() or "default"

    def __repr__(self) -> str:
        return (f"Assignment(arm={self.arm}, mechanism={self.mechanism!r}, "
                f"epsilon={self.epsilon!r}, propensity={self.propensity!r}, "
                f"experiment={self.experiment!r})")


class FlushStats(NamedTuple):
    """What :meth:`Client.flush` did: reports acknowledged, acknowledged as duplicates, refused
    for good, and still queued."""
    acked: int
    duplicates: int
    refused: int
    left: int


class ArmStatus(NamedTuple):
    """One arm of the aggregator's status; None where the policy has no such value."""
    arm: int
    pulls: int
    estimate: Optional[float]
    ci_low: Optional[float]
    ci_high: Optional[float]
    active: Optional[bool]


class Status(NamedTuple):
    """The aggregator's status: its policy and model, reports and assignments counted, arms,
    and the experiment it is of ("default" from an aggregator that names none)."""
    policy: str
    model: str
    reports: int
    assignments: int
    arms: List[ArmStatus]
    experiment: str = "default"


class ExperimentInfo(NamedTuple):
    """One experiment as :meth:`Client.experiment` reports it (an absent value is "" or 0)."""
    name: str
    policy: str
    mode: str
    arms: int
    mechanism: str
    epsilon: float
    delta: float
    horizon: int
    reports: int
    assignments: int
    running: bool


def _context(context: Any) -> Tuple[Any, int, Any]:
    if context is None:
        return None, 0, None
    arr = _check.float_array(context, "context")
    if arr.ndim == 2:  # a contextual policy's (arms, d) features, sent row-major
        arr = arr.reshape(-1)
    if arr.ndim != 1:
        raise InvalidArgument("context must be one-dimensional, or (arms, d) features")
    if arr.size > CONTEXT_MAX:
        raise _check.OutOfRange(f"context has {arr.size} values, at most {CONTEXT_MAX}")
    return arr.ctypes.data, arr.size, arr


class Client(Handle, lib=_lib.client, free="ldpb_client_free"):
    """A device's client of an ldpb aggregator.

    Args:
        url: the aggregator's endpoint, "tcp://host:port" or "ipc://path".
        server_key: the aggregator's public key, pinned: a path to the ``aggregator.pub`` that
            ``ldpb keygen`` writes, or its 32 bytes.
        ledger: the device's privacy ledger file (created if missing). ``None`` makes an
            in-memory ledger that forgets every spend: for simulations only.
        reward_range: the app's reward range (lo, hi); rewards are rescaled to [0, 1], clipped.
        epsilon_cap: the largest per-report epsilon this client accepts (default 1).
        lifetime_budget, per_report_cap: used when the ledger is created (defaults 100, 10).
        allow_raw: accept central / non-private assignments, which send the reward itself.
        timeout_ms, attempts: per-attempt timeout and attempts per call (defaults 2000 ms, 3).
        queue: a report queue file for :meth:`queue_report` and :meth:`flush`, or ``":memory:"``
            for an in-memory queue (simulations only), or None (no queue).
        client_key: a persistent client secret key: a path to ``client.key`` or 32 bytes
            (default: an ephemeral keypair).
        seed: ``None`` (default) draws privacy noise from the system's secure generator; a text
            makes it reproducible, **for simulations and tests only**.
        lifetime_delta, per_report_delta_cap: the ledger's delta budget and per-report delta cap
            (default 0: the local contextual mode's reports, which spend a delta, are refused
            with BudgetExceeded until they are set).
        transport: the dialer: ``None`` (default: nanomsg's REQ socket), ``"nanomsg"``, or
            ``"sp"``, the native dialer (the same wire, no I/O threads: less CPU per request;
            docs/client.md, "Transports").

    Use it as a context manager (``with ldpb.Client(...) as c:``) or call :meth:`close`.
    Not thread-safe: one Client per thread.
    """

    def __init__(self, url: str, server_key: Union[PathLike, bytes], *,
                 ledger: Optional[PathLike] = None,
                 reward_range: Tuple[float, float] = (0.0, 1.0), epsilon_cap: float = 1.0,
                 lifetime_budget: Optional[float] = None,
                 per_report_cap: Optional[float] = None, allow_raw: bool = False,
                 timeout_ms: Optional[int] = None, attempts: Optional[int] = None,
                 queue: Optional[PathLike] = None,
                 client_key: Union[PathLike, bytes, None] = None,
                 seed: Optional[str] = None, lifetime_delta: Optional[float] = None,
                 per_report_delta_cap: Optional[float] = None,
                 transport: Optional[str] = None) -> None:
        self._h: Optional[c_void_p] = None
        self._rng = None
        # Every argument is checked here, before the first C call.
        self._url = _check.text(url, "url")
        if isinstance(server_key, (bytes, bytearray)):
            if len(server_key) != _lib.CLIENT_KEY_BYTES:
                raise InvalidArgument(f"server_key must be {_lib.CLIENT_KEY_BYTES} bytes")
            server_key_path = None
        else:
            server_key_path = _check.text(os.fspath(server_key), "server_key")
        ledger_path = None if ledger is None else _check.text(os.fspath(ledger), "ledger")
        lo, hi = _check.pair(reward_range, "reward_range")
        cap = _check.in_range(epsilon_cap, "epsilon_cap", 0.0, 10.0, lo_open=True)
        budget = None if lifetime_budget is None else \
            _check.real(lifetime_budget, "lifetime_budget")
        per_cap = None if per_report_cap is None else _check.real(per_report_cap, "per_report_cap")
        tmo = None if timeout_ms is None else _check.count(timeout_ms, "timeout_ms", 1, 3600000)
        att = None if attempts is None else _check.count(attempts, "attempts", 1, 100)
        queue_path = None
        if queue is not None and queue != ":memory:":
            queue_path = _check.text(os.fspath(queue), "queue")
        client_key_path = None
        if isinstance(client_key, (bytes, bytearray)):
            if len(client_key) != _lib.CLIENT_KEY_BYTES:
                raise InvalidArgument(f"client_key must be {_lib.CLIENT_KEY_BYTES} bytes")
        elif client_key is not None:
            client_key_path = _check.text(os.fspath(client_key), "client_key")
        seed_text = None if seed is None else _check.text(seed, "seed").decode()
        ldelta = None if lifetime_delta is None else \
            _check.in_range(lifetime_delta, "lifetime_delta", 0.0, 1.0)
        rdelta = None if per_report_delta_cap is None else \
            _check.in_range(per_report_delta_cap, "per_report_delta_cap", 0.0, 1.0)
        tp = None if transport is None else _check.text(transport, "transport")
        if tp is not None and tp not in (b"nanomsg", b"sp"):
            raise InvalidArgument(f"transport must be 'nanomsg' or 'sp', not {transport!r}")

        lib = _lib.client()
        o = _lib.ClientOpts()
        lib.ldpb_client_opts_init(byref(o))
        self._keep: List[Any] = [ledger_path, queue_path, tp]
        o.server_url = self._url
        if server_key_path is None:
            ctypes.memmove(o.server_public_key, bytes(server_key), _lib.CLIENT_KEY_BYTES)
        else:
            raise_for(lib.ldpb_client_opts_load_server_key(byref(o), server_key_path),
                      f"Client: reading the server key {server_key_path.decode()!r}")
        o.ledger_path = ledger_path
        o.reward_lo, o.reward_hi = lo, hi
        o.epsilon_cap = cap
        if budget is not None:
            o.lifetime_budget = budget
        if per_cap is not None:
            o.per_report_cap = per_cap
        o.allow_raw = 1 if allow_raw else 0
        if tmo is not None:
            o.timeout_ms = tmo
        if att is not None:
            o.max_attempts = att
        o.queue_path = queue_path
        o.queue_in_memory = 1 if queue == ":memory:" else 0
        o.transport = tp
        if ldelta is not None:
            o.lifetime_delta = ldelta
        if rdelta is not None:
            o.per_report_delta_cap = rdelta
        sk = None
        if client_key is not None:
            sk = (c_uint8 * _lib.CLIENT_KEY_BYTES)()
            if client_key_path is None:
                ctypes.memmove(sk, bytes(client_key), _lib.CLIENT_KEY_BYTES)
            else:
                raise_for(lib.ldpb_client_load_secret_key(client_key_path, sk),
                          "Client: reading client_key")
            o.client_secret_key = ctypes.cast(sk, ctypes.POINTER(c_uint8))
        if seed_text is not None:
            from .mechanisms import Rng
            self._rng = Rng.seeded(seed_text)
            o.rng = self._rng._handle()
        h = c_void_p()
        err = lib.ldpb_client_new(byref(h), byref(o))
        if sk is not None:  # the library copied it
            ctypes.memset(sk, 0, _lib.CLIENT_KEY_BYTES)
        if err:
            if self._rng is not None:
                self._rng.close()
                self._rng = None
            raise_for(err, "Client")
        self._h = h

    # -- plumbing ---------------------------------------------------------------------------
    def _check(self, err: int, what: str) -> None:
        if err:
            detail = _lib.client().ldpb_client_errmsg(self._h).decode(errors="replace")
            raise_for(err, what, detail)

    def close(self) -> None:
        """Closes the socket and the ledger and wipes the keys (idempotent)."""
        super().close()
        rng = getattr(self, "_rng", None)
        if rng is not None:
            rng.close()
            self._rng = None

    def __repr__(self) -> str:
        state = "closed" if not self._h else "open"
        return f"Client({self._url.decode()!r}, {state})"

    # -- the protocol -----------------------------------------------------------------------
    def assign(self, context: Optional[Sequence[float]] = None, *,
               experiment: Optional[str] = None) -> Assignment:
        """Asks the aggregator for an assignment (with an optional context vector of at most
        256 finite values), in ``experiment`` (None or "default": the experiment "default", with
        nothing on the wire). Raises BudgetExceeded for an assignment this client refuses
        (epsilon above its cap or its remaining budget: one budget across every experiment),
        NoExperiment (the aggregator runs no such experiment; not retried), Timeout,
        CryptoError, ..."""
        exp = _experiment(experiment)
        ptr, n, _keep = _context(context)
        a = _lib.AssignmentC()
        self._check(_lib.client().ldpb_client_assign_in(self._handle(), exp, ptr, n, byref(a)),
                    "assign")
        return Assignment(a)

    def report(self, assignment: Assignment, reward: float) -> None:
        """Privatizes ``reward`` on the device (charging the ledger durably first) and reports
        it; returns once the aggregator acknowledged it as durable."""
        if not isinstance(assignment, Assignment):
            raise TypeError("assignment must come from Client.assign")
        r = _check.real(reward, "reward")
        self._check(_lib.client().ldpb_client_report(self._handle(), byref(assignment._c), r),
                    "report")

    def report_and_assign(self, assignment: Assignment, reward: float,
                          context: Optional[Sequence[float]] = None
                          ) -> Tuple[Optional[Assignment], bool]:
        """Reports ``reward`` for ``assignment`` and gets the next assignment in one round
        trip. Returns ``(next, acked)``: ``acked`` says the report is durable; ``next`` is None
        when the aggregator could not assign (the report may still be acked)."""
        if not isinstance(assignment, Assignment):
            raise TypeError("assignment must come from Client.assign")
        r = _check.real(reward, "reward")
        ptr, n, _keep = _context(context)
        nxt = _lib.AssignmentC()
        acked = c_int()
        err = _lib.client().ldpb_client_report_and_assign(
            self._handle(), byref(assignment._c), r, ptr, n, byref(nxt), byref(acked))
        if err and not acked.value:
            self._check(err, "report_and_assign")
        if err:
            return None, True
        return Assignment(nxt), bool(acked.value)

    # -- contextual policies ----------------------------------------------------------------
    def report_context(self, assignment: Assignment, features: Sequence[float],
                       reward: float) -> None:
        """Reports ``reward`` for an assignment of a contextual policy (linucb, jdp-linucb-*),
        resending ``features``, the ``d`` values of the assigned arm's row of the context given
        to :meth:`assign` (exactly: the assignment id binds them; other values raise NotFound).
        Only that row is sent.

        Raises InvalidArgument (not one-dimensional, NaN), OutOfRange (more than 64 values),
        and the errors of :meth:`report`."""
        if not isinstance(assignment, Assignment):
            raise TypeError("assignment must come from Client.assign")
        x = _check.float_array(features, "features")
        if x.ndim != 1 or x.size == 0:
            raise InvalidArgument("features must be a non-empty one-dimensional array (the "
                                  "assigned arm's row)")
        if x.size > _FEATURES_MAX:
            raise _check.OutOfRange(f"features has {x.size} values, at most {_FEATURES_MAX}")
        r = _check.real(reward, "reward")
        self._check(_lib.client().ldpb_client_report_context(
            self._handle(), byref(assignment._c), x.ctypes.data, x.size, r), "report_context")

    def assign_local(self, features: Any, *, experiment: Optional[str] = None) -> Assignment:
        """The local contextual mode (aggregator policy ldp-linucb-gaussian): fetches the
        aggregator's model and chooses on the device among the rows of ``features`` (an
        ``(n, d)`` array, every row of norm at most the aggregator's bound L); the features are
        not sent. The returned assignment's ``arm`` is the device's choice, ``propensity``
        1/ties. Spends nothing.

        Raises InvalidArgument (shape, NaN; d other than the aggregator's), OutOfRange (a row
        longer than L, too many rows), BudgetExceeded (no delta budget, or epsilon/delta above
        the caps), ProtocolError (an aggregator not in the local contextual mode). ``experiment``
        as for :meth:`assign`."""
        exp = _experiment(experiment)
        x = _check.float_array(features, "features")
        if x.ndim != 2 or x.shape[0] == 0 or x.shape[1] == 0:
            raise InvalidArgument(f"features must have shape (n, d), n and d >= 1, not "
                                  f"{x.shape}")
        if x.shape[0] > _LOCAL_ACTIONS_MAX:
            raise _check.OutOfRange(f"features has {x.shape[0]} rows, at most "
                                    f"{_LOCAL_ACTIONS_MAX}")
        if x.shape[1] > _LOCAL_D_MAX:
            raise _check.OutOfRange(f"features has d = {x.shape[1]}, at most {_LOCAL_D_MAX}")
        a = _lib.AssignmentC()
        self._check(_lib.client().ldpb_client_assign_local_in(
            self._handle(), exp, x.ctypes.data, x.shape[0], x.shape[1], byref(a)),
            "assign_local")
        return Assignment(a)

    def report_local(self, assignment: Assignment, x_chosen: Sequence[float],
                     reward: float) -> None:
        """Reports a round of the local contextual mode: the statistics of ``(x_chosen,
        reward)`` (the chosen row, ``d`` values; the reward rescaled with ``reward_range``) are
        privatized on the device through the ledger, which charges the assignment's epsilon and
        delta first, and only they are sent. A repeat resends the stored values.

        Raises InvalidArgument (not a local assignment, wrong d, NaN), OutOfRange (x_chosen
        longer than L: nothing spent), and the errors of :meth:`report`."""
        if not isinstance(assignment, Assignment):
            raise TypeError("assignment must come from Client.assign_local")
        x = _check.float_array(x_chosen, "x_chosen")
        if x.ndim != 1 or x.size == 0 or x.size > _LOCAL_D_MAX:
            raise InvalidArgument(f"x_chosen must be one-dimensional with 1..{_LOCAL_D_MAX} "
                                  f"values, not shape {x.shape}")
        r = _check.real(reward, "reward")
        self._check(_lib.client().ldpb_client_report_local(
            self._handle(), byref(assignment._c), x.ctypes.data, x.size, r), "report_local")

    def queue_report(self, assignment: Assignment, reward: float) -> None:
        """Privatizes ``reward`` through the ledger and queues the report for :meth:`flush`
        (needs ``queue=``)."""
        if not isinstance(assignment, Assignment):
            raise TypeError("assignment must come from Client.assign")
        r = _check.real(reward, "reward")
        self._check(_lib.client().ldpb_client_queue_report(self._handle(), byref(assignment._c),
                                                           r), "queue_report")

    def flush(self, max_batch: int = 0) -> FlushStats:
        """Sends the queued reports in batches of at most ``max_batch`` (0: the library's
        default); returns what happened to them."""
        n = _check.count(max_batch, "max_batch", 0, 512)
        st = _lib.FlushStatsC()
        self._check(_lib.client().ldpb_client_flush(self._handle(), n, byref(st)), "flush")
        return FlushStats(st.acked, st.duplicates, st.refused, st.left)

    @property
    def queued(self) -> int:
        """Reports waiting in the queue."""
        return int(_lib.client().ldpb_client_queued(self._handle()))

    def status(self, *, experiment: Optional[str] = None) -> Status:
        """The status of ``experiment`` (None: "default") on the aggregator (spends
        nothing)."""
        exp = _experiment(experiment)
        lib = _lib.client()
        st = _lib.StatusC()
        self._check(lib.ldpb_client_status_in(self._handle(), exp, byref(st)), "status")
        try:
            arms = []
            for i in range(st.n_arms):
                a = st.arms[i]
                arms.append(ArmStatus(int(a.arm), int(a.pulls),
                                      a.estimate if a.has_estimate else None,
                                      a.ci_low if a.has_ci else None,
                                      a.ci_high if a.has_ci else None,
                                      bool(a.active) if a.has_active else None))
            return Status(st.policy.decode(errors="replace"), st.model.decode(errors="replace"),
                          int(st.reports), int(st.assignments), arms,
                          st.experiment.decode() or "default")
        finally:
            lib.ldpb_status_clear(byref(st))

    def experiment(self, op: str, name: Optional[str] = None,
                   config: Optional[str] = None) -> List[ExperimentInfo]:
        """An operator command (this client's key must be on the aggregator's admin list):
        ``op`` "create" (``name`` and the settings ``config``, "key = value" lines), "list"
        (every experiment, in name order), "show" or "stop" (``name``). Returns the experiments
        the aggregator reported. Raises InvalidArgument (a bad op, name or missing argument),
        AuthError (not an operator), NoExperiment (no such experiment), and the aggregator's
        refusal of the settings with its reason."""
        if op not in _EXPERIMENT_OPS:
            raise InvalidArgument(f"op must be one of {sorted(_EXPERIMENT_OPS)}, not {op!r}")
        nm = _experiment(name) if name is not None else None
        cf = None
        if config is not None:
            if not isinstance(config, str):
                raise TypeError("config must be a str or None")
            cf = config.encode()
            if len(cf) > _CONFIG_MAX or b"\0" in cf:
                raise _check.OutOfRange(f"config must be at most {_CONFIG_MAX} bytes without "
                                        f"NUL")
        lib = _lib.client()
        out = ctypes.POINTER(_lib.ExperimentInfoC)()
        n = ctypes.c_size_t(0)
        self._check(lib.ldpb_client_experiment(self._handle(), _EXPERIMENT_OPS[op], nm, cf,
                                               byref(out), byref(n)), "experiment " + op)
        try:
            return [ExperimentInfo(e.name.decode(), e.policy.decode(errors="replace"),
                                   e.mode.decode(errors="replace"), int(e.arms),
                                   e.mechanism.decode(errors="replace"), float(e.epsilon),
                                   float(e.delta), int(e.horizon), int(e.reports),
                                   int(e.assignments), bool(e.running))
                    for e in (out[i] for i in range(n.value))]
        finally:
            lib.ldpb_experiment_info_free(out)

    @property
    def spent(self) -> float:
        """Epsilon spent by this device's ledger."""
        lib = _lib.client()
        return float(lib.ldpb_ledger_spent(lib.ldpb_client_ledger(self._handle())))

    @property
    def remaining(self) -> float:
        """Epsilon left in this device's ledger."""
        lib = _lib.client()
        return float(lib.ldpb_ledger_remaining(lib.ldpb_client_ledger(self._handle())))

    @property
    def public_key(self) -> bytes:
        """This client's public key (for an operator's allow-list)."""
        pk = (c_uint8 * _lib.CLIENT_KEY_BYTES)()
        _lib.client().ldpb_client_public_key(self._handle(), pk)
        return bytes(pk)

