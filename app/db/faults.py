"""Which failures are the database's condition rather than a bug: 503 and 507.

A database that is unreachable (stopped, restarting, refusing connections),
busy past its wait budget, or out of disk is an operating condition the
client can act on ("retry later", "tell the operator the disk is full"), not
an internal error: it is answered 503 with ``Retry-After`` or 507, logged as
one line without a traceback, and the next request tries again (the pool
discards dead connections; nothing needs a restart).
"""

from __future__ import annotations

import errno

from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from app.errors import InsufficientStorage, Unavailable

__all__ = ["classify"]

# SQLSTATE classes and codes (PostgreSQL appendix A).
_UNAVAILABLE_CLASSES = ("08",)  # connection exception
_UNAVAILABLE_CODES = frozenset(
    {
        "57P01",  # admin_shutdown
        "57P02",  # crash_shutdown
        "57P03",  # cannot_connect_now (starting up, shutting down, recovery)
        "53300",  # too_many_connections
        "55P03",  # lock_not_available (lock_timeout)
        "57014",  # query_canceled (statement_timeout)
        "40001",  # serialization_failure
        "40P01",  # deadlock_detected
    }
)
_FULL_CODES = frozenset({"53100"})  # disk_full
_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
_SQLITE_BUSY = ("database is locked", "database is busy", "database table is locked")
_SQLITE_FULL = ("database or disk is full",)
_SQLITE_UNREACHABLE = ("unable to open database file", "disk i/o error")

FULL_MESSAGE = "the disk holding the database or the attachments is full: free space, then retry"


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen and len(seen) < 8:
        seen.append(current)
        orig = getattr(current, "orig", None)
        current = (
            orig if isinstance(orig, BaseException) else (current.__cause__ or current.__context__)
        )
    return seen


def classify(exc: BaseException) -> Unavailable | InsufficientStorage | None:
    """The honest error for ``exc``, or None when it is a genuine internal error."""
    for item in _chain(exc):
        if isinstance(item, Unavailable | InsufficientStorage):
            return item
        if isinstance(item, OSError) and item.errno in _FULL_ERRNOS:
            return InsufficientStorage(FULL_MESSAGE)
        if isinstance(item, PoolTimeout):
            return Unavailable("the database is busy: no connection free in time, retry shortly")
        if isinstance(item, DBAPIError) and item.connection_invalidated:
            return Unavailable("the database connection was lost: retry shortly")
        sqlstate = getattr(item, "sqlstate", None) or getattr(item, "pgcode", None)
        if isinstance(sqlstate, str):
            if sqlstate in _FULL_CODES:
                return InsufficientStorage(FULL_MESSAGE)
            if sqlstate in _UNAVAILABLE_CODES or sqlstate[:2] in _UNAVAILABLE_CLASSES:
                return Unavailable("the database is unavailable: retry shortly")
        text = str(item).lower()
        if any(s in text for s in _SQLITE_FULL):
            return InsufficientStorage(FULL_MESSAGE)
        if any(s in text for s in _SQLITE_BUSY):
            busy = Unavailable("the database is busy: retry shortly")
            busy.retry_after = 1
            return busy
        if isinstance(item, DBAPIError) and any(s in text for s in _SQLITE_UNREACHABLE):
            return Unavailable("the database file cannot be read or written: retry shortly")
        if isinstance(item, ConnectionError | TimeoutError) or (
            isinstance(item, OSError)
            and item.errno in (errno.ECONNREFUSED, errno.ENOENT)
            and "connect" in text
        ):
            return Unavailable("the database is unreachable: retry shortly")
        name = type(item).__name__
        if (
            name
            in (
                "CannotConnectNowError",
                "ConnectionDoesNotExistError",
                "ConnectionFailureError",
                "InterfaceError",
                "InternalClientError",
            )
            and "asyncpg" in type(item).__module__
        ):
            return Unavailable("the database connection was lost: retry shortly")
    return None
