"""Loading the C libraries and declaring their functions (internal).

Two shared libraries back the package: ``libldpb-client`` (mechanisms, generators, the client)
and ``libldpb-sim`` (simulation, policies, audit). Each is looked up, in this order:

1. every directory of the ``LDPB_LIBRARY_PATH`` environment variable (``:``-separated); a
   directory may hold the library itself or be a CMake build directory of ldpb (then its
   ``client/`` and ``aggregator/sim/`` subdirectories are searched);
2. the build directories of a source checkout this package sits in (``build/*`` next to
   ``python/``), newest first;
3. the system's library path (an ``ldpb`` installed with ``cmake --install``).

Nothing is loaded at import time: ``import ldpb`` and ``help(ldpb)`` work without the
libraries, and the first call that needs one raises :class:`LibraryNotFound` naming what was
searched.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
import threading
from ctypes import (POINTER, c_char, c_char_p, c_double, c_int, c_size_t, c_uint, c_uint8,
                    c_uint32, c_uint64, c_void_p)
from typing import Dict, List, Optional

_SONAMES = {"client": "libldpb-client.so.0", "sim": "libldpb-sim.so.0"}
_SUBDIRS = {"client": "client", "sim": os.path.join("aggregator", "sim")}
SIM_ABI_VERSION = 1


class LibraryNotFound(ImportError):
    """A C library of ldpb could not be found or loaded; the message says where it looked."""


def _candidates(which: str) -> List[str]:
    soname = _SONAMES[which]
    out: List[str] = []
    env = os.environ.get("LDPB_LIBRARY_PATH", "")
    for d in [p for p in env.split(os.pathsep) if p]:
        out.append(os.path.join(d, soname))
        out.append(os.path.join(d, _SUBDIRS[which], soname))
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    builds = glob.glob(os.path.join(root, "build", "*", _SUBDIRS[which], soname))
    builds.sort(key=lambda p: os.path.getmtime(p), reverse=True)
    out.extend(builds)
    return out


def _load(which: str) -> ctypes.CDLL:
    tried = []
    for path in _candidates(which):
        if os.path.exists(path):
            try:
                return ctypes.CDLL(path)
            except OSError as e:
                tried.append(f"{path} ({e})")
        else:
            tried.append(path)
    try:
        return ctypes.CDLL(_SONAMES[which])
    except OSError as e:
        tried.append(f"{_SONAMES[which]} on the system's library path ({e})")
    raise LibraryNotFound(
        f"ldpb: cannot load {_SONAMES[which]}; searched:\n  " + "\n  ".join(tried) +
        "\nBuild ldpb (cmake --build BUILD) and set LDPB_LIBRARY_PATH=BUILD, or install it "
        "(cmake --install BUILD, then ldconfig). See docs/python.md.")


# ---- structures mirrored from the C headers (ldpb/mech.h, ldpb/client.h, ldpb/sim.h) ----------

ASSIGNMENT_ID_MAX = 64
EXPERIMENT_NAME_MAX = 64
STATUS_STRING_MAX = 1024
CLIENT_KEY_BYTES = 32
RNG_SEED_BYTES = 32


class MechOpts(ctypes.Structure):
    _fields_ = [("kind", c_int), ("epsilon", c_double), ("kappa", c_double),
                ("lambda_", c_double), ("p0", c_double), ("p1", c_double),
                ("range_lo", c_double), ("range_hi", c_double)]


class ClientOpts(ctypes.Structure):
    _fields_ = [("server_url", c_char_p), ("server_public_key", c_uint8 * CLIENT_KEY_BYTES),
                ("client_secret_key", POINTER(c_uint8)), ("ledger_path", c_char_p),
                ("lifetime_budget", c_double), ("per_report_cap", c_double),
                ("epsilon_cap", c_double), ("allow_raw", c_int), ("reward_lo", c_double),
                ("reward_hi", c_double), ("timeout_ms", c_uint32), ("max_attempts", c_uint32),
                ("rng", c_void_p), ("queue_path", c_char_p), ("queue_in_memory", c_int),
                ("lifetime_delta", c_double), ("per_report_delta_cap", c_double),
                ("transport", c_char_p)]


class AssignmentC(ctypes.Structure):
    _fields_ = [("id", c_uint8 * ASSIGNMENT_ID_MAX), ("id_len", c_size_t), ("arm", c_uint32),
                ("mechanism", c_int), ("epsilon", c_double), ("kappa", c_double),
                ("expires_at_ms", c_uint64), ("propensity", c_double),
                ("policy_version", c_uint64), ("local_d", c_uint32), ("local_delta", c_double),
                ("local_feature_norm", c_double), ("local_reward_bound", c_double),
                ("experiment", c_char * (EXPERIMENT_NAME_MAX + 1))]


class FlushStatsC(ctypes.Structure):
    _fields_ = [("acked", c_size_t), ("duplicates", c_size_t), ("refused", c_size_t),
                ("left", c_size_t)]


class ArmStatusC(ctypes.Structure):
    _fields_ = [("arm", c_uint32), ("pulls", c_uint64), ("has_estimate", c_int),
                ("estimate", c_double), ("has_ci", c_int), ("ci_low", c_double),
                ("ci_high", c_double), ("has_active", c_int), ("active", c_int)]


class StatusC(ctypes.Structure):
    _fields_ = [("policy", c_char * (STATUS_STRING_MAX + 1)),
                ("model", c_char * (STATUS_STRING_MAX + 1)), ("reports", c_uint64),
                ("assignments", c_uint64), ("n_arms", c_uint32), ("arms", POINTER(ArmStatusC)),
                ("experiment", c_char * (EXPERIMENT_NAME_MAX + 1))]


class ExperimentInfoC(ctypes.Structure):
    _fields_ = [("name", c_char * (EXPERIMENT_NAME_MAX + 1)), ("policy", c_char * 64),
                ("mode", c_char * 16), ("arms", c_uint32), ("mechanism", c_char * 32),
                ("epsilon", c_double), ("delta", c_double), ("horizon", c_uint64),
                ("reports", c_uint64), ("assignments", c_uint64), ("running", c_int)]


class SimProgressC(ctypes.Structure):
    _fields_ = [("rounds_done", c_uint64), ("rounds_total", c_uint64), ("runs_done", c_uint64),
                ("runs_total", c_uint64), ("work_done", c_double)]


SIM_PROGRESS_FN = ctypes.CFUNCTYPE(None, c_void_p, POINTER(SimProgressC))


class SimConfigInfoC(ctypes.Structure):
    _fields_ = [("preset", c_char_p), ("algorithm", c_char_p), ("mechanism", c_char_p),
                ("epsilon", c_char_p), ("epsilon_value", c_double), ("k", c_uint32),
                ("model", c_char_p), ("title", c_char_p)]


class PolicyParamsC(ctypes.Structure):
    _fields_ = [("k", c_uint32), ("horizon", c_uint64), ("epsilon", c_double),
                ("mechanism", c_int), ("kappa", c_double), ("beta", c_double),
                ("gamma", c_double), ("eps_arm", c_double), ("tau", c_uint64),
                ("threshold", c_double)]


class CtxPolicyParamsC(ctypes.Structure):
    _fields_ = [("d", c_uint32), ("horizon", c_uint64), ("epsilon", c_double),
                ("delta", c_double), ("alpha", c_double), ("L", c_double), ("B", c_double),
                ("S", c_double), ("sigma", c_double), ("rho", c_double)]


class PolicyArmC(ctypes.Structure):
    _fields_ = [("pulls", c_uint64), ("estimate", c_double), ("ci_low", c_double),
                ("ci_high", c_double), ("active", c_int)]


class AuditResultC(ctypes.Structure):
    _fields_ = [("pass_", c_int), ("privacy_ok", c_int), ("fidelity_ok", c_int),
                ("support_ok", c_int), ("eps_lower", c_double), ("samples", c_uint64),
                ("alpha", c_double), ("n_inputs", c_size_t), ("fidelity_failures", c_size_t),
                ("off_support", c_uint64), ("miss", c_double), ("verdict", c_char * 512)]


_P = c_void_p
_ERR = c_int
_DP = POINTER(c_double)

_CLIENT_PROTOS = {
    "ldpb_strerror": (c_char_p, [c_int]),
    "ldpb_errname": (c_char_p, [c_int]),
    "ldpb_rng_new_system": (_ERR, [POINTER(_P)]),
    "ldpb_rng_new_seeded": (_ERR, [POINTER(_P), POINTER(c_uint8)]),
    "ldpb_rng_seed_from_text": (None, [POINTER(c_uint8), c_char_p]),
    "ldpb_rng_free": (None, [_P]),
    "ldpb_rng_u64": (c_uint64, [_P]),
    "ldpb_mech_opts_init": (None, [POINTER(MechOpts), c_int, c_double]),
    "ldpb_mech_new": (_ERR, [POINTER(_P), POINTER(MechOpts)]),
    "ldpb_mech_free": (None, [_P]),
    "ldpb_mech_privatize": (_ERR, [_P, _P, c_double, _DP]),
    "ldpb_mech_privatize_batch": (_ERR, [_P, _P, _P, c_size_t, _P]),
    "ldpb_mech_get_kind": (c_int, [_P]),
    "ldpb_mech_epsilon": (c_double, [_P]),
    "ldpb_mech_epsilon_effective": (c_double, [_P]),
    "ldpb_mech_get_opts": (POINTER(MechOpts), [_P]),
    "ldpb_mech_is_bernoulli": (c_int, [_P]),
    "ldpb_mech_prob_one": (c_double, [_P, c_double]),
    "ldpb_mech_endpoints": (None, [_P, _DP, _DP]),
    "ldpb_mech_laplace_grid": (c_double, [_P]),
    "ldpb_mech_noise_variance": (c_double, [_P]),
    "ldpb_mech_debias_mean": (_ERR, [_P, c_double, c_uint64, _DP, POINTER(c_int)]),
    "ldpb_mech_debias_radius": (_ERR, [_P, c_uint64, c_double, _DP]),
    "ldpb_mech_kind_name": (c_char_p, [c_int]),
    "ldpb_mech_kind_from_name": (_ERR, [c_char_p, POINTER(c_int)]),
    "ldpb_client_opts_init": (None, [POINTER(ClientOpts)]),
    "ldpb_client_opts_load_server_key": (_ERR, [POINTER(ClientOpts), c_char_p]),
    "ldpb_client_load_secret_key": (_ERR, [c_char_p, POINTER(c_uint8)]),
    "ldpb_client_new": (_ERR, [POINTER(_P), POINTER(ClientOpts)]),
    "ldpb_client_free": (None, [_P]),
    "ldpb_client_assign": (_ERR, [_P, _P, c_size_t, POINTER(AssignmentC)]),
    "ldpb_client_report": (_ERR, [_P, POINTER(AssignmentC), c_double]),
    "ldpb_client_report_and_assign": (_ERR, [_P, POINTER(AssignmentC), c_double, _P, c_size_t,
                                             POINTER(AssignmentC), POINTER(c_int)]),
    "ldpb_client_queue_report": (_ERR, [_P, POINTER(AssignmentC), c_double]),
    "ldpb_client_report_context": (_ERR, [_P, POINTER(AssignmentC), _P, c_size_t, c_double]),
    "ldpb_client_assign_local": (_ERR, [_P, _P, c_uint32, c_uint32, POINTER(AssignmentC)]),
    "ldpb_client_report_local": (_ERR, [_P, POINTER(AssignmentC), _P, c_uint32, c_double]),
    "ldpb_client_flush": (_ERR, [_P, c_size_t, POINTER(FlushStatsC)]),
    "ldpb_client_queued": (c_size_t, [_P]),
    "ldpb_client_status": (_ERR, [_P, POINTER(StatusC)]),
    "ldpb_client_assign_in": (_ERR, [_P, c_char_p, _P, c_size_t, POINTER(AssignmentC)]),
    "ldpb_client_assign_local_in": (_ERR, [_P, c_char_p, _P, c_uint32, c_uint32,
                                           POINTER(AssignmentC)]),
    "ldpb_client_status_in": (_ERR, [_P, c_char_p, POINTER(StatusC)]),
    "ldpb_client_experiment": (_ERR, [_P, c_int, c_char_p, c_char_p,
                                      POINTER(POINTER(ExperimentInfoC)), POINTER(c_size_t)]),
    "ldpb_experiment_info_free": (None, [POINTER(ExperimentInfoC)]),
    "ldpb_status_clear": (None, [POINTER(StatusC)]),
    "ldpb_client_errmsg": (c_char_p, [_P]),
    "ldpb_client_public_key": (None, [_P, POINTER(c_uint8)]),
    "ldpb_client_ledger": (_P, [_P]),
    "ldpb_client_mech_name": (c_char_p, [c_int]),
    "ldpb_ledger_spent": (c_double, [_P]),
    "ldpb_ledger_remaining": (c_double, [_P]),
}

_SIM_PROTOS = {
    "ldpb_sim_abi_version": (c_uint, []),
    "ldpb_sim_new": (_ERR, [POINTER(_P)]),
    "ldpb_sim_free": (None, [_P]),
    "ldpb_sim_set": (_ERR, [_P, c_char_p, c_char_p]),
    "ldpb_sim_set_progress": (None, [_P, SIM_PROGRESS_FN, _P]),
    "ldpb_sim_prepare": (_ERR, [_P]),
    "ldpb_sim_run": (_ERR, [_P]),
    "ldpb_sim_errmsg": (c_char_p, [_P]),
    "ldpb_sim_n_configs": (c_size_t, [_P]),
    "ldpb_sim_trials": (c_uint64, [_P]),
    "ldpb_sim_horizon": (c_uint64, [_P]),
    "ldpb_sim_checkpoints": (c_size_t, [_P, POINTER(POINTER(c_uint64))]),
    "ldpb_sim_seconds": (c_double, [_P]),
    "ldpb_sim_config": (_ERR, [_P, c_size_t, POINTER(SimConfigInfoC)]),
    "ldpb_sim_regret": (_DP, [_P, c_size_t]),
    "ldpb_sim_curve": (_ERR, [_P, c_size_t, POINTER(_DP), POINTER(_DP), POINTER(_DP)]),
    "ldpb_sim_preset_name": (c_char_p, [c_size_t]),
    "ldpb_sim_table": (c_char_p, [_P, POINTER(c_char_p)]),
    "ldpb_sim_preset_runnable": (c_int, [c_char_p]),
    "ldpb_policy_params_init": (None, [POINTER(PolicyParamsC)]),
    "ldpb_policy_new": (_ERR, [POINTER(_P), c_char_p, POINTER(PolicyParamsC), c_char_p,
                              c_char_p, c_size_t]),
    "ldpb_policy_free": (None, [_P]),
    "ldpb_policy_choose": (_ERR, [_P, POINTER(c_uint32)]),
    "ldpb_policy_observe": (_ERR, [_P, c_uint32, c_double]),
    "ldpb_policy_observe_with_propensity": (_ERR, [_P, c_uint32, c_double, c_double]),
    "ldpb_policy_propensity": (_ERR, [_P, _DP]),
    "ldpb_policy_save": (_ERR, [_P, _P, c_size_t, POINTER(c_size_t)]),
    "ldpb_policy_restore": (_ERR, [_P, _P, c_size_t]),
    "ldpb_policy_describe": (_ERR, [_P, POINTER(PolicyArmC), c_uint32]),
    "ldpb_policy_k": (c_uint32, [_P]),
    "ldpb_policy_name": (c_char_p, [_P]),
    "ldpb_policy_model": (c_char_p, [_P]),
    "ldpb_policy_name_at": (c_char_p, [c_size_t]),
    "ldpb_policy_model_of": (c_char_p, [c_char_p]),
    "ldpb_ctxpolicy_params_init": (None, [POINTER(CtxPolicyParamsC)]),
    "ldpb_ctxpolicy_new": (_ERR, [POINTER(_P), c_char_p, POINTER(CtxPolicyParamsC), c_char_p,
                                 c_char_p, c_size_t]),
    "ldpb_ctxpolicy_free": (None, [_P]),
    "ldpb_ctxpolicy_choose": (_ERR, [_P, _DP, c_uint32, POINTER(c_uint32), POINTER(c_uint32)]),
    "ldpb_ctxpolicy_observe": (_ERR, [_P, _DP, c_double]),
    "ldpb_ctxpolicy_report_len": (c_size_t, [_P]),
    "ldpb_ctxpolicy_privatize": (_ERR, [_P, _DP, c_double, _DP]),
    "ldpb_ctxpolicy_add_report": (_ERR, [_P, _DP, c_size_t]),
    "ldpb_ctxpolicy_save": (_ERR, [_P, _P, c_size_t, POINTER(c_size_t)]),
    "ldpb_ctxpolicy_restore": (_ERR, [_P, _P, c_size_t]),
    "ldpb_ctxpolicy_rounds": (c_uint64, [_P]),
    "ldpb_ctxpolicy_d": (c_uint32, [_P]),
    "ldpb_ctxpolicy_name": (c_char_p, [_P]),
    "ldpb_ctxpolicy_model": (c_char_p, [_P]),
    "ldpb_ctxpolicy_name_at": (c_char_p, [c_size_t]),
    "ldpb_ctxpolicy_model_of": (c_char_p, [c_char_p]),
    "ldpb_audit_mech": (_ERR, [c_char_p, c_double, c_double, c_uint64, c_double, c_char_p,
                              POINTER(AuditResultC), c_char_p, c_size_t]),
}

_lock = threading.Lock()
_libs: Dict[str, ctypes.CDLL] = {}


def _declare(lib: ctypes.CDLL, protos: dict) -> ctypes.CDLL:
    for name, (res, args) in protos.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args
    return lib


def client() -> ctypes.CDLL:
    """libldpb-client, loaded and declared on first use."""
    with _lock:
        if "client" not in _libs:
            _libs["client"] = _declare(_load("client"), _CLIENT_PROTOS)
        return _libs["client"]


def sim() -> ctypes.CDLL:
    """libldpb-sim, loaded and declared on first use (its ABI version checked)."""
    with _lock:
        if "sim" not in _libs:
            lib = _declare(_load("sim"), _SIM_PROTOS)
            v = lib.ldpb_sim_abi_version()
            if v != SIM_ABI_VERSION:
                raise LibraryNotFound(f"ldpb: libldpb-sim has ABI version {v}, this package "
                                      f"needs {SIM_ABI_VERSION}: rebuild or reinstall both")
            _libs["sim"] = lib
        return _libs["sim"]


def loaded_paths() -> Dict[str, Optional[str]]:
    """The files the loaded libraries came from (None for one not loaded yet)."""
    out: Dict[str, Optional[str]] = {}
    for k in _SONAMES:
        lib = _libs.get(k)
        out[k] = getattr(lib, "_name", None) if lib else None
    return out
