"""A space's roster, in the caller's transaction: members, invitations, roles.

The pure rules (roles, states, the last-admin rule) are in
``app.spaces.roster``; this module reads and writes the seats. Roster
changes of one space are serialised by locking its row (PostgreSQL; SQLite
has a single writer), so two admins demoting each other at once cannot both
pass the last-admin rule. Each change appends a ``space_event`` row in the
same transaction (``app.spaces.service.record_event``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from app.api.paging import decode_int_key, fingerprint, trim_page
from app.api.structs import resource_id, rfc3339
from app.db.schema import space, space_member, user_account
from app.errors import AlreadyExists, Conflict, FailedPrecondition, InvalidArgument, NotFound
from app.spaces import provisioning, roster, schemas
from app.spaces.rows import SeatRow, SpaceRow
from app.spaces.service import SpaceContext, member_space, record_event, user_by_name, usernames
from app.users.rows import UserRow


def member_out(space_uid_: str, row: SeatRow, names: dict[int, str]) -> schemas.Member:
    username = names.get(row.user_id, "")
    return schemas.Member(
        name=f"spaces/{space_uid_}/members/{username}",
        user=f"users/{username}",
        role=row.role,
        state=row.state,
        create_time=rfc3339(row.created_ts),
        update_time=rfc3339(row.updated_ts),
        inviter=f"users/{names[row.invited_by]}"
        if row.invited_by is not None and row.invited_by in names
        else msgspec.UNSET,
    )


async def _present_members(
    conn: AsyncConnection, space_uid_: str, rows: Sequence[SeatRow]
) -> list[schemas.Member]:
    ids = {r.user_id for r in rows} | {r.invited_by for r in rows if r.invited_by is not None}
    names = await usernames(conn, ids)
    return [member_out(space_uid_, r, names) for r in rows]


async def _seat_row(conn: AsyncConnection, space_id: int, user_id: int) -> SeatRow | None:
    return (
        await conn.execute(
            sa.select(space_member).where(
                space_member.c.space_id == space_id, space_member.c.user_id == user_id
            )
        )
    ).first()


async def _written_seat(conn: AsyncConnection, space_id: int, user_id: int) -> SeatRow:
    """A seat this transaction has just written: it exists, so ``one()``."""
    return (
        await conn.execute(
            sa.select(space_member).where(
                space_member.c.space_id == space_id, space_member.c.user_id == user_id
            )
        )
    ).one()


async def _active_admins(conn: AsyncConnection, space_id: int) -> int:
    return int(
        (
            await conn.execute(
                sa.select(sa.func.count()).where(
                    space_member.c.space_id == space_id,
                    space_member.c.role == "ADMIN",
                    space_member.c.state == "ACTIVE",
                )
            )
        ).scalar_one()
    )


async def _refuse_last_admin(
    conn: AsyncConnection, space_id: int, seat: roster.Seat, new_role: str | None, action: str
) -> None:
    if roster.removes_last_admin(await _active_admins(conn, space_id), seat, new_role):
        raise Conflict(
            f"the last active ADMIN of a space cannot {action}: "
            "make another member ADMIN first, or delete the space"
        )


async def list_members(
    conn: AsyncConnection, ctx: SpaceContext, uid: str, page_size: int, page_token: str | None
) -> schemas.ListMembersResponse:
    row, _ = await member_space(conn, ctx.caller, uid)
    query_id = fingerprint("members", row.id, ctx.caller.user_id)
    conditions = [space_member.c.space_id == row.id]
    if page_token:
        (after,) = decode_int_key(ctx.secret, query_id, page_token, 1)
        conditions.append(space_member.c.user_id > after)
    rows = (
        await conn.execute(
            sa.select(space_member)
            .where(*conditions)
            .order_by(space_member.c.user_id)
            .limit(page_size + 1)
        )
    ).all()
    page = trim_page(rows, page_size, lambda r: [r.user_id], secret=ctx.secret, query=query_id)
    return schemas.ListMembersResponse(
        members=await _present_members(conn, row.uid, page.rows), next_page_token=page.next_token
    )


async def invite(
    conn: AsyncConnection, ctx: SpaceContext, uid: str, data: schemas.InvitationIn
) -> schemas.Member:
    row, _ = await member_space(conn, ctx.caller, uid, admin=True, lock=True)
    role = roster.valid_role(data.role)
    invitee = await user_by_name(conn, data.invitee, "invitee")
    if invitee.state != "NORMAL":
        raise FailedPrecondition(f"user {invitee.username!r} is archived and cannot be invited")
    existing = await _seat_row(conn, row.id, invitee.id)
    if existing is not None:
        what = "a member" if existing.state == "ACTIVE" else "already invited"
        raise AlreadyExists(f"user {invitee.username!r} is {what} in space {uid!r}")
    await conn.execute(
        space_member.insert().values(
            space_id=row.id,
            user_id=invitee.id,
            role=role,
            state="INVITED",
            invited_by=ctx.caller.user_id,
            created_ts=ctx.now,
            updated_ts=ctx.now,
        )
    )
    await record_event(conn, ctx, row.id, "INVITE", {"user_id": invitee.id, "role": role})
    seat = await _written_seat(conn, row.id, invitee.id)
    return (await _present_members(conn, row.uid, [seat]))[0]


async def _own_invitation(
    conn: AsyncConnection, ctx: SpaceContext, uid: str, username: str
) -> tuple[Any, Any]:
    """The space and the caller's own INVITED seat, or 404 (for anyone else, too)."""
    if resource_id(username, "users", field="username") != ctx.caller.username:
        raise NotFound("invitation not found")
    row = (
        await conn.execute(
            sa.select(space.c.id, space.c.uid, space.c.default_member_grants)
            .join(space_member, space_member.c.space_id == space.c.id)
            .where(
                space.c.uid == uid,
                space_member.c.user_id == ctx.caller.user_id,
                space_member.c.state == "INVITED",
            )
            .with_for_update(of=space)
        )
    ).first()
    if row is None:
        raise NotFound("invitation not found")
    return row, await _seat_row(conn, row.id, ctx.caller.user_id)


async def accept(
    conn: AsyncConnection, ctx: SpaceContext, uid: str, username: str
) -> schemas.Member:
    row, seat = await _own_invitation(conn, ctx, uid, username)
    await conn.execute(
        space_member.update()
        .where(space_member.c.space_id == row.id, space_member.c.user_id == ctx.caller.user_id)
        .values(state="ACTIVE", updated_ts=ctx.now)
    )
    await provisioning.provision(
        conn,
        row.id,
        ctx.caller.user_id,
        provisioning.member_grants_on_accept(ctx.caller.user_id, row.default_member_grants),
        ctx.now,
    )
    await record_event(
        conn,
        ctx,
        row.id,
        "ACCEPT",
        {"role": seat.role, "defaultMemberGrants": row.default_member_grants},
    )
    fresh = await _written_seat(conn, row.id, ctx.caller.user_id)
    return (await _present_members(conn, row.uid, [fresh]))[0]


async def decline(conn: AsyncConnection, ctx: SpaceContext, uid: str, username: str) -> None:
    row, _ = await _own_invitation(conn, ctx, uid, username)
    await conn.execute(
        space_member.delete().where(
            space_member.c.space_id == row.id, space_member.c.user_id == ctx.caller.user_id
        )
    )
    await record_event(conn, ctx, row.id, "DECLINE", {"user_id": ctx.caller.user_id})


async def revoke(conn: AsyncConnection, ctx: SpaceContext, uid: str, username: str) -> None:
    row, _ = await member_space(conn, ctx.caller, uid, admin=True, lock=True)
    target = await user_by_name(conn, username, "username")
    seat = await _seat_row(conn, row.id, target.id)
    if seat is None or seat.state != "INVITED":
        raise NotFound(f"invitation of {target.username!r} not found")
    await conn.execute(
        space_member.delete().where(
            space_member.c.space_id == row.id, space_member.c.user_id == target.id
        )
    )
    await record_event(conn, ctx, row.id, "REVOKE", {"user_id": target.id})


async def _target_seat(
    conn: AsyncConnection, space_row: SpaceRow, username: str
) -> tuple[UserRow, SeatRow]:
    target = await user_by_name(conn, username, "username")
    seat = await _seat_row(conn, space_row.id, target.id)
    if seat is None:
        raise NotFound(f"member {target.username!r} not found")
    return target, seat


async def update_member(
    conn: AsyncConnection, ctx: SpaceContext, uid: str, username: str, data: schemas.MemberIn
) -> schemas.Member:
    row, _ = await member_space(conn, ctx.caller, uid, admin=True, lock=True)
    if isinstance(data.role, msgspec.UnsetType):
        raise InvalidArgument("role: required")
    role = roster.valid_role(data.role)
    target, seat = await _target_seat(conn, row, username)
    if seat.role != role:
        await _refuse_last_admin(
            conn, row.id, roster.Seat(seat.user_id, seat.role, seat.state), role, "be demoted"
        )
        await conn.execute(
            space_member.update()
            .where(space_member.c.space_id == row.id, space_member.c.user_id == target.id)
            .values(role=role, updated_ts=ctx.now)
        )
        await record_event(
            conn, ctx, row.id, "ROLE", {"user_id": target.id, "from": seat.role, "to": role}
        )
    fresh = await _written_seat(conn, row.id, target.id)
    return (await _present_members(conn, row.uid, [fresh]))[0]


async def remove_member(conn: AsyncConnection, ctx: SpaceContext, uid: str, username: str) -> None:
    """Remove a member (space ADMIN) or leave (the member itself)."""
    leaving = resource_id(username, "users", field="username") == ctx.caller.username
    row, _ = await member_space(conn, ctx.caller, uid, admin=not leaving, lock=True)
    target, seat = await _target_seat(conn, row, username)
    await _refuse_last_admin(
        conn,
        row.id,
        roster.Seat(seat.user_id, seat.role, seat.state),
        None,
        "leave" if leaving else "be removed",
    )
    await conn.execute(
        space_member.delete().where(
            space_member.c.space_id == row.id, space_member.c.user_id == target.id
        )
    )
    await provisioning.drop_member_access(conn, row.id, target.id)
    await record_event(conn, ctx, row.id, "LEAVE" if leaving else "REMOVE", {"user_id": target.id})


async def refuse_if_last_space_admin(conn: AsyncConnection, user_id: int, action: str) -> None:
    """409 when ``user_id`` is the last ACTIVE ADMIN (among NORMAL users) of any space.

    Archiving or deleting such a user would leave a space nobody can manage.
    """
    others = space_member.alias("others")
    other_admin = (
        sa.select(others.c.user_id)
        .join(user_account, user_account.c.id == others.c.user_id)
        .where(
            others.c.space_id == space_member.c.space_id,
            others.c.user_id != user_id,
            others.c.role == "ADMIN",
            others.c.state == "ACTIVE",
            user_account.c.state == "NORMAL",
        )
        .exists()
    )
    stranded = (
        (
            await conn.execute(
                sa.select(space.c.uid)
                .join(space_member, space_member.c.space_id == space.c.id)
                .where(
                    space_member.c.user_id == user_id,
                    space_member.c.role == "ADMIN",
                    space_member.c.state == "ACTIVE",
                    ~other_admin,
                )
                .order_by(space.c.id)
                .limit(5)
            )
        )
        .scalars()
        .all()
    )
    if stranded:
        names = ", ".join(f"spaces/{u}" for u in stranded)
        raise Conflict(
            f"the last active ADMIN of a space cannot {action}: make another member ADMIN "
            f"of {names} first, or delete it"
        )
