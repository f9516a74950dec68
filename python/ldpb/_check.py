"""Argument checks done in Python before any C call (internal)."""

from __future__ import annotations

import math
import numbers
from typing import Any

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
