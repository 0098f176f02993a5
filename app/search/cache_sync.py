"""SQLite: every current vector in memory (``VectorCache``), kept in step through
``memo_embedding_log``.

``semantic.semantic_arm`` opens a read transaction (one WAL snapshot for the
rest of the request), brings the cache to exactly that snapshot here and
ranks and counts under ``cache.lock``, so no other request moves the cache on
meanwhile. ``warm_cache`` does the first (full) load at startup.
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.search.exact import FETCH_CHUNK
from app.search.tables import memo_embedding
from app.search.vectors import VectorCache, decode_many

LOAD_CHUNK = 20_000  # rows per statement of a full (cold) load
FULL_RELOAD_CHANGES = 20_000  # replaying more changes than this costs more than a reload


async def read_snapshot(conn: AsyncConnection) -> bool:
    """SQLite: make this connection's following reads one snapshot; whether it began one.

    Inside a request the read transaction is already open (``app.db.
    transactions``) and its snapshot stands. On a bare connection (the warm-up)
    the first statement opens a deferred ``BEGIN`` through the engine's
    ``begin`` event, which takes the WAL snapshot at the next read and keeps it
    until the transaction ends. On PostgreSQL a no-op: its arms are single
    statements.
    """
    if conn.dialect.name != "sqlite" or conn.in_transaction():
        return False
    await conn.execute(sa.text("SELECT 1"))  # autobegin: the engine emits BEGIN
    return True


async def has_embedding_log(conn: AsyncConnection, cache: VectorCache) -> bool:
    """Whether this SQLite database has the change log (databases migrated before it
    was added keep the admitted-ids scan of ``exact_ranking``)."""
    if cache.has_log is None:
        found = await conn.exec_driver_sql(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'memo_embedding_log'"
        )
        cache.has_log = found.first() is not None
    return cache.has_log


async def _load(
    conn: AsyncConnection, cache: VectorCache, model: str, dim: int, ids: list[int] | None
) -> None:
    """(Re)load the current vectors of ``ids`` (all when ``None``, in primary-key
    chunks); ids without one are forgotten."""
    e = memo_embedding
    stmt = sa.select(e.c.memo_id, e.c.content_hash, e.c.vector).where(
        e.c.model == model, e.c.dim == dim
    )
    if ids is None:
        last = 0
        while True:
            rows = list(
                await conn.execute(
                    stmt.where(e.c.memo_id > last).order_by(e.c.memo_id).limit(LOAD_CHUNK)
                )
            )
            if not rows:
                return
            await asyncio.to_thread(_store_chunk, cache, rows, dim)
            last = int(rows[-1][0])
    for start in range(0, len(ids), FETCH_CHUNK):
        chunk = ids[start : start + FETCH_CHUNK]
        rows = list(await conn.execute(stmt.where(e.c.memo_id.in_(chunk))))
        await asyncio.to_thread(_replace_chunk, cache, chunk, rows, dim)


def _store_chunk(cache: VectorCache, rows: list[Any], dim: int) -> None:
    """Decode and append one chunk of a full load (a worker thread: ~15 MB at 20k
    vectors is tens of milliseconds the event loop, and every list request it
    serves, must not wait for; issue 15)."""
    cache.store_many(
        np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)),
        np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows)),
        decode_many([r[2] for r in rows], dim),
    )


def _replace_chunk(cache: VectorCache, chunk: list[int], rows: list[Any], dim: int) -> None:
    """Store the changed ids' current vectors and forget those without one (a worker thread)."""
    if rows:
        vectors = decode_many([r[2] for r in rows], dim)
        for (memo_id, key, _), vector in zip(rows, vectors, strict=True):
            cache.store(memo_id, key, vector)
    seen = {r[0] for r in rows}
    for memo_id in chunk:
        if memo_id not in seen:
            cache.remove(memo_id)


async def sync_cache(
    conn: AsyncConnection, cache: VectorCache, model: str, dim: int, rewind: bool = True
) -> bool:
    """Bring the cache to the current vectors of ``model`` in this connection's snapshot.

    Cheap when nothing changed (one primary-key read of the log's head).
    Another process's write is in the log once committed, so it is seen at the
    next query. The log head is read *before* the vectors, so, outside a read
    transaction, a write racing the read is replayed next time (replaying is
    idempotent: it reloads current rows).

    Returns False, leaving the cache alone, when the cache already holds changes
    past this snapshot's head (an older snapshot; the caller must not rank
    from the cache). ``rewind``: the snapshot is known to be the newest (just
    begun under ``cache.lock``), so a head behind the cache means the database
    itself went back (restored from a backup): reload.
    """
    head = int(
        (await conn.exec_driver_sql("SELECT max(seq) FROM memo_embedding_log")).scalar() or 0
    )
    start = cache.synced_seq
    if start is not None and head < start and not rewind:
        return False
    if start is not None and head == start:
        return True
    if start is not None and head > start:
        changed: list[Any] = list(
            await conn.exec_driver_sql(
                "SELECT seq, memo_id FROM memo_embedding_log WHERE seq > ? AND seq <= ?"
                " ORDER BY seq LIMIT ?",
                (start, head, FULL_RELOAD_CHANGES + 1),
            )
        )
        oldest = (await conn.exec_driver_sql("SELECT min(seq) FROM memo_embedding_log")).scalar()
        if len(changed) <= FULL_RELOAD_CHANGES and oldest is not None and oldest <= start + 1:
            await _load(conn, cache, model, dim, sorted({int(r[1]) for r in changed}))
            cache.synced_seq = head
            return True
    cache.clear()
    await _load(conn, cache, model, dim, None)
    cache.synced_seq = head
    return True


async def warm_cache(engine: AsyncEngine, cache: VectorCache, model: str, dim: int) -> int:
    """Load every current vector of ``model`` before the first search needs it (at
    startup, in the background); returns how many the cache holds.

    SQLite with the log: a full ``sync_cache`` under ``cache.lock`` in one
    snapshot, so the cache is then kept in step through the log exactly as if
    a search had loaded it (a search arriving meanwhile waits for this load
    instead of starting a second one). Elsewhere the rows are cached by (id,
    content hash), which every search checks against its own snapshot.
    """
    async with engine.connect() as conn:
        if conn.dialect.name == "sqlite":
            async with cache.lock:
                began = await read_snapshot(conn)
                if await has_embedding_log(conn, cache):
                    await sync_cache(conn, cache, model, dim, rewind=began)
                    return len(cache)
        await _load(conn, cache, model, dim, None)
        return len(cache)
