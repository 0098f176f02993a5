"""The semantic arm: the ``pool`` admitted memos nearest to the query vector, and
the caller's pending count, read from one snapshot of the database.

Only vectors stamped with the current model and dimension are ranked, so a
model change never mixes two embedding spaces in one ranking. One concept per
module (issue 14); this one chooses the way:

- PostgreSQL with pgvector: ``app.search.pgvector_arm`` (one statement, HNSW).
- SQLite: every current vector in memory (``VectorCache``), kept in step
  through ``memo_embedding_log`` (``app.search.cache_sync``). The arm opens a
  read transaction (one WAL snapshot for the rest of the request), brings the
  cache to exactly that snapshot and ranks and counts under ``cache.lock``.
  A sample of the cached ids checked for admission decides how to rank:
  broad callers walk the most similar vectors checking admission
  (``app.search.walk``); narrow ones (a key that sees 1%) scan exactly their
  admitted ids (``app.search.exact``) without scoring every vector.
- PostgreSQL without pgvector (and SQLite databases from before the log): the
  exact scan over admitted ids (``app.search.exact``).

The names the rest of the code imported from here before the split are
re-exported.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from app.search.arm import Coverage, SemanticArm
from app.search.cache_sync import (
    FULL_RELOAD_CHANGES,
    LOAD_CHUNK,
    has_embedding_log,
    read_snapshot,
    sync_cache,
    warm_cache,
)
from app.search.embedder import Vectors
from app.search.exact import FETCH_CHUNK, exact_arm, exact_ranking, exact_scored
from app.search.pending import queued_count, queued_statement
from app.search.pgvector_arm import (
    pgvector_arm,
    pgvector_arm_statement,
    pgvector_ranking,
    pgvector_statement,
)
from app.search.vectors import VectorCache
from app.search.walk import (
    WALK_FIRST,
    WALK_WINDOW,
    _admitted_batch,
    probe_rate,
    walk_ranking,
    walk_scored,
    worth_walking,
)

__all__ = [
    "FETCH_CHUNK",
    "FULL_RELOAD_CHANGES",
    "LOAD_CHUNK",
    "WALK_FIRST",
    "WALK_WINDOW",
    "Coverage",
    "SemanticArm",
    "_admitted_batch",
    "exact_ranking",
    "exact_scored",
    "has_embedding_log",
    "pgvector_arm",
    "pgvector_arm_statement",
    "pgvector_ranking",
    "pgvector_statement",
    "queued_count",
    "queued_statement",
    "read_snapshot",
    "semantic_arm",
    "sync_cache",
    "walk_ranking",
    "walk_scored",
    "warm_cache",
]


async def semantic_arm(
    conn: AsyncConnection,
    cache: VectorCache,
    model: str,
    dim: int,
    pgvector: bool,
    query: Vectors | None,
    admitted: Sequence[ColumnElement[bool]],
    pool: int,
) -> SemanticArm:
    """The ranking (when ``query`` is given) and the pending count, from one snapshot."""
    if pgvector:
        return await pgvector_arm(conn, model, dim, query, admitted, pool)
    if conn.dialect.name == "sqlite":
        async with cache.lock:
            began = await read_snapshot(conn)
            return await _sqlite_arm(conn, cache, model, dim, query, admitted, pool, began)
    return await exact_arm(conn, cache, model, dim, query, admitted, pool, remember=True)


async def _sqlite_arm(
    conn: AsyncConnection,
    cache: VectorCache,
    model: str,
    dim: int,
    query: Vectors | None,
    admitted: Sequence[ColumnElement[bool]],
    pool: int,
    began: bool,
) -> SemanticArm:
    """Under ``cache.lock``, in the snapshot ``read_snapshot`` opened."""
    if not await has_embedding_log(conn, cache):
        return await exact_arm(conn, cache, model, dim, query, admitted, pool, remember=True)
    if not await sync_cache(conn, cache, model, dim, rewind=began):
        # The cache holds writes this (older) snapshot cannot see: scan the
        # admitted ids of this snapshot, without touching the shared cache.
        return await exact_arm(conn, cache, model, dim, query, admitted, pool, remember=False)
    ranking: list[int] = []
    sims: tuple[float, ...] = ()
    pending: int | None = None
    if query is not None:
        walked = None
        rate = None  # a cache no larger than the window is walked whole: no probe
        if len(cache) > WALK_WINDOW:
            rate = await probe_rate(conn, cache, model, dim, admitted)
        if rate is None or worth_walking(rate, len(cache), pool):
            walked = await walk_scored(conn, cache, model, query, admitted, pool, rate)
        if walked is not None:
            ranking, sims = walked
        else:
            ranking, sims, covered = await exact_scored(conn, cache, model, query, admitted, pool)
            pending = covered.pending
    if pending is None:
        pending = await queued_count(conn, admitted)
    return SemanticArm(ranking, pending, sims)
