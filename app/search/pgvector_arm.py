"""The semantic arm on PostgreSQL with pgvector: one statement.

``ORDER BY embedding <=> :q`` with the admission conditions in WHERE, served
by the HNSW index of the dimension; ``hnsw.iterative_scan = relaxed_order``
keeps scanning the graph until ``pool`` admitted rows are found (so selective
audiences still fill the pool), and the rows are re-sorted by exact distance.
The pending count is a second subquery of the *same* statement, so both see
one snapshot.
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
