"""Groups of a space: named sets of members that grants can name.

Groups are structural, like the roster: any ACTIVE member lists them, only a
space ADMIN creates them or changes who is in them. A group member must be
an ACTIVE member of the space; leaving the space takes the user out of its
groups (:mod:`app.spaces.provisioning`), and a group's grants count only for
its ACTIVE members in any case.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from app.api.structs import rfc3339
from app.db.schema import space_group, space_group_member, space_member, user_account
from app.errors import AlreadyExists, FailedPrecondition, InvalidArgument, NotFound
from app.spaces import roster, schemas
from app.spaces.rows import GroupRow
from app.spaces.service import SpaceContext, member_space, record_event, user_by_name

__all__ = [
    "add_group_member",
    "create_group",
    "group_id",
    "group_in_space",
    "list_group_members",
    "list_groups",
    "remove_group_member",
]


def group_id(raw: str) -> int:
    """``7`` or ``spaces/x/groups/7`` → 7; 400 otherwise."""
    text = raw.rsplit("/", 1)[-1]
    if not (text.isascii() and text.isdigit()) or len(text) > 9:
        raise InvalidArgument(f"group: {raw!r} is not a group id")
    return int(text)


def group_out(space_uid: str, row: GroupRow) -> schemas.Group:
    return schemas.Group(
        name=f"spaces/{space_uid}/groups/{row.id}",
        title=row.title,
        create_time=rfc3339(row.created_ts),
    )


async def group_in_space(conn: AsyncConnection, space_id: int, gid: int) -> GroupRow:
    row = (
        await conn.execute(
            sa.select(space_group).where(
                space_group.c.id == gid, space_group.c.space_id == space_id
            )
        )
    ).first()
    if row is None:
        raise NotFound(f"group {gid} not found")
    return row


async def list_groups(
    conn: AsyncConnection, ctx: SpaceContext, uid: str
) -> schemas.ListGroupsResponse:
    row, _ = await member_space(conn, ctx.caller, uid)
    rows = (
        await conn.execute(
            sa.select(space_group)
            .where(space_group.c.space_id == row.id)
            .order_by(space_group.c.id)
        )
    ).all()
    return schemas.ListGroupsResponse(groups=[group_out(row.uid, g) for g in rows])


async def create_group(
    conn: AsyncConnection, ctx: SpaceContext, uid: str, data: schemas.GroupIn
) -> schemas.Group:
    row, _ = await member_space(conn, ctx.caller, uid, admin=True, lock=True)
    title = roster.valid_title(data.title)
    gid = (
        await conn.execute(
            space_group.insert()
            .values(space_id=row.id, title=title, created_ts=ctx.now)
            .returning(space_group.c.id)
        )
    ).scalar_one()
    await record_event(conn, ctx, row.id, "GROUP_CREATE", {"group_id": gid, "title": title})
    return group_out(row.uid, await group_in_space(conn, row.id, gid))


async def list_group_members(
    conn: AsyncConnection, ctx: SpaceContext, uid: str, raw_gid: str
) -> schemas.ListGroupMembersResponse:
    row, _ = await member_space(conn, ctx.caller, uid)
    group = await group_in_space(conn, row.id, group_id(raw_gid))
    names = (
        await conn.execute(
            sa.select(user_account.c.username)
            .join(space_group_member, space_group_member.c.user_id == user_account.c.id)
            .where(space_group_member.c.group_id == group.id)
            .order_by(user_account.c.username)
        )
    ).scalars()
    prefix = f"spaces/{row.uid}/groups/{group.id}/members"
    return schemas.ListGroupMembersResponse(
        members=[schemas.GroupMember(name=f"{prefix}/{u}", user=f"users/{u}") for u in names]
    )


async def add_group_member(
    conn: AsyncConnection, ctx: SpaceContext, uid: str, raw_gid: str, data: schemas.GroupMemberIn
) -> schemas.GroupMember:
    row, _ = await member_space(conn, ctx.caller, uid, admin=True, lock=True)
    group = await group_in_space(conn, row.id, group_id(raw_gid))
    user = await user_by_name(conn, data.user, "user")
    active = (
        await conn.execute(
            sa.select(space_member.c.user_id).where(
                space_member.c.space_id == row.id,
                space_member.c.user_id == user.id,
                space_member.c.state == "ACTIVE",
            )
        )
    ).first()
    if active is None:
        raise FailedPrecondition(
            f"user {user.username!r} is not an active member of space {row.uid!r}"
        )
    exists = (
        await conn.execute(
            sa.select(space_group_member.c.user_id).where(
                space_group_member.c.group_id == group.id,
                space_group_member.c.user_id == user.id,
            )
        )
    ).first()
    if exists is not None:
        raise AlreadyExists(f"user {user.username!r} is already in group {group.id}")
    await conn.execute(space_group_member.insert().values(group_id=group.id, user_id=user.id))
    await record_event(conn, ctx, row.id, "GROUP_ADD", {"group_id": group.id, "user_id": user.id})
    return schemas.GroupMember(
        name=f"spaces/{row.uid}/groups/{group.id}/members/{user.username}",
        user=f"users/{user.username}",
    )


async def remove_group_member(
    conn: AsyncConnection, ctx: SpaceContext, uid: str, raw_gid: str, username: str
) -> None:
    row, _ = await member_space(conn, ctx.caller, uid, admin=True, lock=True)
    group = await group_in_space(conn, row.id, group_id(raw_gid))
    user = await user_by_name(conn, username, "username")
    gone = await conn.execute(
        space_group_member.delete().where(
            space_group_member.c.group_id == group.id, space_group_member.c.user_id == user.id
        )
    )
    if gone.rowcount == 0:
        raise NotFound(f"user {user.username!r} is not in group {group.id}")
    await record_event(
        conn, ctx, row.id, "GROUP_REMOVE", {"group_id": group.id, "user_id": user.id}
    )
