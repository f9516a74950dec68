"""Argument checks done in Python before any C call (internal)."""

from __future__ import annotations

import math
import numbers
from typing import Any, Dict, Tuple

import numpy as np

from .errors import InvalidArgument, OutOfRange


def real(value: Any, what: str) -> float:
    """A finite real number, else TypeError (not a number) or InvalidArgument (NaN, inf)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{what} must be a real number, not {type(value).__name__}")
    v = float(value)
    if not math.isfinite(v):
        raise InvalidArgument(f"{what} must be finite, not {v}")
    return v


def in_range(value: Any, what: str, lo: float, hi: float, lo_open: bool = False) -> float:
    """A finite real in [lo, hi] (or (lo, hi] with lo_open), else the errors of real() or
    OutOfRange."""
    v = real(value, what)
    if (v <= lo if lo_open else v < lo) or v > hi:
        left = "(" if lo_open else "["
        raise OutOfRange(f"{what} {v!r} outside {left}{lo:g}, {hi:g}]")
    return v


def count(value: Any, what: str, lo: int = 0, hi: int = 2**64 - 1) -> int:
    """An integer in [lo, hi], else TypeError or OutOfRange."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{what} must be an integer, not {type(value).__name__}")
    v = int(value)
    if v < lo or v > hi:
        raise OutOfRange(f"{what} {v} outside [{lo}, {hi}]")
    return v


def text(value: Any, what: str) -> bytes:
    """A non-empty str without NUL bytes, as UTF-8."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, not {type(value).__name__}")
    if not value:
        raise InvalidArgument(f"{what} must not be empty")
    if "\0" in value:
        raise InvalidArgument(f"{what} must not contain NUL characters")
    return value.encode()


def float_array(values: Any, what: str) -> np.ndarray:
    """A C-contiguous float64 array of finite values (a copy only where needed).

    Real dtypes (floats, integers) are accepted; bool, complex, object, strings and datetimes
    raise TypeError; NaN or infinity raises InvalidArgument naming the first bad index."""
    arr = np.asarray(values)
    if arr.dtype.kind not in "fiu":
        raise TypeError(f"{what} must be an array of real numbers (float or int dtype), "
                        f"not dtype {arr.dtype}")
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    if arr.size and not np.isfinite(arr).all():
        i = int(np.flatnonzero(~np.isfinite(arr.ravel()))[0])
        raise InvalidArgument(f"{what} must be finite: element {i} is {arr.ravel()[i]}")
    return arr


def pair(value: Any, what: str) -> Tuple[float, float]:
    """A range ``(lo, hi)`` of finite reals with lo < hi, else TypeError or InvalidArgument."""
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise TypeError(f"{what} must be a pair (lo, hi)")
    lo = real(value[0], f"{what} lo")
    hi = real(value[1], f"{what} hi")
    if not lo < hi:
        raise InvalidArgument(f"{what} lo {lo!r} must be below hi {hi!r}")
    return lo, hi


def known(params: Dict[str, Any], names: Tuple[str, ...], owner: str) -> Dict[str, Any]:
    """The keyword parameters that are not None, after a TypeError for any name not in
    ``names`` (as Python raises it for an unknown keyword of ``owner``)."""
    for key in params:
        if key not in names:
            raise TypeError(f"{owner}() got an unknown parameter {key!r} (expected one of "
                            f"{', '.join(names)})")
    return {key: value for key, value in params.items() if value is not None}
