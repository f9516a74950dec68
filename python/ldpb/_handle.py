"""The lifetime of one C handle, shared by the package's classes (internal)."""

from __future__ import annotations

import ctypes
from ctypes import CDLL, byref, c_size_t, c_void_p
from typing import Any, Callable, Optional, TypeVar

from .errors import raise_for

_H = TypeVar("_H", bound="Handle")


class Handle:
    """Owns one opaque C handle in ``self._h`` and frees it exactly once.

    A subclass names its library loader and free function in the class statement
    (``class Rng(Handle, lib=_lib.client, free="ldpb_rng_free")``); the closed-handle error
    names that class. A subclass of such a class (an app's own) inherits both. ``_save`` and
    ``_restore`` are the policies' state round trip through the C functions they name.
    """

    _h: Optional[c_void_p] = None
    _lib_of: Callable[[], CDLL]
    _free_name: str
    _owner: str

    def __init_subclass__(cls, *, lib: Optional[Callable[[], CDLL]] = None,
                          free: Optional[str] = None, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if free is not None:
            # A staticmethod, or the loader would be bound as a method of the instance.
            cls._lib_of = staticmethod(lib)  # type: ignore[assignment]
            cls._free_name = free
            cls._owner = cls.__name__

    def _handle(self) -> c_void_p:
        if not self._h:
            raise ValueError(f"{self._owner} is closed")
        return self._h

    def close(self) -> None:
        """Frees the C object (idempotent; also done when it is garbage-collected)."""
        # getattr: close() also runs from __del__ on an object whose __init__ raised early.
        h = getattr(self, "_h", None)
        if h:
            getattr(self._lib_of(), self._free_name)(h)
            self._h = None

    def _save(self, save: str) -> bytes:
        """The state the C function named ``save`` (``save(h, buf, cap, &len)``) writes: a first
        call without a buffer answers LDPB_ERANGE with the length, the second fills it."""
        fn = getattr(self._lib_of(), save)
        n = c_size_t()
        err = fn(self._handle(), None, 0, byref(n))
        if err != 3:  # LDPB_ERANGE is the size query's answer
            raise_for(err, "save")
        buf = ctypes.create_string_buffer(n.value)
        raise_for(fn(self._handle(), buf, n.value, byref(n)), "save")
        return buf.raw[:n.value]

    def _restore(self, restore: str, state: Any) -> None:
        """Hands ``state`` (bytes-like, else TypeError before any C call) to the C function
        named ``restore`` (``restore(h, data, len)``)."""
        if not isinstance(state, (bytes, bytearray, memoryview)):
            raise TypeError(f"state must be bytes, not {type(state).__name__}")
        data = bytes(state)
        raise_for(getattr(self._lib_of(), restore)(self._handle(), data, len(data)), "restore")

    def __enter__(self: _H) -> _H:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
