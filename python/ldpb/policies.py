"""Bandit policies of the ldpb engine, driven step by step from Python.

Every K-armed policy the daemon and ``ldpb sim`` run (non-private, local-DP, central-DP and
adversarial) is available through :class:`Policy`: ask it for an arm with :meth:`Policy.choose`,
give it what was observed with :meth:`Policy.observe`, save and restore its state as bytes. The
environment is yours. For a local-DP policy the observation is the privatized report (privatize
the reward with the :class:`~ldpb.Mechanism` the policy expects); for the central-DP ones the raw
reward in [0, 1], to which the policy adds its own noise.
"""

from __future__ import annotations

import ctypes
from ctypes import byref, c_double, c_uint32, c_void_p
from typing import Any, List, NamedTuple, Optional, Tuple

import numpy as np

from . import _check, _lib
from ._handle import Handle
from .errors import raise_for
from .mechanisms import _kind_of


def policies() -> List[Tuple[str, str]]:
    """Every policy as ``(name, model)``, model being "local", "central" or "nonprivate"."""
    lib = _lib.sim()
    out = []
    i = 0
    while True:
        n = lib.ldpb_policy_name_at(i)
        if n is None:
            return out
        out.append((n.decode(), lib.ldpb_policy_model_of(n).decode()))
        i += 1


class ArmState(NamedTuple):
    """One arm as the policy describes it: pulls counted, the estimated mean on [0, 1] and a
    confidence interval where the policy has them (NaN otherwise), and whether it is still
    active (elimination policies drop arms)."""
    pulls: int
    estimate: float
    ci_low: float
    ci_high: float
    active: bool


_PARAMS = ("horizon", "epsilon", "mechanism", "kappa", "beta", "gamma", "eps_arm", "tau",
           "threshold")


class Policy(Handle, lib=_lib.sim, free="ldpb_policy_free"):
    """One bandit policy of the engine.

    Args:
        name: a policy name (see :func:`policies`): "ucb1", "ts", "se", "ldp-ts-b",
            "ldp-ucb-b", "ldp-ucb-l", "ldp-se", "dp-ucb", "dp-ucb-bound", "dp-se", "exp3",
            "dp-exp3-lap", "ldp-exp3-lap", "exp3-tau", ...
        k: the number of arms (>= 2).
        seed: ``None`` (default) draws tie breaks and central-DP noise from the system's secure
            generator; a text makes them reproducible, **for simulations only**.
        horizon, epsilon, mechanism, kappa, beta, gamma, eps_arm, tau, threshold: the policy's
            parameters, with the daemon's and ``ldpb sim``'s defaults (docs/aggregator.md);
            a policy ignores those it does not read. ``mechanism`` is a name ("linear", ...):
            the clients' mechanism of a local policy.

    Raises:
        InvalidArgument: unknown policy; OutOfRange: a parameter the policy refuses (the
        message is the policy's own).
    """

    def __init__(self, name: str, k: int, *, seed: Optional[str] = None, **params: Any) -> None:
        b = _check.text(name, "name")
        kk = _check.count(k, "k", 0, 2**32 - 1)
        values = _check.known(params, _PARAMS, "Policy")
        for key, value in values.items():
            if key == "mechanism":
                values[key] = _kind_of(value)
            elif key in ("horizon", "tau"):
                values[key] = _check.count(value, key)
            else:
                values[key] = _check.real(value, key)
        lib = _lib.sim()
        p = _lib.PolicyParamsC()
        lib.ldpb_policy_params_init(byref(p))
        p.k = kk
        for key, value in values.items():
            setattr(p, key, value)
        sd = None if seed is None else _check.text(seed, "seed")
        h = c_void_p()
        msg = ctypes.create_string_buffer(256)
        err = lib.ldpb_policy_new(byref(h), b, byref(p), sd, msg, len(msg))
        raise_for(err, f"Policy({name!r})", msg.value.decode(errors="replace"))
        self._h: Optional[c_void_p] = h
        self._k = kk
        self.seed: Optional[str] = seed
        self.params = {key: getattr(p, key) for key in _PARAMS}

    def __repr__(self) -> str:
        return f"Policy({self.name!r}, k={self.k}, model={self.model!r})"

    @property
    def name(self) -> str:
        """The policy's name."""
        return _lib.sim().ldpb_policy_name(self._handle()).decode()

    @property
    def model(self) -> str:
        """Its privacy model: "local", "central" or "nonprivate"."""
        return _lib.sim().ldpb_policy_model(self._handle()).decode()

    @property
    def k(self) -> int:
        """The number of arms."""
        return self._k

    def choose(self) -> int:
        """The arm to play next (0 .. k-1).

        Raises StateError where the policy cannot choose (e.g. past its horizon)."""
        arm = c_uint32()
        raise_for(_lib.sim().ldpb_policy_choose(self._handle(), byref(arm)), "choose")
        return arm.value

    def _arm(self, arm: Any) -> int:
        a = _check.count(arm, "arm", 0, 2**32 - 1)
        if a >= self._k:
            raise _check.OutOfRange(f"arm {a} outside [0, {self._k - 1}]")
        return a

    def observe(self, arm: int, obs: float, propensity: Optional[float] = None) -> None:
        """Observes ``obs`` for ``arm``: the raw reward in [0, 1] (non-private, central), the
        privatized report (local). ``propensity``: the probability with which that arm was
        chosen, for a delayed report to an importance-weighted policy (EXP3 family).

        Raises OutOfRange (arm >= k, checked here), InvalidArgument (NaN, or a value the
        model cannot produce: the C check)."""
        a = self._arm(arm)
        v = _check.real(obs, "obs")
        pr = None if propensity is None else \
            _check.in_range(propensity, "propensity", 0.0, 1.0, lo_open=True)
        lib = _lib.sim()
        if pr is None:
            raise_for(lib.ldpb_policy_observe(self._handle(), a, v), "observe")
        else:
            raise_for(lib.ldpb_policy_observe_with_propensity(self._handle(), a, v, pr),
                      "observe")

    @property
    def propensity(self) -> float:
        """The exact probability of the last choice (NotSupported where the policy cannot say,
        StateError before any choice)."""
        p = c_double()
        raise_for(_lib.sim().ldpb_policy_propensity(self._handle(), byref(p)), "propensity")
        return p.value

    def save(self) -> bytes:
        """The policy's state as bytes (the daemon's format; the generator is not included)."""
        return self._save("ldpb_policy_save")

    def restore(self, state: bytes) -> None:
        """Replaces the state with one saved from a policy of the same name and parameters.

        Raises Corrupt for bytes that are not such a state."""
        self._restore("ldpb_policy_restore", state)

    def arms(self) -> List[ArmState]:
        """Every arm's state (see :class:`ArmState`)."""
        k = self.k
        arr = (_lib.PolicyArmC * k)()
        raise_for(_lib.sim().ldpb_policy_describe(self._handle(), arr, k), "arms")
        return [ArmState(int(a.pulls), a.estimate, a.ci_low, a.ci_high, bool(a.active))
                for a in arr]

    def pulls(self) -> np.ndarray:
        """The pulls counted per arm, as a uint64 array."""
        return np.array([a.pulls for a in self.arms()], dtype=np.uint64)
