"""Read and write transactions: who takes the write lock, when, and for how long.

SQLite (pysqlite/aiosqlite) would otherwise open transactions on its own,
late and in the wrong mode: the driver issued no BEGIN before the first DML
statement, so the first ``begin_nested()`` SAVEPOINT opened the real
transaction and its RELEASE committed half a write; and a transaction that
had read before writing got ``SQLITE_BUSY`` at once (a stale snapshot cannot
wait for the lock), whatever the busy timeout. Here SQLAlchemy's documented
recipe takes control: the driver's own transaction handling is off
(``isolation_level = None``) and the engine's ``begin`` event emits

- ``BEGIN`` (deferred) for a read: one WAL snapshot for the whole read,
  never blocking or blocked by the writer;
- ``BEGIN IMMEDIATE`` for a write: the write lock is taken before the first
  statement, so nothing read inside the transaction can be stale and the
  busy timeout applies. In-process writers queue on an asyncio lock
  (:class:`WriterGate`, first come first served, without spinning in
  SQLite's busy handler); the gate's holder then takes the file lock that
  orders Daybook's processes on one file (:class:`ProcessTurn`, ``serve
  --workers``), so a turn passes to another process within a millisecond
  instead of after SQLite's busy handler's growing sleeps; anything else
  writing the file (a backup, the CLI) is waited for by the busy timeout
  and a retry with back-off. Past :data:`WRITE_WAIT` seconds:
  :class:`DatabaseBusy` (503).

SAVEPOINTs now nest inside that transaction and commit nothing by
themselves: a write is all or nothing.

PostgreSQL: reads run in ``REPEATABLE READ READ ONLY`` (one snapshot for
every statement of the read), writes in ``READ COMMITTED`` (row locks plus
compare-and-swap in the statements themselves, see ``app.memos.service``).

A write *request* (:func:`lazy_write`) opens its transaction at its first
statement, not when the connection is taken: the caller is resolved and the
body parsed before, and :func:`read_phase` lets a handler (or the request
context, for the access settings: ``app.deps``) read what it needs for
validation in a short read transaction first, so rendering Markdown and
hashing passwords happen while no lock is held.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import enum
import fcntl
import os
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import sqlalchemy as sa
import structlog
from sqlalchemy.engine import Connection
from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.util import await_only

from app.db.driver import DirectConnection, DirectDBAPI
from app.errors import Unavailable

__all__ = [
    "WRITE_WAIT",
    "DatabaseBusy",
    "TxKind",
    "WriterGate",
    "end_write",
    "install",
    "lazy_write",
    "read_phase",
    "read_transaction",
    "serialize",
    "transaction",
    "write_transaction",
]

log = structlog.get_logger("daybook.db")

TX_OPTION = "daybook_tx"
WRITE_WAIT = 10.0  # seconds a write waits for its turn before 503
# Seconds a process keeps the process turn while its own writers queue behind
# the gate (decision 0043): a turn handed to another process costs a pass of
# that process's loop, so turns go between processes in batches.
BATCH = 0.010
_BACKOFF_FIRST, _BACKOFF_MAX = 0.005, 0.25


class TxKind(enum.Enum):
    READ = "read"
    WRITE = "write"


class DatabaseBusy(Unavailable):
    """The write lock was not free within the wait budget: retry later (503)."""

    retry_after = 1


def is_busy(exc: BaseException) -> bool:
    """SQLite's SQLITE_BUSY / SQLITE_LOCKED, by message (the driver has no codes on 3.11)."""
    text = str(getattr(exc, "orig", exc)).lower()
    return "database is locked" in text or "database is busy" in text or "is locked" in text


class ProcessTurn:
    """The write turn between Daybook's processes on one SQLite file (decision 0028).

    SQLite's own lock is fair to nobody: a process that misses it sleeps in
    the busy handler (or our back-off) for up to a quarter of a second while
    the holder's process hands the lock to its next local writer at once. At
    80 clients on two workers that starved one worker past the wait budget
    (25 of 4,445 requests were 503). An ``flock`` on a file beside the
    database, polled every millisecond by the one waiting writer of each
    process, hands the turn over within a millisecond of its release. The
    descriptor is opened per process (a forked worker must not share its
    parent's open file description, which would share the lock).
    """

    POLL = 0.001

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd: int | None = None
        self._pid = 0

    def _descriptor(self) -> int:
        if self._fd is None or self._pid != os.getpid():
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            self._pid = os.getpid()
        return self._fd

    def _take(self, deadline: float, abandon: threading.Event) -> bool:
        fd = self._descriptor()
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                if abandon.is_set() or time.monotonic() >= deadline:
                    return False
                time.sleep(self.POLL)

    async def acquire(self, wait: float) -> None:
        abandon = threading.Event()
        if self._take(0.0, abandon):  # free: one try here, no thread hop
            return
        deadline = time.monotonic() + wait
        loop = asyncio.get_running_loop()
        done: asyncio.Future[bool] = loop.create_future()
        taken = [False]

        def poll() -> None:
            taken[0] = self._take(deadline, abandon)
            loop.call_soon_threadsafe(_settle, done, taken[0])

        # A thread of its own that settles the future directly: through
        # to_thread and shield the waiting writer woke three loop passes after
        # the lock was free, and the lock stood idle meanwhile (decision 0043).
        poller = threading.Thread(target=poll, name="daybook-process-turn", daemon=True)
        poller.start()
        try:
            got = await done
        except asyncio.CancelledError:
            # The request went away: stop the poller and wait for it (it checks
            # every POLL), so that a lock it took meanwhile is released, never left
            # held by a future nobody awaits.
            abandon.set()
            poller.join()
            if taken[0]:
                self.release()
            raise
        if not got:
            raise DatabaseBusy(
                f"the database is busy: no write turn within {wait:.0f} s, retry shortly"
            )

    def release(self) -> None:
        if self._fd is not None and self._pid == os.getpid():
            with contextlib.suppress(OSError):
                fcntl.flock(self._fd, fcntl.LOCK_UN)


def _settle(future: asyncio.Future[bool], taken: bool) -> None:
    if not future.done():
        future.set_result(taken)


def database_file(database: str | None) -> str | None:
    """A SQLite URL's database file; None for in-memory and ``file:`` URI databases,
    which no other connection (or process) opens by path."""
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return database


def turn_file(database: str | None) -> str | None:
    """The lock file beside a SQLite database file (none for in-memory databases)."""
    path = database_file(database)
    return None if path is None else f"{path}-writer.lock"


class Turnstile:
    """An asyncio lock whose release wakes every waiter, not just the next one.

    ``asyncio.Lock`` wakes one waiter per release, and that waiter runs only
    when the event loop reaches it: behind every callback already queued, a
    whole pass of a loop serving 80 clients (11 to 15 ms), while the write
    lock stands idle (issue 12: busy a third of the time with 10 to 25
    writers queued). A write turn runs on the loop's thread from BEGIN to
    COMMIT (decision 0042), so the waiters woken at once run one after
    another in the same pass: the first takes the turn, finishes it and
    releases it before the next one runs, which then finds it free. A waiter
    that finds it still held (the turn waited on something) waits again,
    keeping its place: the first in line is the one that may take it, and a
    newcomer never barges past a queue. Decision 0043.
    """

    __slots__ = ("_held", "_waiters")

    def __init__(self) -> None:
        self._held = False
        self._waiters: collections.deque[_Waiter] = collections.deque()

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    def locked(self) -> bool:
        return self._held

    async def acquire(self) -> None:
        if not self._held and not self._waiters:
            self._held = True
            return
        me = _Waiter(asyncio.get_running_loop().create_future())
        self._waiters.append(me)
        try:
            while True:
                await me.woken
                if not self._held and self._waiters[0] is me:
                    self._waiters.popleft()
                    self._held = True
                    return
                me.woken = asyncio.get_running_loop().create_future()
        except BaseException:
            self._waiters.remove(me)
            if not self._held:
                self._wake_all()  # the one in line behind this one may take it now
            raise

    def release(self) -> None:
        if not self._held:
            raise RuntimeError("Turnstile.release() of an unheld turnstile")
        self._held = False
        self._wake_all()

    def _wake_all(self) -> None:
        for waiter in self._waiters:
            if not waiter.woken.done():
                waiter.woken.set_result(None)


class _Waiter:
    __slots__ = ("woken",)

    def __init__(self, woken: asyncio.Future[None]) -> None:
        self.woken = woken


class WriterGate:
    """One SQLite writer at a time per process, in arrival order.

    SQLite allows one writer per database; waiting for it inside SQLite means
    sleeping in its busy handler with growing pauses, so a queue of 50
    writers became a lottery with multi-second tails. The gate is an asyncio
    lock, taken by the ``begin`` event of a write transaction and released
    when it ends (or, as a safety net, when its connection returns to the
    pool). Bound lazily to the running loop, so one engine survives
    ``asyncio.run`` being called more than once (the CLI does).
    """

    def __init__(self, turn: ProcessTurn | None = None) -> None:
        self._lock: Turnstile | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._holder: DirectConnection | None = None  # the current writer's connection
        self._task: asyncio.Task[Any] | None = None
        self._turn = turn
        self._turn_since: float | None = None  # when this process took the process turn
        self.stats: TurnStats | None = TurnStats.from_env()
        self._turn_started = 0.0
        self.statements: list[str] = []
        self.queued = 0  # writers waiting behind this turn when it began (TurnStats)

    def _current(self) -> Turnstile:
        loop = asyncio.get_running_loop()
        if self._lock is None or self._loop is not loop:
            self._release_turn()  # a turn kept by a loop that is gone
            self._lock, self._loop, self._holder = Turnstile(), loop, None
        return self._lock

    async def acquire(self, holder: DirectConnection, wait: float) -> None:
        lock = self._current()
        if self._holder is holder:
            return
        task = asyncio.current_task()
        if self._holder is not None and task is not None and self._task is task:
            # A second write transaction opened while this task's first is open
            # would wait for itself: fail at once, naming the bug.
            raise RuntimeError("nested write transaction: the task already holds the write turn")
        try:
            # asyncio.timeout, not wait_for: on 3.11 wait_for runs the acquire in a
            # task of its own, and waking this one after it costs a loop pass.
            async with asyncio.timeout(wait):
                await lock.acquire()
        except TimeoutError:
            raise DatabaseBusy(
                f"the database is busy: no write turn within {wait:.0f} s, retry shortly"
            ) from None
        if self._turn is not None and self._turn_since is None:
            try:
                await self._turn.acquire(wait)
            except BaseException:
                lock.release()
                raise
            self._turn_since = time.monotonic()
        self._holder, self._task = holder, task
        if self.stats is not None:
            self._turn_started = time.perf_counter()
            self.statements = []
            self.queued = lock.waiting

    def release(self, holder: Any) -> None:
        if self._holder is not None and self._holder is holder and self._lock is not None:
            if self.stats is not None:
                begun = self._holder.begun or self._turn_started
                self.stats.add(
                    time.perf_counter() - self._turn_started,
                    self.statements,
                    begin=begun - self._turn_started,
                    queued=self.queued,
                )
            self._holder.end_turn()
            self._holder = self._task = None
            lock = self._lock
            kept = self._turn_since is not None and time.monotonic() - self._turn_since < BATCH
            if not (kept and lock.waiting):
                self._release_turn()
            lock.release()  # wakes this process's writers, who may take the kept turn
            if self._turn_since is not None and self._loop is not None:
                # After every writer just woken has had its chance: a kept turn
                # nobody took goes back to the other processes.
                self._loop.call_soon(self._release_idle_turn)

    def _release_idle_turn(self) -> None:
        if self._lock is not None and not self._lock.locked():
            self._release_turn()

    def _release_turn(self) -> None:
        if self._turn is not None and self._turn_since is not None:
            self._turn.release()
        self._turn_since = None

    @property
    def held(self) -> bool:
        return self._holder is not None


class TurnStats:
    """Write turns measured (``DAYBOOK_TURN_STATS=path``, for bench/): how long
    each held the gate and which statements ran under it, one JSON line per
    turn, written as it ends (a worker stopped by a signal runs no atexit)."""

    def __init__(self, path: str) -> None:
        self.path = path

    @classmethod
    def from_env(cls) -> TurnStats | None:
        path = os.environ.get("DAYBOOK_TURN_STATS")
        return cls(f"{path}.{os.getpid()}") if path else None

    def add(self, held: float, statements: list[str], begin: float = 0.0, queued: int = 0) -> None:
        import json

        line = {
            "held": held,
            "begin": begin,
            "queued": queued,
            "at": time.perf_counter(),
            "statements": statements,
        }
        with open(self.path, "a") as out:
            out.write(json.dumps(line) + "\n")


_GATE_ATTR = "_daybook_writer_gate"


def gate_of(engine: AsyncEngine | sa.Engine) -> WriterGate | None:
    sync = engine.sync_engine if isinstance(engine, AsyncEngine) else engine
    gate = getattr(sync, _GATE_ATTR, None)
    return gate if isinstance(gate, WriterGate) else None


def _kind(conn: Connection | None) -> TxKind:
    if conn is None:
        return TxKind.READ
    kind = conn.get_execution_options().get(TX_OPTION, TxKind.READ)
    return kind if isinstance(kind, TxKind) else TxKind.READ


def _begin_immediate(conn: Connection, holder: DirectConnection, budget: float) -> None:
    """BEGIN IMMEDIATE, retried with back-off while another process writes.

    First one try on this thread that does not wait (the lock is almost
    always free: Daybook's processes take turns on :class:`ProcessTurn`);
    only when something else holds it (a backup, the CLI) the waiting tries
    go to the connection's thread, where SQLite's busy timeout may sleep.
    """
    if holder.try_begin_immediate():
        return
    deadline = time.monotonic() + budget
    delay = _BACKOFF_FIRST
    while True:
        try:
            conn.exec_driver_sql("BEGIN IMMEDIATE")
            return
        except OperationalError as exc:
            if not is_busy(exc):
                raise
            if time.monotonic() + delay > deadline:
                raise DatabaseBusy(
                    "the database is locked by another process: retry shortly"
                ) from None
        await_only(asyncio.sleep(delay))
        delay = min(delay * 2, _BACKOFF_MAX)


def install(engine: AsyncEngine, *, write_wait: float | None = None) -> None:
    """Take control of BEGIN on a SQLite engine (a no-op on PostgreSQL)."""
    if engine.dialect.name != "sqlite":
        return
    if not isinstance(engine.dialect.dbapi, DirectDBAPI):
        # The turn's inline statements and the no-wait BEGIN need app.db.driver.
        raise TypeError("a SQLite engine needs app.db.driver: build it with app.db.engine")
    if write_wait is None:
        write_wait = WRITE_WAIT
    sync = engine.sync_engine
    path = turn_file(engine.url.database)
    gate = WriterGate(ProcessTurn(path) if path is not None else None)
    setattr(sync, _GATE_ATTR, gate)

    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        # After the pragmas (app.db.engine): the driver emits no BEGIN of its own.
        dbapi_connection.isolation_level = None

    def on_begin(conn: Connection) -> None:
        holder = conn.connection.dbapi_connection
        assert isinstance(holder, DirectConnection)  # checked for the engine above
        if _kind(conn) is TxKind.WRITE:
            await_only(gate.acquire(holder, write_wait))
            try:
                _begin_immediate(conn, holder, write_wait)
            except BaseException:
                gate.release(holder)
                raise
            # The lock is held: the turn's statements run on this thread, no
            # loop passes between them (app.db.driver, decision 0042).
            holder.begin_turn()
        else:
            holder.begin_read()  # no I/O: straight to SQLite, not through an execution

    def on_checkin(dbapi_connection: Any, _record: Any) -> None:
        gate.release(dbapi_connection)

    sa.event.listen(sync, "connect", on_connect)
    sa.event.listen(sync, "begin", on_begin)
    if gate.stats is not None:

        def on_execute(conn: Connection, _c: Any, statement: str, *_: Any) -> None:
            holder: Any = conn.connection.dbapi_connection
            if gate.held and holder is gate._holder:
                gate.statements.append(statement[:70])

        sa.event.listen(sync, "before_cursor_execute", on_execute)
    sa.event.listen(sync.pool, "checkin", on_checkin)


def _release(conn: AsyncConnection) -> None:
    gate = gate_of(conn.engine)
    if gate is not None and conn.sync_connection is not None and not conn.closed:
        with contextlib.suppress(Exception):
            gate.release(conn.sync_connection.connection.dbapi_connection)


async def _options(conn: AsyncConnection, kind: TxKind) -> None:
    if conn.dialect.name == "postgresql":
        if kind is TxKind.READ:
            await conn.execution_options(
                isolation_level="REPEATABLE READ", postgresql_readonly=True, **{TX_OPTION: kind}
            )
        else:
            await conn.execution_options(isolation_level="READ COMMITTED", **{TX_OPTION: kind})
    else:
        await conn.execution_options(**{TX_OPTION: kind})


async def _finish(conn: AsyncConnection, ok: bool) -> None:
    try:
        if conn.in_transaction():
            if ok:
                await conn.commit()
            else:
                # The block's own error is the one to report, not a failed rollback
                # (a connection the database dropped is discarded by the pool).
                with contextlib.suppress(Exception):
                    await conn.rollback()
    finally:
        _release(conn)


@contextlib.asynccontextmanager
async def transaction(engine: AsyncEngine, kind: TxKind) -> AsyncIterator[AsyncConnection]:
    """A connection whose transaction opens at its first statement, in ``kind``'s mode.

    Committed when the block exits normally, rolled back when it raises.
    """
    async with engine.connect() as conn:
        await _options(conn, kind)
        try:
            yield conn
        except BaseException:
            await _finish(conn, ok=False)
            raise
        await _finish(conn, ok=True)


def read_transaction(
    engine: AsyncEngine,
) -> contextlib.AbstractAsyncContextManager[AsyncConnection]:
    """One snapshot for everything read in the block."""
    return transaction(engine, TxKind.READ)


def lazy_write(engine: AsyncEngine) -> contextlib.AbstractAsyncContextManager[AsyncConnection]:
    """A write transaction that takes the write lock at its first statement."""
    return transaction(engine, TxKind.WRITE)


@contextlib.asynccontextmanager
async def write_transaction(engine: AsyncEngine) -> AsyncIterator[AsyncConnection]:
    """A write transaction with the write lock taken on entry."""
    async with transaction(engine, TxKind.WRITE) as conn:
        await conn.begin()
        yield conn


@contextlib.asynccontextmanager
async def read_phase(conn: AsyncConnection) -> AsyncIterator[None]:
    """Run the block in a short read transaction of a write connection that has not begun.

    Used before the write lock is taken, for what validating a write needs
    (instance settings, the caller's scope): the read commits at the end of
    the block, and the next statement opens the write transaction. Inside a
    transaction already open (or on a read connection) the block simply runs
    in it.
    """
    if conn.in_transaction() or _kind(conn.sync_connection) is not TxKind.WRITE:
        yield
        return
    await conn.execution_options(**{TX_OPTION: TxKind.READ})
    try:
        yield
    except BaseException:
        if conn.in_transaction():
            await conn.rollback()
        raise
    else:
        if conn.in_transaction():
            await conn.commit()
    finally:
        await conn.execution_options(**{TX_OPTION: TxKind.WRITE})


_PG_SERIAL_BASE = 0x6461_7900  # "day\0": advisory lock keys of serialized decisions


async def serialize(conn: AsyncConnection, key: int) -> None:
    """Serialize one decision among concurrent writers (e.g. "is this the first user?").

    PostgreSQL: a transaction-scoped advisory lock. SQLite: nothing to do, a
    write transaction already holds the database's only write lock.
    """
    if conn.dialect.name == "postgresql":
        await conn.execute(
            sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_SERIAL_BASE + key}
        )


async def end_write(conn: AsyncConnection) -> None:
    """Commit the write now and read on in a fresh read transaction.

    For a handler whose response only shows what it wrote (a create): the
    write turn is released before the response is assembled. The reads that
    follow see the committed write (and anything committed after it).
    """
    if conn.in_transaction():
        await conn.commit()
    _release(conn)
    if _kind(conn.sync_connection) is TxKind.WRITE:
        await conn.execution_options(**{TX_OPTION: TxKind.READ})
