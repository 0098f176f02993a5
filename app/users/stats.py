"""``users/{u}:getStats``: counts, tags and heatmap times under the caller's audience.

Every number is computed from the same audience predicate as the list, so a
memo the caller cannot read never shifts a count or a tag.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.admission import Admission, admitted, conditions
from app.access.audience import AccessMode
from app.access.caller import Caller
from app.api.structs import rfc3339
from app.db.schema import memo, memo_tag, user_account
from app.users.schemas import UserStats


async def user_stats(
    conn: AsyncConnection, username: str, user_id: int, caller: Caller | None, mode: AccessMode
) -> UserStats:
    visible = admitted(Admission(caller, mode, creator_id=user_id))
    rows = (
        await conn.execute(
            sa.select(
                memo.c.uid,
                memo.c.created_ts,
                memo.c.updated_ts,
                memo.c.pinned,
                memo.c.has_link,
                memo.c.has_code,
                memo.c.has_task_list,
                memo.c.has_incomplete_tasks,
            )
            .where(visible)
            .order_by(memo.c.created_ts.desc())
        )
    ).all()
    tag_rows = (
        await conn.execute(
            sa.select(memo_tag.c.tag, sa.func.count())
            .join(memo, memo.c.id == memo_tag.c.memo_id)
            .where(visible)
            .group_by(memo_tag.c.tag)
            .order_by(memo_tag.c.tag)
        )
    ).all()
    return UserStats(
        name=f"users/{username}",
        memo_display_timestamps=[rfc3339(r.created_ts) for r in rows],
        memo_created_timestamps=[rfc3339(r.created_ts) for r in rows],
        memo_updated_timestamps=[rfc3339(r.updated_ts) for r in rows],
        memo_type_stats={
            "linkCount": sum(1 for r in rows if r.has_link),
            "codeCount": sum(1 for r in rows if r.has_code),
            "todoCount": sum(1 for r in rows if r.has_task_list),
            "undoCount": sum(1 for r in rows if r.has_incomplete_tasks),
        },
        tag_count={tag: int(n) for tag, n in tag_rows},
        pinned_memos=[f"memos/{r.uid}" for r in rows if r.pinned],
        total_memo_count=len(rows),
    )


async def all_user_stats(
    conn: AsyncConnection, caller: Caller | None, mode: AccessMode
) -> list[UserStats]:
    """Stats of every NORMAL user with a memo the caller may read (and the caller's own).

    Users whose memos the caller cannot read are not listed, so the call
    reveals no more accounts than the memos themselves do.
    """
    with_memos = sa.select(memo.c.creator_id).where(*conditions(Admission(caller, mode)))
    who: sa.ColumnElement[bool] = user_account.c.id.in_(with_memos)
    if caller is not None:
        who = sa.or_(who, user_account.c.id == caller.user_id)
    rows = (
        await conn.execute(
            sa.select(user_account.c.id, user_account.c.username)
            .where(who, user_account.c.state == "NORMAL")
            .order_by(user_account.c.id)
        )
    ).all()
    return [await user_stats(conn, r.username, r.id, caller, mode) for r in rows]
