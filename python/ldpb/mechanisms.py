"""Local differential privacy mechanisms, generators, de-biasing and the audit.

The mechanisms are the client library's own (``ldpb/mech.h``): the Bernoulli mechanism with the
linear (CTB), quadratic and exponential probability functions, and floating-point-safe discrete
Laplace. Rewards are rescaled from the app's range to [0, 1] and clipped, then privatized; a whole
array is privatized in one C call. Noise comes from the system's secure generator unless a
seeded :class:`Rng` is passed, which is for simulations only (anyone who knows the seed knows the
noise). docs/privacy.md has the guarantees.
"""

from __future__ import annotations

import ctypes
import math
from ctypes import byref, c_double, c_int, c_uint8, c_void_p
from typing import Any, NamedTuple, Optional, Tuple

import numpy as np

from . import _check, _lib
from ._handle import Handle
from .errors import InvalidArgument, raise_for

MECHANISMS = ("linear", "quadratic", "exponential", "laplace")
EPSILON_MAX = 10.0
KAPPA_DEFAULT = 0.5


class Rng(Handle, lib=_lib.client, free="ldpb_rng_free"):
    """A generator of privacy noise (a ChaCha20 keystream).

    ``Rng()`` is the secure generator, keyed from the operating system and re-keyed as the
    library does; use it for anything real. ``Rng.seeded(text)`` is a reproducible stream
    derived from ``text`` exactly as ``ldpb privatize --seed TEXT`` derives it: **for tests and
    simulations only**. Not thread-safe: one Rng per thread.
    """

    def __init__(self) -> None:
        lib = _lib.client()
        h = c_void_p()
        raise_for(lib.ldpb_rng_new_system(byref(h)), "Rng()")
        self._h: Optional[c_void_p] = h
        self.seed: Optional[str] = None

    @classmethod
    def seeded(cls, seed: str) -> "Rng":
        """A deterministic generator from the text ``seed`` (simulation only, not secret)."""
        b = _check.text(seed, "seed")
        lib = _lib.client()
        key = (c_uint8 * _lib.RNG_SEED_BYTES)()
        lib.ldpb_rng_seed_from_text(key, b)
        h = c_void_p()
        raise_for(lib.ldpb_rng_new_seeded(byref(h), key), "Rng.seeded()")
        self = cls.__new__(cls)
        self._h = h
        self.seed = seed
        return self

    @property
    def is_seeded(self) -> bool:
        """True for a reproducible (simulation) generator."""
        return self.seed is not None

    def u64(self) -> int:
        """The next 64-bit word of the stream (for tests)."""
        return int(_lib.client().ldpb_rng_u64(self._handle()))

    def close(self) -> None:
        """Wipes the key and frees the generator (also done when it is garbage-collected)."""
        super().close()

    def __repr__(self) -> str:
        return "Rng(secure)" if self.seed is None else f"Rng.seeded({self.seed!r})"


def _kind_of(name: Any) -> int:
    """The ldpb_mech_kind of a mechanism name (its position in MECHANISMS, from 1, as the C
    enum pins it), checked in Python."""
    _check.text(name, "mechanism")
    if name not in MECHANISMS:
        raise InvalidArgument(f"unknown mechanism {name!r} (expected one of "
                              f"{', '.join(MECHANISMS)})")
    return MECHANISMS.index(name) + 1


class Mechanism(Handle, lib=_lib.client, free="ldpb_mech_free"):
    """An LDP mechanism of the client library.

    Args:
        mechanism: ``"linear"``, ``"quadratic"``, ``"exponential"`` or ``"laplace"``.
        epsilon: the requested per-report epsilon, in (0, 10].
        range: the app's reward range ``(lo, hi)``; rewards are rescaled to [0, 1] and clipped.
        kappa: the quadratic curvature in [-1, 1] (default 0.5; quadratic only).
        lam: the exponential rate (default: epsilon; exponential only).

    The effective epsilon (:attr:`epsilon_effective`) is the library's rounded-up bound on the
    privacy loss of the thresholds it actually uses; it never exceeds ``epsilon``.
    """

    def __init__(self, mechanism: str = "linear", epsilon: float = 1.0, *,
                 range: Tuple[float, float] = (0.0, 1.0), kappa: Optional[float] = None,
                 lam: Optional[float] = None) -> None:
        kind = _kind_of(mechanism)
        eps = _check.in_range(epsilon, "epsilon", 0.0, EPSILON_MAX, lo_open=True)
        lo, hi = _check.pair(range, "range")
        if kappa is not None:
            if mechanism != "quadratic":
                raise InvalidArgument("kappa applies only to the quadratic mechanism")
            kappa = _check.in_range(kappa, "kappa", -1.0, 1.0)
        if lam is not None:
            if mechanism != "exponential":
                raise InvalidArgument("lam applies only to the exponential mechanism")
            lam = _check.real(lam, "lam")
        lib = _lib.client()
        o = _lib.MechOpts()
        lib.ldpb_mech_opts_init(byref(o), kind, eps)
        if kappa is not None:
            o.kappa = kappa
        if lam is not None:
            o.lambda_ = lam
        o.range_lo, o.range_hi = lo, hi
        h = c_void_p()
        raise_for(lib.ldpb_mech_new(byref(h), byref(o)), f"Mechanism({mechanism!r}, {eps!r})")
        self._h: Optional[c_void_p] = h
        self.name: str = mechanism
        self.range: Tuple[float, float] = (lo, hi)

    def __repr__(self) -> str:
        return (f"Mechanism({self.name!r}, epsilon={self.epsilon!r}, "
                f"epsilon_effective={self.epsilon_effective!r}, range={self.range!r})")

    @property
    def epsilon(self) -> float:
        """The requested per-report epsilon."""
        return float(_lib.client().ldpb_mech_epsilon(self._handle()))

    @property
    def epsilon_effective(self) -> float:
        """The effective epsilon: an upper bound on the privacy loss, <= epsilon; the ledger
        charges it."""
        return float(_lib.client().ldpb_mech_epsilon_effective(self._handle()))

    @property
    def kappa(self) -> float:
        """The quadratic curvature as configured."""
        return float(_lib.client().ldpb_mech_get_opts(self._handle()).contents.kappa)

    @property
    def is_bernoulli(self) -> bool:
        """True for the three Bernoulli kinds (reports are bits), False for Laplace."""
        return bool(_lib.client().ldpb_mech_is_bernoulli(self._handle()))

    @property
    def endpoints(self) -> Tuple[float, float]:
        """Bernoulli kinds: the implemented p(0), p(1)."""
        if not self.is_bernoulli:
            raise InvalidArgument("endpoints: only the Bernoulli mechanisms have them")
        p0, p1 = c_double(), c_double()
        _lib.client().ldpb_mech_endpoints(self._handle(), byref(p0), byref(p1))
        return p0.value, p1.value

    @property
    def grid(self) -> float:
        """Laplace: the output grid step (a power of two)."""
        if self.is_bernoulli:
            raise InvalidArgument("grid: only the Laplace mechanism has one")
        return float(_lib.client().ldpb_mech_laplace_grid(self._handle()))

    def prob_one(self, x01: float) -> float:
        """Bernoulli kinds: the implemented P(report = 1 | unit reward x01)."""
        if not self.is_bernoulli:
            raise InvalidArgument("prob_one: only the Bernoulli mechanisms have it")
        x = _check.in_range(x01, "x01", 0.0, 1.0)
        return float(_lib.client().ldpb_mech_prob_one(self._handle(), x))

    def privatize(self, rewards: Any, rng: Optional[Rng] = None,
                  out: Optional[np.ndarray] = None) -> np.ndarray:
        """Privatizes an array of raw rewards (any shape) in one C call.

        Args:
            rewards: real numbers (float or int dtype), all finite.
            rng: the noise source; default a fresh secure generator.
            out: an optional C-contiguous float64 array of the same shape to write into.

        Returns:
            float64 array of the same shape: 0/1 for the Bernoulli kinds, values on the Laplace
            grid (unit scale plus noise) for Laplace.

        Raises:
            TypeError: wrong dtype; InvalidArgument: NaN or infinity (nothing is drawn).
        """
        arr = _check.float_array(rewards, "rewards")
        if rng is not None and not isinstance(rng, Rng):
            raise TypeError(f"rng must be an ldpb.Rng, not {type(rng).__name__}")
        if out is None:
            res = np.empty_like(arr)
        else:
            if not isinstance(out, np.ndarray) or out.dtype != np.float64 or \
                    out.shape != arr.shape or not out.flags.c_contiguous or \
                    not out.flags.writeable:
                raise TypeError("out must be a writeable C-contiguous float64 array of the "
                                "rewards' shape")
            res = out
        gen = rng if rng is not None else Rng()
        err = _lib.client().ldpb_mech_privatize_batch(
            self._handle(), gen._handle(), arr.ctypes.data, arr.size, res.ctypes.data)
        raise_for(err, "privatize")
        return res

    def debias_mean(self, reports_sum: float, n: int) -> Tuple[float, bool]:
        """The de-biased mean on the unit scale of ``n`` reports summing to ``reports_sum``,
        and whether it is exact (unbiased) for any reward law (False: a plug-in estimate,
        exact for 0/1 rewards only; docs/privacy.md)."""
        s = _check.real(reports_sum, "reports_sum")
        k = _check.count(n, "n", 1)
        mu, exact = c_double(), c_int()
        raise_for(_lib.client().ldpb_mech_debias_mean(self._handle(), s, k, byref(mu),
                                                      byref(exact)), "debias_mean")
        return mu.value, bool(exact.value)

    def debias(self, reports: Any) -> float:
        """The de-biased mean (unit scale) of an array of this mechanism's reports."""
        arr = _check.float_array(reports, "reports")
        if arr.size == 0:
            raise InvalidArgument("debias: no reports")
        return self.debias_mean(float(arr.sum()), int(arr.size))[0]

    def debias_radius(self, n: int, delta: float) -> float:
        """A (1 - delta) confidence radius on the unit scale for the de-biased mean of n
        reports."""
        k = _check.count(n, "n", 1)
        d = _check.in_range(delta, "delta", 0.0, 1.0, lo_open=True)
        r = c_double()
        raise_for(_lib.client().ldpb_mech_debias_radius(self._handle(), k, d, byref(r)),
                  "debias_radius")
        return r.value


def privatize(rewards: Any, mechanism: str = "linear", epsilon: float = 1.0, *,
              seed: Optional[str] = None, range: Tuple[float, float] = (0.0, 1.0),
              kappa: Optional[float] = None) -> np.ndarray:
    """Privatizes an array of rewards with one mechanism, in one C call.

    Noise from the system's secure generator; ``seed`` (a text) makes it reproducible, the same
    draws as ``ldpb privatize --seed SEED`` for the same rewards: for simulations only.

    >>> import ldpb, numpy as np
    >>> y = ldpb.privatize(np.array([0.2, 0.9]), "laplace", 1.0, seed="demo")
    """
    m = Mechanism(mechanism, epsilon, range=range, kappa=kappa)
    try:
        rng = Rng.seeded(seed) if seed is not None else Rng()
        try:
            return m.privatize(rewards, rng)
        finally:
            rng.close()
    finally:
        m.close()


class AuditResult(NamedTuple):
    """The outcome of :func:`audit`, as ``ldpb audit`` prints it (docs/audit.md)."""
    passed: bool
    verdict: str
    eps_lower: float
    privacy_ok: bool
    fidelity_ok: bool
    support_ok: bool
    samples: int
    alpha: float
    fidelity_failures: int
    off_support: int
    miss: float


def audit(mechanism: str, epsilon: float, *, kappa: Optional[float] = None,
          samples: Optional[int] = None, alpha: Optional[float] = None,
          seed: Optional[str] = None) -> AuditResult:
    """Runs the empirical privacy audit of ``ldpb audit`` on a production mechanism.

    Same arguments, same rules, same verdict line as the command (``seed`` gives the draws of
    ``ldpb audit --seed SEED``; without it the secure generator). A FAIL is a result
    (``passed`` False), not an exception; bad arguments raise InvalidArgument / OutOfRange.
    """
    b = _check.text(mechanism, "mechanism")
    eps = _check.real(epsilon, "epsilon")
    kap = math.nan if kappa is None else _check.real(kappa, "kappa")
    n = 0 if samples is None else _check.count(samples, "samples", 1)
    al = 0.0 if alpha is None else _check.real(alpha, "alpha")
    if alpha is not None and al == 0.0:
        raise _check.OutOfRange("alpha 0 outside [1e-15, 0.5]")
    sd = None if seed is None else _check.text(seed, "seed")
    res = _lib.AuditResultC()
    msg = ctypes.create_string_buffer(256)
    err = _lib.sim().ldpb_audit_mech(b, eps, kap, n, al, sd, byref(res), msg, len(msg))
    raise_for(err, "audit", msg.value.decode(errors="replace"))
    return AuditResult(bool(res.pass_), res.verdict.decode(), res.eps_lower,
                       bool(res.privacy_ok), bool(res.fidelity_ok), bool(res.support_ok),
                       int(res.samples), res.alpha, int(res.fidelity_failures),
                       int(res.off_support), res.miss)
