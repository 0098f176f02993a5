"""SQLite through aiosqlite with one thread hop per statement, and none in a write turn.

SQLAlchemy's aiosqlite adapter sends every statement to the connection's
thread four times (open a cursor, execute, fetch, close) and BEGIN, COMMIT
and the pool's reset-on-return once each; each hop waits for the GIL and
for a pass of the event loop. Under 80 clients a loop pass takes
milliseconds, and a write turn (decision 0028) paid about 25 of them while
holding the one write lock every other writer queues for: at 80 clients
writes queued for seconds behind a turn made mostly of waiting (issue 12,
decision 0042).

This adapter keeps aiosqlite for what it is good at (a connection per
thread, opened and closed off the loop) and changes how statements run:

- a statement is one function on the sqlite3 connection (execute, fetch
  every row, close), sent to the connection's thread in one hop;
- a statement with no I/O of its own runs on the calling thread: a
  deferred ``BEGIN``, the ``COMMIT``/``ROLLBACK`` of a read transaction (it
  only drops a snapshot), and the pool's reset of a connection that has no
  transaction open;
- inside a write turn (``BEGIN IMMEDIATE`` taken, see
  :mod:`app.db.transactions`) statements run on the event loop's own thread
  for the turn's first :data:`INLINE_BUDGET` seconds: the turn then passes
  no loop iterations at all, so it lasts as long as SQLite takes, not as long
  as 80 requests' callbacks take. A turn that goes on longer (a large
  import or batch) hops again, so the loop is never held for long.

The sqlite3 connection is opened with ``check_same_thread=False``: it is
used by one task at a time (the pool checks it out to one connection), from
whichever thread runs the statement.

Relies on aiosqlite's ``Connection._conn`` and ``_execute`` (SQLAlchemy's
own adapter uses its ``_tx`` queue); ``tests/test_sqlite_driver.py`` pins what
this needs of them.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from sqlalchemy.dialects.sqlite.aiosqlite import (
    AsyncAdapt_aiosqlite_connection,
    AsyncAdapt_aiosqlite_dbapi,
)
from sqlalchemy.util import await_only

__all__ = ["INLINE_BUDGET", "DirectConnection", "DirectCursor", "DirectDBAPI", "dbapi"]

T = TypeVar("T")

INLINE_BUDGET = 0.025  # seconds of a write turn run on the loop's thread before hopping again
_NO_IO = frozenset({"BEGIN", "BEGIN DEFERRED"})


async def _ready(value: T) -> T:
    return value


class DirectConnection(AsyncAdapt_aiosqlite_connection):
    """An aiosqlite connection whose statements take one hop, or none.

    ``inline_until`` is set by the write turn once ``BEGIN IMMEDIATE`` holds
    the lock (:func:`app.db.transactions.install`) and cleared when the turn
    ends; ``writing`` is true for the whole turn.
    """

    __slots__ = ("begun", "inline_until", "writing")
    _cursor_cls: Any  # set below, once DirectCursor exists

    def __init__(self, dbapi: Any, connection: Any) -> None:
        super().__init__(dbapi, connection)
        self.inline_until = 0.0
        self.writing = False
        self.begun = 0.0  # when the current turn's BEGIN IMMEDIATE returned

    @property
    def raw(self) -> Any:
        """The sqlite3 connection (raises ValueError once closed, as aiosqlite does)."""
        return self._connection._conn

    def inline(self) -> bool:
        return self.writing and time.perf_counter() < self.inline_until

    def run(self, fn: Callable[[], T], *, no_io: bool = False) -> T:
        """Run ``fn`` against the sqlite3 connection: here, or in one hop to its thread."""
        if no_io or self.inline():
            # Still handed through SQLAlchemy's greenlet (its async execute
            # insists on one await), but as a finished coroutine: no loop pass.
            done: T = await_only(_ready(fn()))
            return done
        result: T = await_only(self._connection._execute(fn))
        return result

    def begin_read(self) -> None:
        """A deferred ``BEGIN``: takes no lock and reads nothing until the first statement."""
        raw = self.raw
        try:
            self.run(lambda: raw.execute("BEGIN"), no_io=True)
        except Exception as error:
            self._handle_exception(error)

    def try_begin_immediate(self) -> bool:
        """``BEGIN IMMEDIATE`` on this thread, without waiting: False when the lock is taken.

        The busy timeout is set to zero around it (three statements with no
        I/O), so a held lock answers at once instead of sleeping on the loop.
        """
        raw = self.raw

        def begin() -> bool:
            (timeout,) = raw.execute("PRAGMA busy_timeout").fetchone()
            raw.execute("PRAGMA busy_timeout=0")
            try:
                raw.execute("BEGIN IMMEDIATE")
                return True
            except self.dbapi.sqlite.OperationalError as exc:
                if "locked" in str(exc).lower() or "busy" in str(exc).lower():
                    return False
                raise
            finally:
                raw.execute(f"PRAGMA busy_timeout={int(timeout)}")

        try:
            taken: bool = self.run(begin, no_io=True)
        except Exception as error:
            self._handle_exception(error)
        return taken

    def begin_turn(self, budget: float = INLINE_BUDGET) -> None:
        self.writing = True
        self.begun = time.perf_counter()
        self.inline_until = self.begun + budget

    def end_turn(self) -> None:
        self.writing = False
        self.inline_until = 0.0

    def _end(self, name: str) -> None:
        try:
            raw = self.raw
        except ValueError:
            return  # closed: nothing to end (aiosqlite's adapter ignores it too)
        if not raw.in_transaction:
            return  # the pool's reset of an idle connection: no statement at all
        # A read transaction's end only drops its snapshot: no I/O, no hop.
        try:
            self.run(getattr(raw, name), no_io=not self.writing)
        except Exception as error:
            self._handle_exception(error)

    def commit(self) -> None:
        self._end("commit")

    def rollback(self) -> None:
        self._end("rollback")


class DirectCursor:
    """A cursor whose ``execute`` runs the statement and fetches its rows at once.

    Rows are buffered (as SQLAlchemy's adapter buffers them); server-side
    cursors keep SQLAlchemy's own class.
    """

    server_side = False
    __slots__ = ("_conn", "_rows", "arraysize", "description", "lastrowid", "rowcount")

    def __init__(self, adapt_connection: DirectConnection) -> None:
        self._conn = adapt_connection
        self._rows: collections.deque[Any] = collections.deque()
        self.description: Any = None
        self.rowcount = -1
        self.lastrowid: int | None = None
        self.arraysize = 1

    def _call(self, work: Callable[[Any], Any], no_io: bool = False) -> None:
        conn = self._conn

        def statement() -> tuple[Any, list[Any] | None, int, int | None]:
            cursor = conn.raw.cursor()
            try:
                work(cursor)
                description = cursor.description
                rows = cursor.fetchall() if description else None
                return description, rows, cursor.rowcount, cursor.lastrowid
            finally:
                cursor.close()

        try:
            description, rows, self.rowcount, self.lastrowid = conn.run(statement, no_io=no_io)
        except Exception as error:
            conn._handle_exception(error)
        self.description = description
        self._rows = collections.deque(rows or ())

    def execute(self, operation: str, parameters: Any = None) -> None:
        no_io = operation.strip().upper() in _NO_IO
        if parameters is None:
            self._call(lambda c: c.execute(operation), no_io)
        else:
            self._call(lambda c: c.execute(operation, parameters), no_io)

    def executemany(self, operation: str, seq_of_parameters: Any) -> None:
        rows = list(seq_of_parameters)
        self._call(lambda c: c.executemany(operation, rows))

    def fetchone(self) -> Any:
        return self._rows.popleft() if self._rows else None

    def fetchmany(self, size: int | None = None) -> Sequence[Any]:
        count = self.arraysize if size is None else size
        rows = self._rows
        return [rows.popleft() for _ in range(min(count, len(rows)))]

    def fetchall(self) -> Sequence[Any]:
        rows = list(self._rows)
        self._rows.clear()
        return rows

    def __iter__(self) -> Any:
        while self._rows:
            yield self._rows.popleft()

    def close(self) -> None:
        self._rows.clear()

    async def _async_soft_close(self) -> None:
        return None  # nothing to close: the sqlite3 cursor was closed with its statement

    def setinputsizes(self, *_sizes: Any) -> None:
        return None

    def setoutputsize(self, *_args: Any) -> None:
        return None

    def nextset(self) -> None:
        return None


DirectConnection._cursor_cls = DirectCursor


class DirectDBAPI(AsyncAdapt_aiosqlite_dbapi):
    """SQLAlchemy's aiosqlite DBAPI shim, handing out :class:`DirectConnection`."""

    def connect(self, *arg: Any, **kw: Any) -> DirectConnection:
        kw["check_same_thread"] = False
        connection = self.aiosqlite.connect(*arg, **kw)
        connection._thread.daemon = True
        return DirectConnection(self, await_only(connection))


def dbapi() -> DirectDBAPI:
    """The module object for ``create_async_engine(..., module=...)``."""
    import sqlite3

    import aiosqlite

    return DirectDBAPI(aiosqlite, sqlite3)
