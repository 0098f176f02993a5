"""SQL functions Daybook needs on every SQLite connection.

``register`` is called by the engine's ``connect`` hook (and by migration
0002). It takes either a plain ``sqlite3.Connection`` or SQLAlchemy's
aiosqlite adapter, whose underlying connection lives on another thread: there
the calls go through ``run_async``.

- ``daybook_fold(text)``: the filter's case folding (``app.fold``),
  used by ``content.contains`` and by the ``memo_trgm`` triggers.
- ``regexp(pattern, value)``: backs ``value REGEXP pattern`` (``.matches()``)
  with RE2, so a hostile pattern cannot backtrack catastrophically.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

import re2

from app.fold import fold


def daybook_fold(value: str | None) -> str | None:
    return None if value is None else fold(value)


_OPTIONS = re2.Options()
_OPTIONS.log_errors = False


@lru_cache(maxsize=256)
def _compiled(pattern: str) -> Any:
    return re2.compile(pattern, _OPTIONS)


def regexp(pattern: str | None, value: str | None) -> int:
    if pattern is None or value is None:
        return 0
    try:
        return 1 if _compiled(pattern).search(value) is not None else 0
    except re2.error:
        return 0


_FUNCTIONS: list[tuple[str, int, Callable[..., Any]]] = [
    ("daybook_fold", 1, daybook_fold),
    ("regexp", 2, regexp),
]


def register(dbapi_connection: Any) -> None:
    """Register Daybook's functions on ``dbapi_connection`` (sqlite3 or the aiosqlite adapter).

    Both a plain ``sqlite3.Connection`` and SQLAlchemy 2.1's aiosqlite adapter
    have a synchronous ``create_function``; older adapters only offer
    ``run_async``, which hands over the driver connection on its own thread.
    """
    create = getattr(dbapi_connection, "create_function", None)
    for name, narg, func in _FUNCTIONS:
        if create is not None:
            create(name, narg, func, deterministic=True)
        else:
            dbapi_connection.run_async(
                lambda conn, name=name, narg=narg, func=func: conn.create_function(
                    name, narg, func, deterministic=True
                )
            )
