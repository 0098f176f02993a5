"""Security events about accounts, in the ``audit_event`` table.

What an admin did to an account (issued a reset link) and what happened to
its credentials (a reset link used, a password changed) is recorded in the
same transaction as the change, and readable by the user it concerns and by
admins (``UserService_ListAuditEvents``). This is what makes an admin-issued
reset visible to its user: the admin can hand out a link, never a password,
and the account shows who issued it and when it was used.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from app.db.schema import audit_event


class Action(StrEnum):
    PASSWORD_RESET_ISSUED = "PASSWORD_RESET_ISSUED"  # noqa: S105 (an event name)
    PASSWORD_RESET_USED = "PASSWORD_RESET_USED"  # noqa: S105
    PASSWORD_CHANGED = "PASSWORD_CHANGED"  # noqa: S105


async def record(
    conn: AsyncConnection,
    action: Action,
    *,
    actor: str,
    target_user_id: int | None,
    now: int,
    detail: dict[str, Any] | None = None,
) -> None:
    await conn.execute(
        audit_event.insert().values(
            created_ts=now,
            action=action.value,
            actor=actor[:80],
            target_user_id=target_user_id,
            detail=detail or {},
        )
    )


async def events_of(conn: AsyncConnection, user_id: int, limit: int = 100) -> list[Any]:
    """The newest events about one user, newest first."""
    return list(
        (
            await conn.execute(
                sa.select(audit_event)
                .where(audit_event.c.target_user_id == user_id)
                .order_by(audit_event.c.id.desc())
                .limit(limit)
            )
        ).all()
    )
