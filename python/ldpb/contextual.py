"""Contextual bandit policies of the ldpb engine, driven step by step from Python.

Every round brings a decision set, one feature vector per action (a ``(n, d)`` array); the policy
picks a row with :meth:`ContextualPolicy.choose` and learns from the chosen row and its reward
with :meth:`ContextualPolicy.observe`. The policies are those of the daemon and of
``ldpb sim --preset shariff2018`` (docs/aggregator.md, "Contextual policies"):

``linucb``
    LinUCB, non-private (ridge ``rho``).
``jdp-linucb-wishart``, ``jdp-linucb-gaussian``
    Joint-DP LinUCB of Shariff & Sheffet 2018 (tree mechanism over the Gram matrix, Wishart or
    Gaussian node noise; the Gaussian one with the daemon's exact grid release). The policy sees
    features and rewards (central model) and adds its own noise.
``ldp-linucb-gaussian``
    The local contextual mode: :meth:`~ContextualPolicy.choose` is the device's step (the model
    the aggregator hands out, chosen from on the device), :meth:`~ContextualPolicy.observe`
    privatizes ``(x, y)`` as a device does and adds the report. Use
    :meth:`~ContextualPolicy.privatize` and :meth:`~ContextualPolicy.add_report` to run the two
    steps apart (e.g. reports from real devices).
"""

from __future__ import annotations

import ctypes
from ctypes import byref, c_uint32, c_void_p
from typing import Any, List, Optional, Tuple

import numpy as np

from . import _check, _lib
from ._handle import Handle
from .errors import raise_for

_PARAMS = ("epsilon", "delta", "alpha", "L", "B", "S", "sigma", "rho")
_ACTIONS_MAX = 65536
_D_MAX = 64
_D_MAX_LOCAL = 32


def contextual_policies() -> List[Tuple[str, str]]:
    """Every contextual policy as ``(name, model)``, model being "local", "central" or
    "nonprivate"."""
    lib = _lib.sim()
    out = []
    i = 0
    while True:
        n = lib.ldpb_ctxpolicy_name_at(i)
        if n is None:
            return out
        out.append((n.decode(), lib.ldpb_ctxpolicy_model_of(n).decode()))
        i += 1


class ContextualPolicy(Handle, lib=_lib.sim, free="ldpb_ctxpolicy_free"):
    """One contextual policy of the engine.

    Args:
        name: "linucb", "jdp-linucb-wishart", "jdp-linucb-gaussian" or "ldp-linucb-gaussian"
            (see :func:`contextual_policies`).
        d: the feature dimension (1..64; 1..32 for ldp-linucb-gaussian).
        horizon: the rounds the policy is built for (reports for the local one); the JDP tree's
            depth and the confidence level depend on it, and observing more raises StateError.
        seed: ``None`` (default) draws tie breaks, tree noise and device noise from the system's
            secure generator; a text makes them reproducible, **for simulations only**.
        epsilon: JDP epsilon (jdp-*), each report's epsilon (ldp-*); default 1.
        delta: JDP delta in (0, 1), each report's delta in (0, 0.1] (ldp-*); default 0.1.
        alpha: failure probability of the confidence sets; 0 (default) means 1/horizon.
        L: bound on every action's norm (longer rows are refused); default 1.
        B: ldp-linucb-gaussian: devices clip rewards to [-B, B]; default 1.
        S: bound on the norm of the unknown parameter; default 1.
        sigma: sub-Gaussian parameter of the reward noise; default 1.
        rho: linucb's ridge regulariser; default 1.

    The parameters have the daemon's names and defaults (``feature_norm`` is ``L``,
    ``reward_bound`` is ``B``, ``theta_norm`` is ``S``, ``noise_sigma`` is ``sigma``).

    Raises:
        InvalidArgument: an unknown policy; OutOfRange: a parameter outside its range (checked
        here where the range is fixed, otherwise with the policy's own message).
    """

    def __init__(self, name: str, d: int, horizon: int, *, seed: Optional[str] = None,
                 **params: Any) -> None:
        b = _check.text(name, "name")
        dd = _check.count(d, "d", 1, _D_MAX)
        hh = _check.count(horizon, "horizon", 1, 2**40)
        values = {key: _check.real(value, key)
                  for key, value in _check.known(params, _PARAMS, "ContextualPolicy").items()}
        sd = None if seed is None else _check.text(seed, "seed")
        lib = _lib.sim()
        p = _lib.CtxPolicyParamsC()
        lib.ldpb_ctxpolicy_params_init(byref(p))
        p.d = dd
        p.horizon = hh
        for key, value in values.items():
            setattr(p, key, value)
        h = c_void_p()
        msg = ctypes.create_string_buffer(256)
        err = lib.ldpb_ctxpolicy_new(byref(h), b, byref(p), sd, msg, len(msg))
        raise_for(err, f"ContextualPolicy({name!r})", msg.value.decode(errors="replace"))
        self._h: Optional[c_void_p] = h
        self._d = dd
        self._report_len = int(lib.ldpb_ctxpolicy_report_len(h))
        self.horizon = hh
        self.seed: Optional[str] = seed
        self.params = {key: getattr(p, key) for key in _PARAMS}

    def __repr__(self) -> str:
        return f"ContextualPolicy({self.name!r}, d={self.d}, model={self.model!r})"

    @property
    def name(self) -> str:
        """The policy's name."""
        return _lib.sim().ldpb_ctxpolicy_name(self._handle()).decode()

    @property
    def model(self) -> str:
        """Its privacy model: "local", "central" or "nonprivate"."""
        return _lib.sim().ldpb_ctxpolicy_model(self._handle()).decode()

    @property
    def d(self) -> int:
        """The feature dimension."""
        return self._d

    @property
    def rounds(self) -> int:
        """Observations (reports, for the local policy) counted so far."""
        return int(_lib.sim().ldpb_ctxpolicy_rounds(self._handle()))

    @property
    def report_len(self) -> int:
        """Values in one device report of the local policy ((d + 1)(d + 2) / 2); 0 for the
        others."""
        return self._report_len

    def _rows(self, features: Any) -> np.ndarray:
        x = _check.float_array(features, "features")
        if x.ndim != 2 or x.shape[1] != self._d:
            raise _check.InvalidArgument(f"features must have shape (n, {self._d}), not "
                                         f"{x.shape}")
        if not 1 <= x.shape[0] <= _ACTIONS_MAX:
            raise _check.OutOfRange(f"features has {x.shape[0]} rows, outside [1, "
                                    f"{_ACTIONS_MAX}]")
        return x

    def _row(self, x_arm: Any) -> np.ndarray:
        x = _check.float_array(x_arm, "x")
        if x.shape != (self._d,):
            raise _check.InvalidArgument(f"x must have shape ({self._d},), not {x.shape}")
        return x

    def choose_with_ties(self, features: Any) -> Tuple[int, int]:
        """As :meth:`choose`, and the number of rows that attained the maximum (the choice's
        propensity is 1/ties)."""
        x = self._rows(features)
        arm, ties = c_uint32(), c_uint32()
        raise_for(_lib.sim().ldpb_ctxpolicy_choose(
            self._handle(), x.ctypes.data_as(_lib._DP), x.shape[0], byref(arm), byref(ties)),
            "choose")
        return arm.value, ties.value

    def choose(self, features: Any) -> int:
        """The row of ``features`` (an ``(n, d)`` array of real numbers, every row of norm at
        most ``L``) to play: the largest optimistic index, exact ties broken at random.

        Raises TypeError (not real numbers), InvalidArgument (wrong shape, NaN or infinity),
        OutOfRange (no rows, or a row longer than L: the C check)."""
        return self.choose_with_ties(features)[0]

    def observe(self, x: Any, reward: float) -> None:
        """Observes the chosen row ``x`` (``d`` values) and its reward. For the local policy the
        statistics of ``(x, reward)`` are privatized here as a device does and the report added.

        Raises InvalidArgument (shape, NaN), OutOfRange (x longer than L), StateError (past the
        horizon)."""
        xx = self._row(x)
        y = _check.real(reward, "reward")
        raise_for(_lib.sim().ldpb_ctxpolicy_observe(self._handle(), xx.ctypes.data_as(_lib._DP),
                                                    y), "observe")

    def _local(self, what: str) -> None:
        if not self._report_len:
            raise _check.InvalidArgument(f"{what}: only ldp-linucb-gaussian takes device "
                                         f"reports, not {self.name}")

    def privatize(self, x: Any, reward: float) -> np.ndarray:
        """ldp-linucb-gaussian: the device's step, the report of ``(x, reward)`` (a float64
        array of :attr:`report_len` values) privatized with the policy's generator."""
        self._local("privatize")
        xx = self._row(x)
        y = _check.real(reward, "reward")
        out = np.empty(self._report_len, dtype=np.float64)
        raise_for(_lib.sim().ldpb_ctxpolicy_privatize(
            self._handle(), xx.ctypes.data_as(_lib._DP), y, out.ctypes.data_as(_lib._DP)),
            "privatize")
        return out

    def add_report(self, report: Any) -> None:
        """ldp-linucb-gaussian: the aggregator's step, adds one device report.

        Raises ProtocolError for a report the mechanism cannot produce (off the grid, too large:
        the daemon's admission check), StateError past the horizon."""
        self._local("add_report")
        z = _check.float_array(report, "report")
        if z.shape != (self._report_len,):
            raise _check.InvalidArgument(f"report must have shape ({self._report_len},), not "
                                         f"{z.shape}")
        raise_for(_lib.sim().ldpb_ctxpolicy_add_report(
            self._handle(), z.ctypes.data_as(_lib._DP), z.size), "add_report")

    def save(self) -> bytes:
        """The policy's state as bytes (statistics, tree noise, counters; not the generator)."""
        return self._save("ldpb_ctxpolicy_save")

    def restore(self, state: bytes) -> None:
        """Replaces the state with one saved from a policy of the same name and parameters.

        Raises Corrupt for bytes that are not such a state."""
        self._restore("ldpb_ctxpolicy_restore", state)
