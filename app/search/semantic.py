"""The semantic arm: the ``pool`` admitted memos nearest to the query vector, and
the caller's pending count, read from one snapshot of the database.

Only vectors stamped with the current model and dimension are ranked, so a
model change never mixes two embedding spaces in one ranking.

- PostgreSQL with pgvector: one statement, ``ORDER BY embedding <=> :q``
  with the admission conditions in WHERE, served by the HNSW index of the
  dimension; ``hnsw.iterative_scan = relaxed_order`` keeps scanning the graph
  until ``pool`` admitted rows are found (so selective audiences still fill
  the pool), and the rows are re-sorted by exact distance. The pending count
  is a second subquery of the *same* statement, so both see one snapshot.
- SQLite: every current vector in memory (``VectorCache``), kept in step
  through ``memo_embedding_log``. ``semantic_arm`` opens a read transaction
  (one WAL snapshot for the rest of the request), brings the cache to exactly
  that snapshot and ranks and counts under ``cache.lock``, so no other request
  moves the cache on meanwhile.
- PostgreSQL without pgvector (and SQLite databases from before the log): the
  admitted ids, their content hashes and the admitted count come from one
  aggregate statement, and numpy scores exactly those vectors, decoding only
  the ones not already cached for that (id, hash). A vector rewritten between
  that statement and the fetch of an uncached one is left out of the ranking
  and counted as pending, so the count still covers exactly what was not ranked.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.sql.elements import ColumnElement

from app.db.joins import by_key, ordered_join
from app.db.schema import memo
from app.search.ddl import HNSW_DIMS
from app.search.embedder import Vectors
from app.search.tables import (
    HalfVec,
    memo_embedding,
    memo_embedding_pgvector,
    memo_embedding_queue,
)
from app.search.vectors import VectorCache, decode_many, pgvector_text

FETCH_CHUNK = 5000
LOAD_CHUNK = 20_000  # rows per statement of a full (cold) load


@dataclass(frozen=True, slots=True)
class SemanticArm:
    ranking: list[int]  # memo ids, best first (empty when no query vector was given)
    pending: int  # admitted memos without a current vector, in the ranking's snapshot
    similarity: tuple[float, ...] = ()  # cosine of each ranked memo, in ranking order


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
    return await _exact_arm(conn, cache, model, dim, query, admitted, pool, remember=True)


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


# --- PostgreSQL with pgvector ------------------------------------------------------------


def pgvector_statement(
    model: str, query: Vectors, admitted: Sequence[ColumnElement[bool]], pool: int
) -> sa.Select[Any]:
    """Nearest admitted vectors of ``model``. The dimension is rendered as a literal so
    the planner can match the partial HNSW index (``WHERE dim = 384``) in generic plans."""
    e = memo_embedding_pgvector
    dim = int(query.shape[0])
    target = sa.cast(sa.cast(sa.literal(pgvector_text(query)), sa.Text), HalfVec(dim))
    column = sa.cast(e.c.embedding, HalfVec(dim)) if dim in HNSW_DIMS else e.c.embedding
    distance = column.op("<=>", return_type=sa.Float)(target)
    return (
        sa.select(e.c.memo_id, distance.label("distance"))
        .select_from(e.join(memo, memo.c.id == e.c.memo_id))
        .where(e.c.model == model, e.c.dim == sa.literal_column(str(dim)), *admitted)
        .order_by(distance)
        .limit(pool)
    )


def pgvector_arm_statement(
    model: str, query: Vectors, admitted: Sequence[ColumnElement[bool]], pool: int
) -> sa.Select[Any]:
    """``pgvector_statement`` and the caller's pending count as one statement (one
    snapshot): the one-row count, left-joined to the ranked rows (none: one row of NULLs)."""
    ranked = pgvector_statement(model, query, admitted, pool).subquery("ranked")
    queued = queued_statement(admitted).subquery("queued")
    return sa.select(queued.c.pending, ranked.c.memo_id, ranked.c.distance).select_from(
        queued.outerjoin(ranked, sa.true())
    )


async def pgvector_arm(
    conn: AsyncConnection,
    model: str,
    dim: int,
    query: Vectors | None,
    admitted: Sequence[ColumnElement[bool]],
    pool: int,
) -> SemanticArm:
    if query is None:
        return SemanticArm([], await queued_count(conn, admitted))
    await conn.exec_driver_sql("SET LOCAL hnsw.iterative_scan = relaxed_order")
    await conn.exec_driver_sql(f"SET LOCAL hnsw.ef_search = {max(40, min(2 * pool, 1000))}")
    # asyncpg prepares statements, and after five runs PostgreSQL may switch to
    # a generic plan that cannot see the caller's selectivity: for a key that
    # sees 1% of 1M memos it abandoned the HNSW scan (50 ms) for a 400-600 ms
    # plan. A custom plan per search costs about a millisecond of planning.
    await conn.exec_driver_sql("SET LOCAL plan_cache_mode = force_custom_plan")
    rows = list(await conn.execute(pgvector_arm_statement(model, query, admitted, pool)))
    ranked = sorted(
        (r for r in rows if r.memo_id is not None), key=lambda r: (r.distance, -r.memo_id)
    )
    return SemanticArm(
        [int(r.memo_id) for r in ranked],
        int(rows[0].pending),
        tuple(1.0 - float(r.distance) for r in ranked),
    )


async def pgvector_ranking(
    conn: AsyncConnection,
    model: str,
    query: Vectors,
    admitted: Sequence[ColumnElement[bool]],
    pool: int,
) -> list[int]:
    """The ranking alone (``pgvector_arm`` without using its count)."""
    return (await pgvector_arm(conn, model, int(query.shape[0]), query, admitted, pool)).ranking


# --- pending: admitted memos waiting in the embedding queue --------------------------------


def queued_statement(admitted: Sequence[ColumnElement[bool]]) -> sa.Select[Any]:
    """How many admitted memos are queued for a vector (``memo_embedding_queue``).

    A join with the queue, which is empty once the worker has caught up, so
    the count costs next to nothing however many memos the caller can see.
    A memo leaves the queue in the transaction that stores its vector, so in
    any one snapshot the queued memos are exactly those without one (once
    the worker's start-up sweep has queued the memos of a previous model).
    The queue drives the join on SQLite too (``ordered_join``): without
    statistics, ``memo.id IN (SELECT ... FROM queue)`` was planned as a scan
    of ``memo`` probing the queue (issue 15).
    """
    q = memo_embedding_queue
    return (
        sa.select(sa.func.count().label("pending"))
        .select_from(ordered_join(q, memo, memo.c.id == q.c.memo_id))
        .where(*admitted)
    )


async def queued_count(conn: AsyncConnection, admitted: Sequence[ColumnElement[bool]]) -> int:
    count: int = (await conn.execute(queued_statement(admitted))).scalar_one()
    return int(count)


# --- coverage: how many admitted memos the exact scan ranked ------------------------------


def _joined(model: str, dim: int) -> sa.Join:
    e = memo_embedding
    return memo.outerjoin(e, sa.and_(e.c.memo_id == memo.c.id, e.c.model == model, e.c.dim == dim))


@dataclass(frozen=True, slots=True)
class Coverage:
    admitted: int  # memos the caller's search ranges over
    embedded: int  # ...of which have a vector of the current model (and were rankable)

    @property
    def pending(self) -> int:
        return self.admitted - self.embedded


# --- the exact scan over admitted ids (PostgreSQL without pgvector; old SQLite files) ------


def _int_list(text: str | None) -> npt.NDArray[np.int64]:
    if not text:
        return np.zeros(0, dtype=np.int64)
    return np.array(text.split(","), dtype=np.int64)


async def _exact_arm(
    conn: AsyncConnection,
    cache: VectorCache,
    model: str,
    dim: int,
    query: Vectors | None,
    admitted: Sequence[ColumnElement[bool]],
    pool: int,
    remember: bool,
) -> SemanticArm:
    if query is None:
        return SemanticArm([], await queued_count(conn, admitted))
    ranking, sims, covered = await exact_scored(conn, cache, model, query, admitted, pool, remember)
    return SemanticArm(ranking, covered.pending, sims)


async def exact_ranking(
    conn: AsyncConnection,
    cache: VectorCache,
    model: str,
    query: Vectors,
    admitted: Sequence[ColumnElement[bool]],
    pool: int,
    remember: bool = True,
) -> tuple[list[int], Coverage]:
    """``exact_scored`` without the similarities."""
    ranking, _, covered = await exact_scored(conn, cache, model, query, admitted, pool, remember)
    return ranking, covered


async def exact_scored(
    conn: AsyncConnection,
    cache: VectorCache,
    model: str,
    query: Vectors,
    admitted: Sequence[ColumnElement[bool]],
    pool: int,
    remember: bool = True,
) -> tuple[list[int], tuple[float, ...], Coverage]:
    """The exact arm with its similarities, and (for free, from the same scan) the
    caller's coverage.

    The admitted ids and content hashes come back as two comma-joined strings
    from one aggregate row: for a caller who sees 100k memos, that is far
    cheaper than 100k result rows through the async driver. Vectors not cached
    for their (id, hash) are fetched and, with ``remember``, cached; one that
    changed since the aggregate is not ranked and counts as pending.
    """
    e = memo_embedding
    dim = int(query.shape[0])
    if conn.dialect.name == "sqlite":
        ids_agg = sa.func.group_concat(e.c.memo_id)
        keys_agg = sa.func.group_concat(e.c.content_hash)
    else:
        ids_agg = sa.func.string_agg(sa.cast(e.c.memo_id, sa.Text), ",")
        keys_agg = sa.func.string_agg(sa.cast(e.c.content_hash, sa.Text), ",")
    row = (
        await conn.execute(
            sa.select(sa.func.count(), ids_agg, keys_agg)
            .select_from(_joined(model, dim))
            .where(*admitted)
        )
    ).one()
    ids, keys = _int_list(row[1]), _int_list(row[2])
    admitted_count = int(row[0])
    if not len(ids):
        return [], (), Coverage(admitted_count, 0)
    hit_ids, hit_rows, missed = cache.lookup(ids, keys)
    scores = cache.scores(hit_rows, query)
    if len(missed):
        wanted = dict(zip(ids.tolist(), keys.tolist(), strict=True))
        extra_ids: list[int] = []
        extra_keys: list[int] = []
        blobs: list[bytes] = []
        for start in range(0, len(missed), FETCH_CHUNK):
            chunk = missed[start : start + FETCH_CHUNK].tolist()
            for memo_id, key, blob in await conn.execute(
                sa.select(e.c.memo_id, e.c.content_hash, e.c.vector).where(
                    e.c.memo_id.in_(chunk), e.c.model == model, e.c.dim == dim
                )
            ):
                if wanted.get(memo_id) != key:
                    continue  # rewritten since the aggregate: not ranked, counted pending
                extra_ids.append(memo_id)
                extra_keys.append(key)
                blobs.append(blob)
        vectors = decode_many(blobs, dim) if blobs else np.zeros((0, dim), dtype=np.float32)
        fetched = np.asarray(extra_ids, dtype=np.int64)
        if remember:
            cache.store_many(fetched, np.asarray(extra_keys, dtype=np.int64), vectors)
        hit_ids = np.concatenate([hit_ids, fetched])
        scores = np.concatenate([scores, vectors @ query])
    covered = Coverage(admitted_count, len(hit_ids))
    order = _ordered(hit_ids, scores, pool)[:pool]
    return hit_ids[order].tolist(), tuple(float(x) for x in scores[order]), covered


# --- SQLite: every current vector in memory, kept in step through memo_embedding_log ---

FULL_RELOAD_CHANGES = 20_000  # replaying more changes than this costs more than a reload
WALK_WINDOW = 1024  # most similar vectors checked for admission, then scan admitted ids
WALK_FIRST = 100  # candidates in the first admission check (at least 2 x pool)


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
        return await _exact_arm(conn, cache, model, dim, query, admitted, pool, remember=True)
    if not await sync_cache(conn, cache, model, dim, rewind=began):
        # The cache holds writes this (older) snapshot cannot see: scan the
        # admitted ids of this snapshot, without touching the shared cache.
        return await _exact_arm(conn, cache, model, dim, query, admitted, pool, remember=False)
    ranking: list[int] = []
    sims: tuple[float, ...] = ()
    pending: int | None = None
    if query is not None:
        walked = await walk_scored(conn, cache, model, query, admitted, pool)
        if walked is not None:
            ranking, sims = walked
        else:
            ranking, sims, covered = await exact_scored(conn, cache, model, query, admitted, pool)
            pending = covered.pending
    if pending is None:
        pending = await queued_count(conn, admitted)
    return SemanticArm(ranking, pending, sims)


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


def _ordered(
    ids: npt.NDArray[np.int64], scores: npt.NDArray[np.float32], count: int
) -> npt.NDArray[np.int64]:
    """Indices of the ``count`` best (ties at the cut included), by score then newer id."""
    if len(scores) > count:
        cut = np.partition(scores, len(scores) - count)[len(scores) - count]
        keep = np.nonzero(scores >= cut)[0]
    else:
        keep = np.arange(len(scores))
    order = np.lexsort((-ids[keep], -scores[keep]))
    out: npt.NDArray[np.int64] = keep[order]
    return out


_BATCH_KEYS = by_key(memo, "batch_keys")


def _admitted_batch(
    model: str, dim: int, batch: list[int], admitted: Sequence[ColumnElement[bool]]
) -> sa.Select[Any]:
    # The batch's ids drive (``by_key``: primary-key lookups only on SQLite), then
    # memo and its vector by primary key: without statistics SQLite otherwise
    # walked every NORMAL memo through ix_memo_updated_timeline for each batch of
    # ~100 ids (bench/search_latency.py --profile: most of a broad caller's search).
    e = memo_embedding
    keys = ordered_join(_BATCH_KEYS, memo, memo.c.id == _BATCH_KEYS.c.id)
    on = sa.and_(e.c.memo_id == memo.c.id, e.c.model == model, e.c.dim == dim)
    return (
        sa.select(memo.c.id)
        .select_from(ordered_join(keys, e, on))
        .where(_BATCH_KEYS.c.id.in_(batch), *admitted)
    )


async def walk_ranking(
    conn: AsyncConnection,
    cache: VectorCache,
    model: str,
    query: Vectors,
    admitted: Sequence[ColumnElement[bool]],
    pool: int,
) -> list[int] | None:
    """``walk_scored`` without the similarities."""
    walked = await walk_scored(conn, cache, model, query, admitted, pool)
    return None if walked is None else walked[0]


async def walk_scored(
    conn: AsyncConnection,
    cache: VectorCache,
    model: str,
    query: Vectors,
    admitted: Sequence[ColumnElement[bool]],
    pool: int,
) -> tuple[list[int], tuple[float, ...]] | None:
    """The ``pool`` most similar admitted memos, or ``None`` when few memos are admitted.

    One matrix product scores every cached vector; candidates are then checked
    for admission in similarity order, a batch of ids per statement, so a
    hidden memo is skipped, never ranked. When the admitted share looks too
    small to fill the pool from the ``WALK_WINDOW`` best, the caller
    falls back to scanning the admitted ids (fast exactly when few are admitted).
    """
    ids, scores = cache.score_all(query)
    dim = int(query.shape[0])
    order = _ordered(ids, scores, WALK_WINDOW)
    similarity = dict(zip(ids[order].tolist(), scores[order].tolist(), strict=True))

    def scored(found: list[int]) -> tuple[list[int], tuple[float, ...]]:
        return found, tuple(float(similarity[i]) for i in found)

    found: list[int] = []
    walked = 0
    size = max(2 * pool, WALK_FIRST)  # one batch when most memos are admitted
    while walked < len(order):
        batch = ids[order[walked : walked + size]].tolist()
        ok = set((await conn.execute(_admitted_batch(model, dim, batch, admitted))).scalars())
        found.extend(memo_id for memo_id in batch if memo_id in ok)
        walked += len(batch)
        if len(found) >= pool:
            return scored(found[:pool])
        left = len(order) - walked
        if left and len(found) + left * len(found) / walked < pool:
            break  # at this admitted rate the window cannot fill the pool
        # next batch: what the observed rate needs, with a margin
        need = (pool - len(found)) * walked / len(found) * 1.5 if found else 2 * walked
        size = max(1, min(WALK_WINDOW, int(need) + 1))
    if len(order) == len(ids) and walked == len(order):
        return scored(found)  # every cached vector was considered
    return None
