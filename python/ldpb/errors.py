"""Exceptions: one class per ``ldpb_err`` code of the C library, all under :class:`LdpbError`.

Every error a C call returns is raised as the class of its code, with the code, its name
(``"LDPB_EBUDGET"``), the library's text for it, and, where the library gives one, a detail
message (the client's last error, a policy's or the simulator's refusal). Bad arguments found in
Python, before any C call, raise the same classes (:class:`InvalidArgument` for malformed values
such as NaN, :class:`OutOfRange` for values outside their range) or ``TypeError`` for a wrong
type or dtype.
"""

from __future__ import annotations

from typing import Dict, Optional, Type


class LdpbError(Exception):
    """An error of the ldpb library.

    Attributes:
        code: the ``ldpb_err`` value (0 never appears here).
        name: the constant's name, e.g. ``"LDPB_EBUDGET"``.
        detail: the library's one-line explanation of this failure, or ``""``.
    """

    code: int = -1
    name: str = "LDPB_E?"

    def __init__(self, message: str, code: Optional[int] = None, detail: str = "") -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.detail = detail


class InvalidArgument(LdpbError, ValueError):
    """LDPB_EINVAL: an argument is malformed (NaN, NULL, unknown name, bad syntax)."""
    code, name = 1, "LDPB_EINVAL"


class OutOfMemory(LdpbError, MemoryError):
    """LDPB_ENOMEM: an allocation failed."""
    code, name = 2, "LDPB_ENOMEM"


class OutOfRange(LdpbError, ValueError):
    """LDPB_ERANGE: an argument is well-formed but outside its allowed range."""
    code, name = 3, "LDPB_ERANGE"


class StateError(LdpbError):
    """LDPB_ESTATE: the call conflicts with the object's state."""
    code, name = 4, "LDPB_ESTATE"


class ProtocolError(LdpbError):
    """LDPB_EPROTO: a message violates the wire protocol."""
    code, name = 5, "LDPB_EPROTO"


class CryptoError(LdpbError):
    """LDPB_ECRYPTO: a cryptographic operation failed (bad key, forged message)."""
    code, name = 6, "LDPB_ECRYPTO"


class TransportError(LdpbError, ConnectionError):
    """LDPB_ETRANSPORT: the transport failed."""
    code, name = 7, "LDPB_ETRANSPORT"


class Timeout(LdpbError, TimeoutError):
    """LDPB_ETIMEDOUT: no answer in time."""
    code, name = 8, "LDPB_ETIMEDOUT"


class BudgetExceeded(LdpbError):
    """LDPB_EBUDGET: the privacy budget (lifetime or per report) would be exceeded."""
    code, name = 9, "LDPB_EBUDGET"


class IOFailure(LdpbError, OSError):
    """LDPB_EIO: a file could not be read, written or synced."""
    code, name = 10, "LDPB_EIO"


class Corrupt(LdpbError):
    """LDPB_ECORRUPT: stored data failed validation; it is never silently reset."""
    code, name = 11, "LDPB_ECORRUPT"


class Replay(LdpbError):
    """LDPB_EREPLAY: a replayed, reflected or stale message."""
    code, name = 12, "LDPB_EREPLAY"


class VersionMismatch(LdpbError):
    """LDPB_EVERSION: the peer speaks another protocol or frame version."""
    code, name = 13, "LDPB_EVERSION"


class AuthError(LdpbError):
    """LDPB_EAUTH: the client key is not allowed by the server."""
    code, name = 14, "LDPB_EAUTH"


class NotFound(LdpbError):
    """LDPB_ENOTFOUND: the assignment id is unknown."""
    code, name = 15, "LDPB_ENOTFOUND"


class Expired(LdpbError):
    """LDPB_EEXPIRED: the assignment has expired."""
    code, name = 16, "LDPB_EEXPIRED"


class Busy(LdpbError):
    """LDPB_EBUSY: the server is overloaded; retry later."""
    code, name = 17, "LDPB_EBUSY"


class NotSupported(LdpbError):
    """LDPB_ENOTSUP: a well-formed request of a kind the peer (or this call) does not support."""
    code, name = 18, "LDPB_ENOTSUP"


class NoExperiment(LdpbError):
    """LDPB_ENOEXPERIMENT: the experiment is unknown or stopped."""
    code, name = 19, "LDPB_ENOEXPERIMENT"


_BY_CODE: Dict[int, Type[LdpbError]] = {
    c.code: c for c in (InvalidArgument, OutOfMemory, OutOfRange, StateError, ProtocolError,
                        CryptoError, TransportError, Timeout, BudgetExceeded, IOFailure,
                        Corrupt, Replay, VersionMismatch, AuthError, NotFound, Expired, Busy,
                        NotSupported, NoExperiment)
}


def error_class(code: int) -> Type[LdpbError]:
    """The exception class of an ``ldpb_err`` code (:class:`LdpbError` for an unknown one)."""
    return _BY_CODE.get(code, LdpbError)


def raise_for(code: int, what: str, detail: str = "") -> None:
    """Raises the exception of `code` for the call `what`, unless code is 0 (LDPB_OK)."""
    if code == 0:
        return
    from . import _lib
    lib = _lib.client()
    text = lib.ldpb_strerror(code).decode()
    cls = error_class(code)
    msg = f"{what}: {text}" + (f": {detail}" if detail else "")
    err = cls(msg, code=code, detail=detail)
    if cls is LdpbError:
        err.name = lib.ldpb_errname(code).decode()
    raise err
