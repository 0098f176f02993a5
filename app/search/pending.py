"""The caller's pending count: admitted memos waiting in the embedding queue."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from app.db.joins import ordered_join
from app.db.schema import memo
from app.search.tables import memo_embedding_queue


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
