"""Run Alembic migrations: locked, in one transaction, on both dialects.

Any number of processes may start together. A migration runs under a lock
held for its whole transaction (PostgreSQL: ``pg_advisory_xact_lock``;
SQLite: the database's write lock, ``BEGIN IMMEDIATE``) and reads the current
revision only once it holds the lock, so the first process migrates and the
others then find the database at head. Waiting is logged; a lock not had
within ``lock_timeout`` seconds is a clear error, never a half-applied step.

The migration is one transaction: the revision read, every step's DDL and
data, and the version bump commit together or not at all. PostgreSQL's DDL
is transactional; SQLite's is too once pysqlite's implicit transaction
handling is off: the migration's own connection sets ``isolation_level =
None`` and emits ``BEGIN IMMEDIATE`` itself, so no statement, FTS5 virtual
tables and triggers included, ever runs in autocommit. A process killed
midway leaves the database at the revision it started from, and the next run
applies the same steps again from there.

A downgrade that deletes rows an upgrade cannot bring back (each revision
names those tables in its ``destroys``) is refused unless the caller
confirms it (``daybook migrate --yes``), and the refusal names what would go.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sqlalchemy as sa
import structlog
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import Script, ScriptDirectory
from alembic.util import CommandError
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

ROOT = Path(__file__).resolve().parents[2]
LOCK_TIMEOUT = 600.0  # seconds a process waits for another one's migration
# One key per database (advisory locks are scoped to the current database).
_PG_LOCK_KEY = zlib.crc32(b"daybook.migrate")
_SQLITE_BUSY_MS = 5000  # each BEGIN IMMEDIATE attempt; the loop logs between attempts

log = structlog.get_logger("daybook.migrate")

OnStep = Callable[[str], None]


class DataLossRefused(Exception):
    """A downgrade would delete rows; ``counts`` maps each table to its rows."""

    def __init__(self, target: str, counts: dict[str, int]) -> None:
        self.target, self.counts = target, counts
        listed = ", ".join(f"{table} ({n} rows)" for table, n in counts.items())
        what = f"deletes rows an upgrade cannot restore: {listed}" if counts else ""
        if target == "base":
            what = f"drops the whole schema{' and ' + what if what else ''}"
        super().__init__(f"migrating down to {target} {what}")


class MigrationLockTimeout(Exception):
    """Another process held the migration lock for longer than the timeout."""


def alembic_config() -> Config:
    cfg = Config(str(ROOT / "alembic.ini"))
    cfg.set_main_option("script_location", str(ROOT / "migrations"))
    return cfg


def scripts() -> ScriptDirectory:
    return ScriptDirectory.from_config(alembic_config())


def head_revision() -> str:
    head = scripts().get_current_head()
    assert head is not None
    return head


def _on_sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
    from app.db import sqlite_functions

    # Through the driver's own cursor, before isolation_level is switched off:
    # pragmas are not transactional. busy_timeout first, so that a second
    # process switching a fresh file to WAL waits instead of failing.
    cursor = dbapi_connection.cursor()
    for pragma in (
        f"busy_timeout={_SQLITE_BUSY_MS}",
        "journal_mode=WAL",
        "foreign_keys=ON",
        "synchronous=NORMAL",
    ):
        cursor.execute(f"PRAGMA {pragma}")
    cursor.close()
    # The revisions' triggers and backfills call Daybook's SQL functions.
    sqlite_functions.register(dbapi_connection)
    # SQLAlchemy's documented recipe: the driver emits no BEGIN of its own;
    # take_lock emits BEGIN IMMEDIATE, and COMMIT/ROLLBACK end it.
    dbapi_connection.isolation_level = None


def migration_engine(url: str | sa.URL) -> AsyncEngine:
    """An engine for migrations only: one unpooled connection, transactional DDL on SQLite."""
    from app.db.engine import async_url

    full = async_url(url if isinstance(url, str) else url.render_as_string(hide_password=False))
    engine = create_async_engine(full, poolclass=NullPool)
    if engine.dialect.name == "sqlite":
        sa.event.listen(engine.sync_engine, "connect", _on_sqlite_connect)
        database = engine.url.database
        if database and database != ":memory:":  # a fresh data directory
            Path(database).parent.mkdir(parents=True, exist_ok=True)
    return engine


def take_lock(connection: Connection, timeout: float = LOCK_TIMEOUT) -> None:
    """Begin the migration's transaction holding the migration lock (waiting for it)."""
    started = time.monotonic()
    if connection.dialect.name == "postgresql":
        got = connection.execute(
            sa.text("SELECT pg_try_advisory_xact_lock(:key)"), {"key": _PG_LOCK_KEY}
        ).scalar()
        if not got:
            log.info("waiting for the migration lock", dialect="postgresql")
            connection.execute(sa.text(f"SET LOCAL lock_timeout = '{int(timeout * 1000)}ms'"))
            try:
                connection.execute(
                    sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_LOCK_KEY}
                )
            except sa.exc.OperationalError as exc:
                raise MigrationLockTimeout(
                    f"another process held the migration lock for over {timeout:.0f} s"
                ) from exc
            connection.execute(sa.text("SET LOCAL lock_timeout = 0"))
            log.info("migration lock acquired", waited_s=round(time.monotonic() - started, 3))
        return
    waited = False
    while True:
        try:
            connection.exec_driver_sql("BEGIN IMMEDIATE")
            break
        except sa.exc.OperationalError as exc:
            if "locked" not in str(exc.orig) and "busy" not in str(exc.orig):
                raise
            if time.monotonic() - started > timeout:
                raise MigrationLockTimeout(
                    f"the database stayed locked by another process for over {timeout:.0f} s"
                ) from exc
            if not waited:
                log.info("waiting for the migration lock", dialect="sqlite")
                waited = True
    if waited:
        log.info("migration lock acquired", waited_s=round(time.monotonic() - started, 3))


def _step_hook(on_step: OnStep | None) -> Callable[..., None]:
    """Alembic's ``on_version_apply``: log each step (long upgrades show progress)."""

    def on_version_apply(*, ctx: Any, step: Any, heads: Any, run_args: Any) -> None:
        applied = str(step.up_revision_id)
        log.info(
            "migration step applied",
            revision=applied,
            direction="up" if step.is_upgrade else "down",
        )
        if on_step is not None:
            on_step(applied)

    return on_version_apply


def _path_down(script_dir: ScriptDirectory, current: str | None, target: str) -> list[Script]:
    """The revisions a downgrade from ``current`` to ``target`` undoes, newest first."""
    if current is None:
        return []
    path: list[Script] = []
    rev: Script | None = script_dir.get_revision(current)
    if target.startswith("-"):
        try:
            steps = int(target[1:])
        except ValueError:
            raise CommandError(f"invalid relative revision {target!r}") from None
        for _ in range(steps):
            if rev is None:
                raise CommandError(f"{target!r} goes below the first revision")
            path.append(rev)
            rev = _below(script_dir, rev)
        return path
    stop = None if target == "base" else script_dir.get_revision(target)
    while rev is not None and (stop is None or rev.revision != stop.revision):
        path.append(rev)
        rev = _below(script_dir, rev)
    if stop is not None and rev is None:
        raise CommandError(f"revision {target!r} is not below the current revision {current!r}")
    return path


def _below(script_dir: ScriptDirectory, rev: Script) -> Script | None:
    down = rev.down_revision
    if down is None:
        return None
    if not isinstance(down, str):
        raise CommandError(f"revision {rev.revision} merges branches: downgrade by hand")
    return script_dir.get_revision(down)


def _destroyed_rows(connection: Connection, undone: list[Script]) -> dict[str, int]:
    inspector = sa.inspect(connection)
    counts: dict[str, int] = {}
    for script in undone:
        for table in getattr(script.module, "destroys", ()):
            if table in counts or not inspector.has_table(table):
                continue
            n = connection.execute(
                sa.select(sa.func.count()).select_from(sa.table(table))
            ).scalar_one()
            if n:
                counts[table] = int(n)
    return counts


async def _run_locked(engine: AsyncEngine, work: Callable[[Connection], None]) -> None:
    mig = migration_engine(engine.url)
    try:
        async with mig.connect() as connection:
            await connection.run_sync(work)
            await connection.commit()
    finally:
        await mig.dispose()


def _config(connection: Connection, on_step: OnStep | None) -> Config:
    cfg = alembic_config()
    cfg.attributes["connection"] = connection
    cfg.attributes["on_version_apply"] = _step_hook(on_step)
    return cfg


async def upgrade(
    engine: AsyncEngine, revision: str = "head", *, on_step: OnStep | None = None
) -> None:
    """Upgrade to ``revision`` under the migration lock, in one transaction."""

    def work(connection: Connection) -> None:
        take_lock(connection)
        command.upgrade(_config(connection, on_step), revision)

    await _run_locked(engine, work)


async def downgrade(
    engine: AsyncEngine, revision: str, *, confirm: bool = False, on_step: OnStep | None = None
) -> None:
    """Downgrade to ``revision``; refused (``DataLossRefused``) if it deletes rows unconfirmed."""

    def work(connection: Connection) -> None:
        take_lock(connection)
        current = MigrationContext.configure(connection).get_current_revision()
        if not confirm:
            undone = _path_down(scripts(), current, revision)
            lost = _destroyed_rows(connection, undone)
            to_base = bool(undone) and undone[-1].down_revision is None
            if lost or to_base:
                raise DataLossRefused("base" if to_base else revision, lost)
        command.downgrade(_config(connection, on_step), revision)

    await _run_locked(engine, work)


async def current_revision(engine: AsyncEngine) -> str | None:
    def run(connection: Connection) -> str | None:
        return MigrationContext.configure(connection).get_current_revision()

    async with engine.connect() as connection:
        return await connection.run_sync(run)
