"""SQLite's broad callers: the most similar cached vectors, checked for admission in
similarity order, so a hidden memo is skipped, never ranked.

``probe_rate`` first checks an even sample of the cached ids for admission
(one statement): a caller who admits too few memos to fill the pool from the
``WALK_WINDOW`` best goes to the exact scan of its admitted ids instead
(``app.search.exact``), without scoring every cached vector first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from app.db.joins import by_key, ordered_join
from app.db.schema import memo
from app.search.embedder import Vectors
from app.search.exact import ordered
from app.search.tables import memo_embedding
from app.search.vectors import VectorCache

WALK_WINDOW = 1024  # most similar vectors checked for admission, then scan admitted ids
WALK_FIRST = 100  # candidates in the first admission check (at least 2 x pool)
PROBE_SIZE = 256  # cached ids, evenly spread, checked for admission to choose the way
WALK_MARGIN = 1.5  # the window must be expected to hold this many times the pool


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


async def probe_rate(
    conn: AsyncConnection,
    cache: VectorCache,
    model: str,
    dim: int,
    admitted: Sequence[ColumnElement[bool]],
) -> float:
    """The share of an even sample of the cached ids that the caller admits (one
    statement, in the request's snapshot). It only chooses the way to rank (the
    walk or the exact scan, which give the same ranking) and sizes the walk's
    first batch; nothing about the sampled memos reaches the response."""
    sample = cache.sample(PROBE_SIZE)
    if not sample:
        return 1.0
    ok = (await conn.execute(_admitted_batch(model, dim, sample, admitted))).scalars().all()
    return len(ok) / len(sample)


def worth_walking(rate: float, cached: int, pool: int) -> bool:
    """Whether the walk is expected to fill the pool from the ``WALK_WINDOW`` most
    similar vectors at the admitted ``rate`` (else the exact scan of the admitted
    ids is cheaper: a 1% key skips scoring every cached vector). A cache no
    larger than the window is walked whole either way. Pure."""
    return cached <= WALK_WINDOW or rate * WALK_WINDOW >= WALK_MARGIN * pool


def first_batch(rate: float | None, pool: int) -> int:
    """The walk's first admission batch: one statement at the probed rate. Pure."""
    size = max(2 * pool, WALK_FIRST)
    if rate:
        size = max(size, int(WALK_MARGIN * pool / rate) + 1)
    return min(WALK_WINDOW, size)


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
    rate: float | None = None,
) -> tuple[list[int], tuple[float, ...]] | None:
    """The ``pool`` most similar admitted memos, or ``None`` when few memos are admitted.

    ``VectorCache.top`` gives the ``WALK_WINDOW`` most similar cached vectors
    (exactly, ties at the cut included); they are then checked for admission
    in similarity order, a batch of ids per statement (the first sized by the
    probed ``rate``), so a hidden memo is skipped, never ranked. When the
    admitted share looks too small to fill the pool from the window, the
    caller falls back to scanning the admitted ids.
    """
    ids, scores = cache.top(query, WALK_WINDOW)
    dim = int(query.shape[0])
    order = ordered(ids, scores, WALK_WINDOW)
    similarity = dict(zip(ids[order].tolist(), scores[order].tolist(), strict=True))

    def scored(found: list[int]) -> tuple[list[int], tuple[float, ...]]:
        return found, tuple(float(similarity[i]) for i in found)

    found: list[int] = []
    walked = 0
    size = first_batch(rate, pool)  # one batch when the probe's rate holds
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
    if len(order) == len(cache) and walked == len(order):
        return scored(found)  # every cached vector was considered
    return None
