"""The exact scan: numpy scores exactly the vectors of the memos the caller admits.

Used on PostgreSQL without pgvector, on SQLite databases from before the
change log, on SQLite when this request's snapshot is older than the shared
cache, and on SQLite for narrow callers (a key that sees few memos), where
scoring the admitted ids beats scoring every cached vector. The admitted
ids, their content hashes and the admitted count come from one aggregate
statement, and numpy scores exactly those vectors, decoding only the ones
not already cached for that (id, hash). A vector rewritten between that
statement and the fetch of an uncached one is left out of the ranking and
counted as pending, so the count still covers exactly what was not ranked.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from app.db.schema import memo
from app.search.arm import Coverage, SemanticArm
from app.search.embedder import Vectors
from app.search.pending import queued_count
from app.search.tables import memo_embedding
from app.search.vectors import VectorCache, decode_many, similarities

FETCH_CHUNK = 5000


def _joined(model: str, dim: int) -> sa.Join:
    e = memo_embedding
    return memo.outerjoin(e, sa.and_(e.c.memo_id == memo.c.id, e.c.model == model, e.c.dim == dim))


def _int_list(text: str | None) -> npt.NDArray[np.int64]:
    if not text:
        return np.zeros(0, dtype=np.int64)
    return np.array(text.split(","), dtype=np.int64)


async def exact_arm(
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
        scores = np.concatenate([scores, similarities(vectors, query)])
    covered = Coverage(admitted_count, len(hit_ids))
    order = ordered(hit_ids, scores, pool)[:pool]
    return hit_ids[order].tolist(), tuple(float(x) for x in scores[order]), covered


def ordered(
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
