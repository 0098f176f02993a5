"""Planner statistics Daybook keeps itself (issue 15).

The README's figures were once measured on databases the benchmarks had
``ANALYZE``d, which the product never did: a fresh install has no
``sqlite_stat1`` and SQLite guesses ten rows per index equality. The plans
are written not to depend on statistics (``app.db.joins``,
``tests/related/test_request_plans.py``), and Daybook keeps them anyway, as
SQLite recommends for long-lived connections:

- every new SQLite connection runs ``PRAGMA optimize=0x10002`` (SQLite 3.46+
  then analyses every table that never was or has changed a lot; older
  versions do nothing here, hence the rest);
- :func:`refresh` after imports and large batches: ``ANALYZE`` with a bounded
  sample (``analysis_limit``) on SQLite, so it costs milliseconds at a
  million memos, and ``ANALYZE`` on PostgreSQL, whose autovacuum would
  otherwise get there minutes after the bulk load;
- :func:`statistics_lifespan` every ``PERIOD`` seconds, and soon after a batch of
  ``BATCH_ROWS`` memos or more (:func:`nudge`): :func:`refresh` when
  ``memo``'s recorded row count is missing or off by more than ``DRIFT``
  times (a cheap check), else ``PRAGMA optimize`` on SQLite. On PostgreSQL
  too: autovacuum's first ``ANALYZE`` of a bulk-loaded table comes up to a
  minute or more later, and until then every page was a sort of the whole
  timeline (48 ms at 20,000 memos against 0.08 ms with statistics, measured
  by ``bench.pg_combined --explain``).

State lives in the database only (``sqlite_stat1``, ``pg_class.reltuples``),
so several processes agree on it without talking to each other.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import AsyncIterator, Callable
from typing import Any

import structlog
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.db.transactions import write_transaction

log = structlog.get_logger("daybook.db.statistics")

OPEN_PRAGMA = "optimize=0x10002"  # SQLite's advice for a connection kept open
ANALYSIS_LIMIT = 1000  # rows sampled per index: milliseconds, not seconds, at 1M memos
PERIOD = 600.0  # seconds between checks in a running server
DRIFT = 2.0  # re-analyse when memo's row count moved by this factor since the last ANALYZE
BATCH_ROWS = 500  # a batch write of at least this many memos refreshes the statistics


def recorded_rows(stat: str | None) -> int | None:
    """The row count ``sqlite_stat1.stat`` recorded (its first number), or ``None``."""
    if not stat:
        return None
    head = stat.split(" ", 1)[0]
    return int(head) if head.isdigit() else None


def is_stale(recorded: int | None, current: int) -> bool:
    """Whether statistics recorded for ``recorded`` rows mislead about ``current`` rows.

    No statistics at all is stale once the table has rows; an empty table
    needs none. Otherwise the ratio decides (both sides at least one row).
    """
    if recorded is None:
        return current > 0
    low, high = sorted((max(recorded, 1), max(current, 1)))
    return math.log(high / low) > math.log(DRIFT)


async def memo_statistics(conn: AsyncConnection) -> tuple[int | None, int]:
    """(rows recorded for ``memo`` by the last ANALYZE, about how many ``memo`` has now).

    Recorded: ``sqlite_stat1`` on SQLite, ``pg_class.reltuples`` on
    PostgreSQL (-1 until the table was first analysed or vacuumed).
    """
    recorded = None
    if conn.dialect.name == "postgresql":
        tuples = (
            await conn.exec_driver_sql(
                "SELECT reltuples FROM pg_class WHERE oid = 'memo'::regclass"
            )
        ).scalar()
        recorded = int(tuples) if tuples is not None and tuples >= 0 else None
        has_stat = None
    else:
        has_stat = (
            await conn.exec_driver_sql(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sqlite_stat1'"
            )
        ).first()
    if has_stat is not None:
        stats = await conn.exec_driver_sql(
            "SELECT stat FROM sqlite_stat1 WHERE tbl = 'memo' AND idx IS NOT NULL LIMIT 1"
        )
        recorded = recorded_rows(stats.scalar())
    # The rowid span, not count(*): two B-tree descents instead of a walk of an
    # index at a million memos; ids only grow, and purges leave it an overestimate.
    span = (
        await conn.exec_driver_sql(
            "SELECT (SELECT max(id) FROM memo) - (SELECT min(id) FROM memo) + 1"
        )
    ).scalar()
    return recorded, int(span or 0)


async def analyse(conn: AsyncConnection) -> None:
    """``ANALYZE`` in ``conn``'s (write) transaction, bounded on SQLite."""
    if conn.dialect.name == "sqlite":
        await conn.exec_driver_sql(f"PRAGMA analysis_limit={ANALYSIS_LIMIT}")
    await conn.exec_driver_sql("ANALYZE")


async def refresh(engine: AsyncEngine) -> None:
    """Statistics for what was just written (after an import or a large batch).

    Its own write transaction: the import's is committed, and its data is
    what is measured. Failing to analyse never fails the import.
    """
    try:
        async with write_transaction(engine) as conn:
            await analyse(conn)
    except Exception:
        log.exception("ANALYZE after a bulk write failed; the periodic check retries")


async def keep(engine: AsyncEngine) -> bool:
    """One periodic check: ANALYZE when stale, else ``PRAGMA optimize`` (SQLite).

    Returns whether it analysed.
    """
    async with engine.connect() as conn:
        recorded, current = await memo_statistics(conn)
        await conn.rollback()
    if is_stale(recorded, current):
        await refresh(engine)
        return True
    if engine.dialect.name != "sqlite":
        return False  # autovacuum keeps what changes slowly
    async with write_transaction(engine) as conn:
        await conn.exec_driver_sql("PRAGMA optimize")
    return False


class Keeper:
    """One process's periodic check, which a large batch can bring forward (``nudge``)."""

    def __init__(self, engine: AsyncEngine, period: float = PERIOD, settle: float = 1.0) -> None:
        self.engine = engine
        self.period = period
        self.settle = settle  # a nudge waits this long: the batch's transaction commits first
        self._nudged = asyncio.Event()

    def nudge(self) -> None:
        self._nudged.set()

    async def run(self, first_delay: float) -> None:
        await asyncio.sleep(first_delay)
        while True:
            try:
                await keep(self.engine)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("statistics check failed; retrying next period")
            self._nudged.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._nudged.wait(), self.period)
            if self._nudged.is_set():
                await asyncio.sleep(self.settle)


def nudge(state: Any) -> None:
    """Ask the app's keeper (if any) to check soon: a large batch was just written."""
    keeper = getattr(state, "statistics", None)
    if isinstance(keeper, Keeper):
        keeper.nudge()


def statistics_lifespan(
    period: float = PERIOD, first_delay: float = 5.0
) -> Callable[[Any], contextlib.AbstractAsyncContextManager[None]]:
    """The app lifespan hook running :func:`keep` soon after start, then every
    ``period`` seconds or when nudged, on both dialects."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        engine: AsyncEngine = app.state.engine
        keeper = app.state.statistics = Keeper(engine, period)
        task = asyncio.create_task(keeper.run(first_delay))
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    return lifespan
