"""The database's generation: a token that changes whenever any commit lands.

A value kept in one process may be served again only while the database
it was computed from is unchanged (the guide: caches live in the database
or are invalidated through it). Both dialects can tell that without a
counter table, which every writer would have to update (on PostgreSQL a
row every write transaction locks until it commits):

- SQLite: ``PRAGMA data_version`` on a connection of its own. Its value
  changes whenever another connection, in this process or any other, has
  committed since the last call; that connection never writes, so every
  commit is "another connection's". The pragma reads the WAL index in
  shared memory (no file I/O), so it runs on the event loop's thread in
  microseconds; a busy database answers None (no token, nothing reused).
- PostgreSQL: ``pg_current_snapshot()``. Two equal snapshots have the same
  in-progress transactions and the same next transaction id, so nothing
  committed (or aborted) in between; any other activity only makes them
  differ, which costs a recomputation, never a stale answer.

The token must be read *before* the snapshot the cached value is computed
in: then that value is at least as new as the token, and a later request
that reads the same token proves nothing committed in between, so the
value still equals what it would compute. ``app.api.page_cache`` reads it
before the request's transaction is opened. On PostgreSQL the caller's own
statement (``app.auth.middleware``) reads it as one more column
(:func:`snapshot_token`), which runs before that transaction too, so a
signed-in request pays no round trip for it.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from typing import Protocol

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import FunctionElement

from app.db.transactions import database_file

__all__ = ["GENERATION_SCOPE_KEY", "Generation", "open_generation", "snapshot_token"]

# The token the caller's statement read, left in the request's scope.
GENERATION_SCOPE_KEY = "daybook.generation"


class _SnapshotToken(FunctionElement[str]):
    type = sa.String()
    inherit_cache = True
    name = "daybook_snapshot_token"


@compiles(_SnapshotToken)
def _no_token(_element: _SnapshotToken, _compiler: SQLCompiler, **_kw: object) -> str:
    return "NULL"  # SQLite: a pooled connection's data_version is its own, not comparable


@compiles(_SnapshotToken, "postgresql")
def _pg_token(_element: _SnapshotToken, _compiler: SQLCompiler, **_kw: object) -> str:
    return "pg_current_snapshot()::text"


def snapshot_token() -> sa.ColumnElement[str]:
    """The generation as a column of another statement (PostgreSQL; NULL on SQLite)."""
    return _SnapshotToken().label("generation")


class Generation(Protocol):
    async def read(self) -> str | None:
        """The current token, or None when it cannot be known now."""
        ...

    def read_local(self) -> str | None:
        """The current token when reading it takes no round trip to a server
        (SQLite), else None: only then is a value as small as the caller's row
        worth keeping against it (``app.auth.caller_rows``)."""
        ...

    def close(self) -> None: ...


class SqliteGeneration:
    """``PRAGMA data_version`` of a connection that only ever runs that pragma."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

    def _read(self) -> str | None:
        with self._lock:
            try:
                if self._conn is None:
                    # timeout=0: a reader that must wait (a WAL recovery) is
                    # answered None at once rather than holding the loop.
                    self._conn = sqlite3.connect(
                        self._path, timeout=0, isolation_level=None, check_same_thread=False
                    )
                (value,) = self._conn.execute("PRAGMA data_version").fetchone()
            except sqlite3.Error:
                self.close()
                return None
            return str(value)

    async def read(self) -> str | None:
        return self._read()

    def read_local(self) -> str | None:
        return self._read()

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()
            self._conn = None


class PostgresGeneration:
    """``pg_current_snapshot()``, read on a pooled connection of its own."""

    _STATEMENT = sa.text("SELECT pg_current_snapshot()::text")

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine

    async def read(self) -> str | None:
        try:
            async with self._engine.connect() as conn:
                return str((await conn.execute(self._STATEMENT)).scalar_one())
        except (sa.exc.DBAPIError, OSError):
            return None

    def read_local(self) -> str | None:
        return None

    def close(self) -> None:
        pass


class NoGeneration:
    """An in-memory SQLite database: no second connection sees it."""

    async def read(self) -> str | None:
        return None

    def read_local(self) -> str | None:
        return None

    def close(self) -> None:
        pass


def open_generation(engine: AsyncEngine) -> Generation:
    """The generation reader for ``engine``'s database."""
    if engine.dialect.name == "postgresql":
        return PostgresGeneration(engine)
    path = database_file(engine.url.database)
    return NoGeneration() if path is None else SqliteGeneration(path)
