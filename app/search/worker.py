"""The embedding worker: embeds memos whose vector is missing, stale or of another model.

State is in the database, so the worker resumes after a crash or restart
without bookkeeping. Work comes from ``memo_embedding_queue`` (migration
0007): triggers queue a memo when it is created or its content changes (and
0004's trigger deletes its stale vector), so a poll with nothing to do is one
primary-key read, not a scan of every memo. Newest memos go first.

Writes are idempotent upserts guarded by the content they were computed
from (``INSERT ... SELECT ... WHERE memo.content = :embedded ON CONFLICT
DO UPDATE``): two processes embedding the same memo write the same row, and
a vector computed from content that changed meanwhile is never stored. The
same transaction takes the memo off the queue, with the same guard, so a
snapshot never sees a memo both unqueued and without its vector.

The sweep (``enqueue_missing``) is the safety net: it queues every memo
without a vector of the current model, in id ranges. It runs when the worker
starts (which is how a model change re-embeds gradually: the old model's
vectors stay until replaced) and every ``SWEEP_SECONDS`` after, for the rare
interleaving on PostgreSQL where a content change commits between the
worker's store and its dequeue.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import sqlalchemy as sa
import structlog
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.db.schema import memo
from app.db.transactions import write_transaction
from app.search import priority
from app.search.embedder import Embedder, Vectors
from app.search.tables import (
    HalfVec,
    memo_embedding,
    memo_embedding_pgvector,
    memo_embedding_queue,
)
from app.search.trim import release_free_memory
from app.search.vectors import content_hash, encode, pgvector_text

log = structlog.get_logger("daybook.search.worker")

BATCH = 32
SWEEP_CHUNK = 20_000  # ids per statement of the sweep
SWEEP_SECONDS = 3600.0
LOG_KEEP = 50_000  # memo_embedding_log entries kept; a process further behind reloads
MAX_EMBED_CHARS = 2000  # e5/MiniLM read ~512 tokens at most; don't tokenise megabytes


_T = TypeVar("_T")
_low: ThreadPoolExecutor | None = None
_low_guard = threading.Lock()


async def run_low(fn: Callable[..., _T], *args: Any) -> _T:
    """Run ``fn(*args)`` on the embedding thread, at lower CPU priority than requests
    (``app.search.priority``)."""
    global _low
    with _low_guard:
        if _low is None:
            _low = ThreadPoolExecutor(
                max_workers=1,
                thread_name_prefix="daybook-embed",
                initializer=priority.make_background,
            )
    loop = asyncio.get_running_loop()
    # A call starved at SCHED_IDLE on a full machine is moved back to nice 10.
    watchdog = loop.call_later(priority.RESCUE_SECONDS, priority.rescue)
    try:
        return await loop.run_in_executor(_low, fn, *args)
    finally:
        watchdog.cancel()


def missing_condition(model: str, dim: int) -> sa.ColumnElement[bool]:
    """``memo`` rows without a vector of ``model``/``dim``."""
    e = memo_embedding
    return ~sa.exists().where(e.c.memo_id == memo.c.id, e.c.model == model, e.c.dim == dim)


def next_batch_statement(size: int) -> sa.Select[Any]:
    """The newest queued memos: a walk of the queue's primary key, then one
    primary-key read per memo (an ``IN`` list, so no planner starts from
    ``memo`` when the queue is empty and has no statistics)."""
    q = memo_embedding_queue
    newest = sa.select(q.c.memo_id).order_by(q.c.memo_id.desc()).limit(size)
    return (
        sa.select(memo.c.id, memo.c.content)
        .where(memo.c.id.in_(newest.scalar_subquery()))
        .order_by(memo.c.id.desc())
    )


async def next_batch(conn: AsyncConnection, size: int) -> list[Any]:
    """The queue holds no model: a model change is queued by the sweep."""
    return list(await conn.execute(next_batch_statement(size)))


def _insert(conn: AsyncConnection, table: sa.Table) -> Any:
    return (postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert)(table)


async def enqueue_missing(conn: AsyncConnection, model: str, dim: int, low: int, high: int) -> int:
    """Queue the memos with ids in ``(low, high]`` that lack a vector of ``model``/``dim``."""
    source = sa.select(memo.c.id).where(
        memo.c.id > low, memo.c.id <= high, missing_condition(model, dim)
    )
    stmt = _insert(conn, memo_embedding_queue).from_select(["memo_id"], source)
    result = await conn.execute(stmt.on_conflict_do_nothing(index_elements=["memo_id"]))
    return max(result.rowcount or 0, 0)


def embed_text(content: str) -> str:
    return content[:MAX_EMBED_CHARS]


async def store_vectors(
    conn: AsyncConnection,
    embedder: Embedder,
    rows: list[Any],
    vectors: Vectors,
    pgvector: bool,
    now: int | None = None,
) -> int:
    """Upsert one vector per row, only where the memo still has the embedded content."""
    now = int(time.time()) if now is None else now
    table = memo_embedding_pgvector if pgvector else memo_embedding
    stored = 0
    for row, vector in zip(rows, vectors, strict=True):
        columns: dict[str, Any] = {
            "memo_id": memo.c.id,
            "model": sa.literal(embedder.name),
            "dim": sa.literal(embedder.dim),
            "vector": sa.literal(encode(vector), sa.LargeBinary),
            "content_hash": sa.literal(content_hash(row.content)),
            "updated_ts": sa.literal(now),
        }
        if pgvector:
            columns["embedding"] = sa.cast(
                sa.cast(sa.literal(pgvector_text(vector)), sa.Text), HalfVec()
            )
        source = sa.select(*columns.values()).where(
            memo.c.id == row.id, memo.c.content == row.content
        )
        insert = _insert(conn, table)
        stmt = insert.from_select(list(columns), source).on_conflict_do_update(
            index_elements=[table.c.memo_id],
            set_={name: insert.excluded[name] for name in columns if name != "memo_id"},
        )
        result = await conn.execute(stmt)
        stored += max(result.rowcount or 0, 0)
        q = memo_embedding_queue
        current = sa.exists().where(memo.c.id == row.id, memo.c.content == row.content)
        await conn.execute(q.delete().where(q.c.memo_id == row.id, current))
    return stored


async def prune_log(conn: AsyncConnection) -> None:
    """SQLite: drop ``memo_embedding_log`` entries older than the last ``LOG_KEEP``."""
    if conn.dialect.name != "sqlite":
        return
    found = await conn.exec_driver_sql(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'memo_embedding_log'"
    )
    if found.first() is None:
        return
    await conn.exec_driver_sql(
        "DELETE FROM memo_embedding_log WHERE seq <= (SELECT max(seq) FROM memo_embedding_log) - ?",
        (LOG_KEEP,),
    )


async def sweep_queue(engine: AsyncEngine, embedder: Embedder, chunk: int = SWEEP_CHUNK) -> int:
    """Queue every memo without a current vector, one id range per transaction
    (so writers never wait long); logged when it finds work."""
    started = time.perf_counter()
    async with engine.connect() as conn:
        last = (await conn.execute(sa.select(sa.func.max(memo.c.id)))).scalar() or 0
    added = 0
    for low in range(0, int(last), chunk):
        async with write_transaction(engine) as conn:
            added += await enqueue_missing(conn, embedder.name, embedder.dim, low, low + chunk)
    if added:
        log.info(
            "queued memos without a current vector",
            memos=added,
            model=embedder.name,
            seconds=round(time.perf_counter() - started, 2),
        )
    return added


@dataclass(slots=True)
class WorkerStats:
    embedded: int = 0
    seconds: float = 0.0


async def embed_pending(
    engine: AsyncEngine,
    embedder: Embedder,
    pgvector: bool,
    batch_size: int = BATCH,
    max_batches: int | None = None,
    stats: WorkerStats | None = None,
    sweep: bool = True,
) -> int:
    """Embed pending memos until none are left (or ``max_batches``); returns how many.

    ``sweep`` first queues every memo without a current vector (a pass over
    all memos: the worker loop does it at start and hourly, not every poll).
    """
    if sweep:
        await sweep_queue(engine, embedder)
    total = 0
    batches = 0
    while max_batches is None or batches < max_batches:
        async with engine.connect() as conn:
            rows = await next_batch(conn, batch_size)
        if not rows:
            break
        started = time.perf_counter()
        texts = [embed_text(r.content) for r in rows]
        vectors = await run_low(embedder.embed_passages, texts)
        async with write_transaction(engine) as conn:
            total += await store_vectors(conn, embedder, rows, vectors, pgvector)
            await prune_log(conn)
        if stats is not None:
            stats.embedded += len(rows)
            stats.seconds += time.perf_counter() - started
        batches += 1
    return total


async def run_worker(
    engine: AsyncEngine,
    embedder: Embedder,
    pgvector: bool,
    stop: asyncio.Event,
    idle_seconds: float = 2.0,
) -> None:
    """Loop until ``stop``: embed what is queued, then poll every ``idle_seconds``."""
    log.info("embedding worker started", model=embedder.name, dim=embedder.dim)
    swept_at = -SWEEP_SECONDS
    busy = False
    while not stop.is_set():
        try:
            if time.monotonic() - swept_at >= SWEEP_SECONDS:
                swept_at = time.monotonic()
                await sweep_queue(engine, embedder)
            done = await embed_pending(engine, embedder, pgvector, max_batches=8, sweep=False)
        except Exception:
            log.exception("embedding batch failed; retrying later")
            done = 0
        if done:
            busy = True
            continue
        if busy:  # out of work: the batches' freed tensors stay in the C heaps otherwise
            busy = False
            release_free_memory()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), idle_seconds)
