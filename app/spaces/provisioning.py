"""The grants a seat comes with, and what leaving takes away (``access.md`` section 4).

The creator of a space gets OWNER at its own home and at ``share``, and
deliberately not at the root, so creating a space reveals nobody's home. A
member who accepts an invitation gets OWNER at its home plus the space's
``default_member_grants``. Leaving or being removed deletes the member's
grants and group memberships in that space (its memos stay).
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.clamp import Grant
from app.access.paths import home_of
from app.access.scope import LEVELS, OWNER
from app.db.schema import space_grant, space_group, space_group_member

SHARE = "share"

__all__ = ["creator_grants", "drop_member_access", "member_grants_on_accept", "provision"]


def creator_grants(user_id: int) -> list[Grant]:
    return [Grant(home_of(user_id), OWNER), Grant(SHARE, OWNER)]


def member_grants_on_accept(user_id: int, defaults: Any) -> list[Grant]:
    """OWNER at the member's home, plus the space's default member grants (malformed: skipped)."""
    out = [Grant(home_of(user_id), OWNER)]
    for item in defaults if isinstance(defaults, list) else []:
        if not isinstance(item, dict):
            continue
        path, level = item.get("path"), LEVELS.get(str(item.get("level")))
        if isinstance(path, str) and level is not None and Grant(path, level) not in out:
            out.append(Grant(path, level))
    return out


async def provision(
    conn: AsyncConnection, space_id: int, user_id: int, grants: list[Grant], now: int
) -> None:
    if not grants:
        return
    await conn.execute(
        space_grant.insert(),
        [
            {
                "space_id": space_id,
                "user_id": user_id,
                "group_id": None,
                "path": g.path,
                "level": g.level,
                "created_by": user_id,
                "created_ts": now,
            }
            for g in grants
        ],
    )


async def drop_member_access(conn: AsyncConnection, space_id: int, user_id: int) -> None:
    """Delete ``user_id``'s grants and group memberships in ``space_id``."""
    await conn.execute(
        space_grant.delete().where(
            space_grant.c.space_id == space_id, space_grant.c.user_id == user_id
        )
    )
    await conn.execute(
        space_group_member.delete().where(
            space_group_member.c.user_id == user_id,
            space_group_member.c.group_id.in_(
                sa.select(space_group.c.id).where(space_group.c.space_id == space_id)
            ),
        )
    )
