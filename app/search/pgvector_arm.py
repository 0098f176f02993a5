"""The semantic arm on PostgreSQL with pgvector: one statement.

Two rankings, of which the statement runs one, chosen by its own count of
the caller's admitted memos (at most ``EXACT_MAX + 1`` read):

- a small audience (at most ``EXACT_MAX`` memos) is ranked exactly: each
  admitted memo's vector, looked up by primary key, and its distance;
- a larger one by ``ORDER BY embedding <=> :q`` with the admission conditions
  in WHERE, served by the HNSW index of the dimension;
  ``hnsw.iterative_scan = relaxed_order`` keeps scanning the graph until
  ``pool`` admitted rows are found, and the rows are re-sorted by exact
  distance.

The pending count is a third subquery of the *same* statement, so the ranking
and the count see one snapshot.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from app.db.schema import memo
from app.search.arm import SemanticArm
from app.search.ddl import HNSW_DIMS
from app.search.embedder import Vectors
from app.search.pending import queued_count, queued_statement
from app.search.tables import HalfVec, memo_embedding_pgvector
from app.search.vectors import pgvector_text


def _distance(query: Vectors) -> ColumnElement[float]:
    """A stored vector's cosine distance to the query. The query is one bound
    parameter, however often the statement uses it; for an indexed dimension the
    stored vector is cast as the HNSW index's expression is, so the index serves it."""
    dim = int(query.shape[0])
    text = sa.bindparam("query_vector", pgvector_text(query), type_=sa.Text)
    target = sa.cast(sa.cast(text, sa.Text), HalfVec(dim))
    e = memo_embedding_pgvector
    column = sa.cast(e.c.embedding, HalfVec(dim)) if dim in HNSW_DIMS else e.c.embedding
    return column.op("<=>", return_type=sa.Float)(target)


def pgvector_statement(
    model: str, query: Vectors, admitted: Sequence[ColumnElement[bool]], pool: int
) -> sa.Select[Any]:
    """Nearest admitted vectors of ``model``. The dimension is rendered as a literal so
    the planner can match the partial HNSW index (``WHERE dim = 384``) in generic plans."""
    e = memo_embedding_pgvector
    dim = int(query.shape[0])
    distance = _distance(query)
    return (
        sa.select(e.c.memo_id, distance.label("distance"))
        .select_from(e.join(memo, memo.c.id == e.c.memo_id))
        .where(e.c.model == model, e.c.dim == sa.literal_column(str(dim)), *admitted)
        .order_by(distance)
        .limit(pool)
    )


# An audience of at most this many admitted memos is ranked exactly (about 5 us a
# memo), whatever the planner believes of memo_embedding. Before, the planner chose:
# with no statistics on memo_embedding (its rows bulk-inserted, not yet analysed)
# it took ``model = .. AND dim = ..`` for one row and sorted every vector of the
# model, each joined to memo (76 ms at 20k memos, ~320 ms at 100k for a key seeing
# 1%); and a walk for a selective audience can spend ``hnsw.max_scan_tuples`` on
# hidden vectors and come back short. Reading up to EXACT_MAX + 1 admitted ids
# costs a broad caller about 2 ms.
EXACT_MAX = 1000


def exact_statement(
    model: str,
    query: Vectors,
    admitted: Sequence[ColumnElement[bool]],
    pool: int,
    exact_max: int = EXACT_MAX,
) -> tuple[sa.Select[Any], sa.Select[Any]]:
    """The exact ranking of the admitted memos and their HNSW ranking, each gated on
    the number of admitted memos (at most ``exact_max``, or more: one of them runs),
    counted in one CTE of at most ``exact_max + 1`` admitted ids."""
    e = memo_embedding_pgvector
    dim = int(query.shape[0])
    few = (
        sa.select(memo.c.id)
        .where(*admitted)
        .limit(sa.literal_column(str(int(exact_max) + 1)))
        .cte("few")
        .prefix_with("MATERIALIZED")
    )
    counted = sa.select(sa.func.count()).select_from(few).scalar_subquery()
    # The vector of one admitted memo, by primary key. OFFSET 0 keeps the subquery
    # from being flattened into a join the planner could drive from memo_embedding
    # (it did, with stale statistics: every vector of the model, 76 ms at 20k).
    one = (
        sa.select(_distance(query).label("distance"))
        .where(e.c.memo_id == few.c.id, e.c.model == model, e.c.dim == sa.literal_column(str(dim)))
        .offset(sa.literal_column("0"))
        .lateral("one")
    )
    exact = (
        sa.select(few.c.id.label("memo_id"), one.c.distance)
        .select_from(few.join(one, sa.true()))
        .where(counted <= sa.literal_column(str(int(exact_max))))
        .order_by(one.c.distance)
        .limit(pool)
    )
    walked = pgvector_statement(model, query, admitted, pool).where(
        counted > sa.literal_column(str(int(exact_max)))
    )
    return exact, walked


def pgvector_arm_statement(
    model: str,
    query: Vectors,
    admitted: Sequence[ColumnElement[bool]],
    pool: int,
    exact_max: int = EXACT_MAX,
) -> sa.Select[Any]:
    """The ranking and the caller's pending count as one statement (one snapshot): the
    one-row count, left-joined to the ranked rows (none: one row of NULLs). The ranking
    is exact when the caller admits at most ``exact_max`` memos, else ``pgvector_statement``
    (HNSW); the choice is made in the statement, on its own count of admitted memos."""
    exact, walked = exact_statement(model, query, admitted, pool, exact_max)
    a = exact.subquery("exact")
    b = walked.subquery("walked")
    ranked = sa.union_all(
        sa.select(a.c.memo_id, a.c.distance), sa.select(b.c.memo_id, b.c.distance)
    ).subquery("ranked")
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
    # The three settings in one round trip (set_config(..., true) is SET LOCAL).
    # plan_cache_mode: asyncpg prepares statements, and after five runs PostgreSQL
    # may switch to a generic plan that cannot see the caller's selectivity: for a
    # key that sees 1% of 1M memos it abandoned the HNSW scan (50 ms) for a
    # 400-600 ms plan. A custom plan per search costs about a millisecond of planning.
    await conn.exec_driver_sql(
        "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true),"
        f" set_config('hnsw.ef_search', '{max(40, min(2 * pool, 1000))}', true),"
        " set_config('plan_cache_mode', 'force_custom_plan', true)"
    )
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
