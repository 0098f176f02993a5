"""Listing and creating the comments of a memo.

A comment is an ordinary memo row with ``parent_id`` set and a COMMENT
``memo_relation`` (comment → parent). Its audience is its own: the parent
being readable is the door to the list, and then every comment passes the
same audience predicate as any memo, in the same SQL statement, so a hidden
comment neither appears nor counts. The COMMENT relation grants nothing.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.admission import conditions
from app.db.schema import memo_relation
from app.errors import Conflict, InvalidArgument
from app.memos.listing import ListQuery, admission_of, list_memos
from app.memos.rows import MemoRow
from app.memos.schemas import MemoIn
from app.memos.service import WriteContext, create_memo_row
from app.webhooks.outbox import Activity, emit


async def list_comments(
    conn: AsyncConnection, parent: MemoRow, q: ListQuery, secret: str
) -> tuple[list[MemoRow], str, int]:
    """One page of ``parent``'s comments readable by ``q.caller``, and their total."""
    rows, token = await list_memos(conn, q, secret)
    admission = admission_of(q.caller, q.mode, q.state, parent.id, q.filter_clause)
    total = (
        await conn.execute(sa.select(sa.func.count()).where(*conditions(admission)))
    ).scalar_one()
    return rows, token, int(total)


async def create_comment(
    conn: AsyncConnection, ctx: WriteContext, parent: MemoRow, data: MemoIn, uid: str | None
) -> MemoRow:
    """Create a comment on a readable ``parent``; its visibility defaults to PRIVATE.

    Refused on an archived parent (409, as Memos does) and on a comment
    (comments do not nest). The caller must already have passed the read
    check on ``parent``. Answers the comment's ``memo`` row as written.
    """
    if parent.state != "NORMAL":
        raise Conflict(f"memo {parent.uid!r} is archived: it cannot be commented on")
    if parent.parent_id is not None:
        raise InvalidArgument(f"memo {parent.uid!r} is a comment: comments do not nest")
    row = await create_memo_row(conn, ctx, data, uid, parent_id=parent.id)
    await conn.execute(
        memo_relation.insert().values(memo_id=row.id, related_memo_id=parent.id, type="COMMENT")
    )
    await emit(conn, ctx, row.id, Activity.COMMENT_CREATED, owner_id=parent.creator_id)
    return row
