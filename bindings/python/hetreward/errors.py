"""Exceptions: one per C status code, all subclasses of :class:`HetrewardError`.

Each carries ``status`` (the ``hetreward_status`` integer), ``status_name``
(``"HETREWARD_NON_FINITE"``, ...) and ``message`` (the library's last error message, which
names the offending argument and index). Errors about the caller's input also derive from
``ValueError`` and file errors from ``OSError``, so generic handlers catch them too.

Wrong numpy dtypes or layouts are refused before any C call with a plain ``TypeError`` or
``ValueError`` (the binding never copies an array behind your back).
"""

from __future__ import annotations

OK = 0
NULL_POINTER = 1
INVALID_ARGUMENT = 2
DIMENSION_MISMATCH = 3
NON_FINITE = 4
SINGULAR_INFORMATION = 5
NOT_CONVERGED = 6
IO = 7
BAD_FORMAT = 8
CANCELLED = 9
INTERNAL = 10


class HetrewardError(Exception):
    """A failed hetreward call: ``status`` code, ``status_name`` and ``message``."""

    status: int = -1

    def __init__(self, status: int, message: str, status_name: str | None = None):
        self.status = status
        self.message = message
        self.status_name = status_name or _NAMES.get(status, "HETREWARD_UNKNOWN_STATUS")
        super().__init__(f"{self.status_name}: {message}" if message else self.status_name)


class NullPointerError(HetrewardError):
    status = NULL_POINTER


class InvalidArgumentError(HetrewardError, ValueError):
    status = INVALID_ARGUMENT


class DimensionMismatchError(HetrewardError, ValueError):
    status = DIMENSION_MISMATCH


class NonFiniteError(HetrewardError, ValueError):
    status = NON_FINITE


class SingularInformationError(HetrewardError):
    status = SINGULAR_INFORMATION


class NotConvergedError(HetrewardError):
    status = NOT_CONVERGED


class HetrewardIOError(HetrewardError, OSError):
    status = IO


class BadFormatError(HetrewardError, ValueError):
    status = BAD_FORMAT


class CancelledError(HetrewardError):
    """The fit was cancelled (Fitter.cancel, a progress callback, or Ctrl-C)."""

    status = CANCELLED


class InternalError(HetrewardError):
    status = INTERNAL


_CLASSES = {
    cls.status: cls
    for cls in (
        NullPointerError,
        InvalidArgumentError,
        DimensionMismatchError,
        NonFiniteError,
        SingularInformationError,
        NotConvergedError,
        HetrewardIOError,
        BadFormatError,
        CancelledError,
        InternalError,
    )
}

_NAMES = {
    NULL_POINTER: "HETREWARD_NULL_POINTER",
    INVALID_ARGUMENT: "HETREWARD_INVALID_ARGUMENT",
    DIMENSION_MISMATCH: "HETREWARD_DIMENSION_MISMATCH",
    NON_FINITE: "HETREWARD_NON_FINITE",
    SINGULAR_INFORMATION: "HETREWARD_SINGULAR_INFORMATION",
    NOT_CONVERGED: "HETREWARD_NOT_CONVERGED",
    IO: "HETREWARD_IO",
    BAD_FORMAT: "HETREWARD_BAD_FORMAT",
    CANCELLED: "HETREWARD_CANCELLED",
    INTERNAL: "HETREWARD_INTERNAL",
}


def error_for(status: int, message: str, status_name: str | None = None) -> HetrewardError:
    """The exception of the right subclass for a status code."""
    return _CLASSES.get(status, HetrewardError)(status, message, status_name)
