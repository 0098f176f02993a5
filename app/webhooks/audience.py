"""Whether a webhook's owner may read a memo: the read rule, asked as the owner.

Asked twice for every event: when the write enqueues it (an event its owner
could not read is never enqueued) and again at each delivery attempt, against
the rows and grants as they are then, so a memo made PRIVATE, moved, or whose
space the owner left since the write is withheld.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.audience import AccessMode, MemoFacts, can_read
from app.access.caller import Caller, Credential
from app.access.scope import EMPTY_SCOPE, load_scope
from app.db.schema import memo, user_account


async def owner_caller(conn: AsyncConnection, owner_id: int) -> Caller | None:
    """The owner as an unrestricted signed-in caller; None if gone or not NORMAL."""
    row = (
        await conn.execute(
            sa.select(user_account.c.username, user_account.c.role, user_account.c.state).where(
                user_account.c.id == owner_id
            )
        )
    ).first()
    if row is None or row.state != "NORMAL":
        return None
    return Caller(owner_id, row.username, row.role, Credential.SESSION)


async def memo_row(conn: AsyncConnection, memo_id: int) -> Any:
    return (
        await conn.execute(
            sa.select(memo, user_account.c.state.label("creator_state"))
            .outerjoin(user_account, user_account.c.id == memo.c.creator_id)
            .where(memo.c.id == memo_id)
        )
    ).first()


def facts_of(row: Any) -> MemoFacts:
    return MemoFacts(
        creator_id=row.creator_id,
        creator_state=row.creator_state,
        visibility=row.visibility,
        state=row.state,
        space_id=row.space_id,
        tree=row.tree,
    )


async def may_read(
    conn: AsyncConnection, owner: Caller, facts: MemoFacts, mode: AccessMode
) -> bool:
    scope = EMPTY_SCOPE if facts.space_id is None else await load_scope(conn, owner, facts.space_id)
    return can_read(facts, owner, mode, scope)


async def creator_state(conn: AsyncConnection, creator_id: int) -> str | None:
    value = (
        await conn.execute(sa.select(user_account.c.state).where(user_account.c.id == creator_id))
    ).scalar_one_or_none()
    return None if value is None else str(value)
