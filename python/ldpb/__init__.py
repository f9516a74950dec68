"""ldpb: locally private bandit learning, from Python.

A package over ldpb's C libraries (through ctypes; no compiled code of its own):

Mechanisms (libldpb-client)
    :func:`privatize` / :class:`Mechanism` privatize a numpy array of rewards in one C call
    with the linear, quadratic or exponential Bernoulli mechanism or discrete Laplace; the
    effective epsilon, de-biasing; :class:`Rng` (secure by default, seeded for simulations).
    :func:`audit` runs the empirical privacy audit of ``ldpb audit``.
Policies (libldpb-sim)
    :class:`Policy` drives any K-armed policy of the engine step by step (choose, observe,
    save, restore) in your own environment; :func:`policies` lists them.
    :class:`ContextualPolicy` does the same for the contextual ones (linucb, jdp-linucb-*,
    ldp-linucb-gaussian) with numpy feature arrays; :func:`contextual_policies` lists them.
Simulation (libldpb-sim)
    :func:`simulate` runs a preset or custom instance of ``ldpb sim`` and returns the regret
    curves as numpy arrays (:class:`SimResult`; ``to_dataframe()`` with pandas, ``plot()`` with
    matplotlib); the same seed gives the same numbers as the command.
Client (libldpb-client)
    :class:`Client` talks to an aggregator: assign, report, report_and_assign, flush, status.

Errors raise :class:`LdpbError` subclasses, one per C error code (:mod:`ldpb.errors`). The
libraries are found through ``LDPB_LIBRARY_PATH``, a build directory next to this package's
source, or the system (docs/python.md).
"""

from .contextual import ContextualPolicy, contextual_policies
from .client import ArmStatus, Assignment, Client, ExperimentInfo, FlushStats, Status
from .errors import (AuthError, BudgetExceeded, Busy, Corrupt, CryptoError, Expired,
                     InvalidArgument, IOFailure, LdpbError, NoExperiment, NotFound,
                     NotSupported, OutOfMemory, OutOfRange, ProtocolError, Replay, StateError,
                     Timeout, TransportError, VersionMismatch)
from ._lib import LibraryNotFound
from .mechanisms import (EPSILON_MAX, MECHANISMS, AuditResult, Mechanism, Rng, audit,
                         privatize)
from .policies import ArmState, Policy, policies
from .simulation import SimConfig, SimResult, SimTable, presets, preset_runnable, simulate

__version__ = "0.1.0"

__all__ = [
    "ArmState", "ArmStatus", "Assignment", "AuditResult", "AuthError", "BudgetExceeded",
    "Busy", "Client", "ContextualPolicy", "Corrupt", "CryptoError", "EPSILON_MAX", "Expired",
    "ExperimentInfo", "FlushStats",
    "IOFailure", "InvalidArgument", "LdpbError", "LibraryNotFound", "MECHANISMS", "Mechanism",
    "NoExperiment", "NotFound", "NotSupported", "OutOfMemory", "OutOfRange", "Policy", "ProtocolError",
    "Replay", "Rng", "SimConfig", "SimResult", "SimTable", "StateError", "Status", "Timeout",
    "TransportError", "VersionMismatch", "audit", "contextual_policies", "policies", "preset_runnable", "presets",
    "privatize", "simulate",
]
