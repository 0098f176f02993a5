"""The embedding worker: embeds memos whose vector is missing, stale or of another model.

State is the ``memo_embedding`` table itself, so the worker resumes after a
crash or restart without bookkeeping. A memo needs work when it has no row
stamped with the current model and dimension (0004's trigger deletes the row
when content changes). Newest memos go first.

Writes are idempotent upserts guarded by the content they were computed
from (``INSERT ... SELECT ... WHERE memo.content = :embedded ON CONFLICT
DO UPDATE``): two processes embedding the same memo write the same row, and
a vector computed from content that changed meanwhile is never stored.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
import structlog
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.db.schema import memo
from app.search.embedder import Embedder, Vectors
from app.search.tables import HalfVec, memo_embedding, memo_embedding_pgvector
from app.search.vectors import content_hash, encode, pgvector_text

log = structlog.get_logger("daybook.search.worker")

BATCH = 32
LOG_KEEP = 50_000  # memo_embedding_log entries kept; a process further behind reloads
MAX_EMBED_CHARS = 2000  # e5/MiniLM read ~512 tokens at most; don't tokenise megabytes


def missing_condition(model: str, dim: int) -> sa.ColumnElement[bool]:
    """``memo`` rows without a vector of ``model``/``dim``."""
    e = memo_embedding
    return ~sa.exists().where(e.c.memo_id == memo.c.id, e.c.model == model, e.c.dim == dim)


async def next_batch(conn: AsyncConnection, embedder: Embedder, size: int) -> list[Any]:
    return list(
        await conn.execute(
            sa.select(memo.c.id, memo.c.content)
            .where(missing_condition(embedder.name, embedder.dim))
            .order_by(memo.c.id.desc())
            .limit(size)
        )
    )


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
    pg = conn.dialect.name == "postgresql"
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
        insert = (postgresql.insert if pg else sqlite.insert)(table)
        stmt = insert.from_select(list(columns), source).on_conflict_do_update(
            index_elements=[table.c.memo_id],
            set_={name: insert.excluded[name] for name in columns if name != "memo_id"},
        )
        result = await conn.execute(stmt)
        stored += max(result.rowcount or 0, 0)
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
) -> int:
    """Embed pending memos until none are left (or ``max_batches``); returns how many."""
    total = 0
    batches = 0
    while max_batches is None or batches < max_batches:
        async with engine.connect() as conn:
            rows = await next_batch(conn, embedder, batch_size)
        if not rows:
            break
        started = time.perf_counter()
        texts = [embed_text(r.content) for r in rows]
        vectors = await asyncio.to_thread(embedder.embed_passages, texts)
        async with engine.begin() as conn:
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
    """Loop until ``stop``: embed what is pending, then poll every ``idle_seconds``."""
    log.info("embedding worker started", model=embedder.name, dim=embedder.dim)
    while not stop.is_set():
        try:
            done = await embed_pending(engine, embedder, pgvector, max_batches=8)
        except Exception:
            log.exception("embedding batch failed; retrying later")
            done = 0
        if done == 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), idle_seconds)
