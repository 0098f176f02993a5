"""Space reads and writes, in the caller's transaction.

Every lookup inside a space goes through :func:`member_space`, which answers
"not found" unless the caller is an ACTIVE member (and, for a restricted key,
the space is declared): invitees and strangers learn nothing, not even that
the space exists. The only exception is the invitee's own accept/decline.
Each structural change appends a ``space_event`` row in the same
transaction. Roster changes of one space are serialised by locking its row
(PostgreSQL; SQLite has a single writer), so two admins demoting each other
at once cannot both pass the last-admin rule.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.caller import Caller
from app.access.scope import keeps_admin
from app.api.paging import decode_token, encode_token, fingerprint
from app.api.structs import resource_id, rfc3339, valid_uid
from app.db.schema import memo, memo_event, space, space_event, space_member, user_account
from app.errors import (
    AlreadyExists,
    Conflict,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
)
from app.spaces import provisioning, roster, schemas

MEMO_TRACKED = (
    "content",
    "visibility",
    "state",
    "pinned",
    "created_ts",
    "updated_ts",
    "location_placeholder",
    "location_latitude",
    "location_longitude",
)


@dataclass(frozen=True, slots=True)
class SpaceContext:
    caller: Caller
    now: int
    secret: str = ""


def declared_uids(caller: Caller) -> frozenset[str] | None:
    """The space uids a restricted key declares; None for an unrestricted credential."""
    if caller.restriction is None:
        return None
    return caller.restriction.declared_uids()


def _role_through(caller: Caller, row: Any) -> str:
    """The roster role as this credential may act on it (see :func:`member_space`)."""
    role = str(row.my_role)
    if role == "ADMIN" and not keeps_admin(caller.restriction, str(row.uid)):
        return "USER"
    return role


def space_uid(value: str) -> str:
    return valid_uid(resource_id(value, "spaces", field="space"), field="space")


def _not_found(uid: str) -> NotFound:
    return NotFound(f"space {uid!r} not found")


async def member_space(
    conn: AsyncConnection, caller: Caller, uid: str, *, admin: bool = False, lock: bool = False
) -> tuple[Any, Any]:
    """The space and the caller's ACTIVE seat in it, or 404; 403 when ``admin`` is needed.

    The seat's role is what the credential may act as: a space ADMIN
    presenting a restricted key whose declaration lacks ``admin: true`` is a
    plain USER here (``access.md`` section 5), so every ADMIN check that reads
    the seat (grant listing, roster, settings) honours the declaration.
    """
    declared = declared_uids(caller)
    if declared is not None and uid not in declared:
        raise _not_found(uid)
    query = (
        sa.select(
            space,
            space_member.c.role.label("my_role"),
            space_member.c.state.label("my_state"),
        )
        .join(space_member, space_member.c.space_id == space.c.id)
        .where(
            space.c.uid == uid,
            space_member.c.user_id == caller.user_id,
            space_member.c.state == "ACTIVE",
        )
    )
    if lock:
        query = query.with_for_update(of=space)
    row = (await conn.execute(query)).first()
    if row is None:
        raise _not_found(uid)
    role = _role_through(caller, row)  # a key without ``admin: true`` acts as a plain member
    if admin and role != "ADMIN":
        raise PermissionDenied(f"space {uid!r}: only a space ADMIN can do this")
    return row, roster.Seat(caller.user_id, role, row.my_state)


async def _event(
    conn: AsyncConnection, ctx: SpaceContext, space_id: int, kind: str, detail: dict[str, Any]
) -> None:
    await conn.execute(
        space_event.insert().values(
            space_id=space_id,
            actor_id=ctx.caller.user_id,
            kind=kind,
            detail={**detail, "credential": ctx.caller.origin()},
            created_ts=ctx.now,
        )
    )


def space_out(row: Any, creator: str, role: str, state: str) -> schemas.Space:
    grants = row.default_member_grants if isinstance(row.default_member_grants, list) else []
    return schemas.Space(
        name=f"spaces/{row.uid}",
        title=row.title,
        description=row.description,
        creator=f"users/{creator}",
        create_time=rfc3339(row.created_ts),
        update_time=rfc3339(row.updated_ts),
        default_member_grants=[
            schemas.GrantTemplate(path=str(g.get("path", "")), level=str(g.get("level", "")))
            for g in grants
            if isinstance(g, dict)
        ],
        membership=schemas.Membership(role=role, state=state),
    )


async def _usernames(conn: AsyncConnection, ids: set[int]) -> dict[int, str]:
    if not ids:
        return {}
    rows = await conn.execute(
        sa.select(user_account.c.id, user_account.c.username).where(user_account.c.id.in_(ids))
    )
    return {int(i): str(u) for i, u in rows.all()}


async def present_space(conn: AsyncConnection, row: Any, role: str, state: str) -> schemas.Space:
    names = await _usernames(conn, {row.creator_id})
    return space_out(row, names.get(row.creator_id, ""), role, state)


# --- spaces -------------------------------------------------------------------


async def create_space(
    conn: AsyncConnection, ctx: SpaceContext, data: schemas.SpaceIn, uid: str | None
) -> schemas.Space:
    if isinstance(data.title, msgspec.UnsetType):
        raise InvalidArgument("title: required")
    uid = valid_uid(uid, field="spaceId") if uid else secrets.token_hex(11)
    grants = (
        roster.DEFAULT_MEMBER_GRANTS
        if isinstance(data.default_member_grants, msgspec.UnsetType)
        else roster.valid_default_grants(data.default_member_grants)
    )
    values = {
        "uid": uid,
        "title": roster.valid_title(data.title),
        "description": roster.valid_description(
            data.description if isinstance(data.description, str) else ""
        ),
        "creator_id": ctx.caller.user_id,
        "default_member_grants": grants,
        "created_ts": ctx.now,
        "updated_ts": ctx.now,
    }
    try:
        async with conn.begin_nested():
            space_id = (
                await conn.execute(space.insert().values(**values).returning(space.c.id))
            ).scalar_one()
    except IntegrityError:
        raise AlreadyExists(f"space {uid!r} already exists") from None
    await conn.execute(
        space_member.insert().values(
            space_id=space_id,
            user_id=ctx.caller.user_id,
            role="ADMIN",
            state="ACTIVE",
            invited_by=None,
            created_ts=ctx.now,
            updated_ts=ctx.now,
        )
    )
    await provisioning.provision(
        conn, space_id, ctx.caller.user_id, provisioning.creator_grants(ctx.caller.user_id), ctx.now
    )
    await _event(conn, ctx, space_id, "CREATE", {"title": values["title"]})
    row = (await conn.execute(sa.select(space).where(space.c.id == space_id))).one()
    return await present_space(conn, row, "ADMIN", "ACTIVE")


async def list_spaces(
    conn: AsyncConnection, ctx: SpaceContext, state: str, page_size: int, page_token: str | None
) -> schemas.ListSpacesResponse:
    """The caller's spaces in ``state`` (ACTIVE: its spaces; INVITED: its invitations)."""
    if state not in roster.MEMBER_STATES:
        raise InvalidArgument(f"state: {state!r} is not one of ACTIVE, INVITED")
    query_id = fingerprint("spaces", state, ctx.caller.user_id)
    conditions = [space_member.c.user_id == ctx.caller.user_id, space_member.c.state == state]
    declared = declared_uids(ctx.caller)
    if declared is not None:
        conditions.append(space.c.uid.in_(sorted(declared)))
    if page_token:
        after = decode_token(ctx.secret, query_id, page_token)
        if len(after) != 1 or type(after[0]) is not int:
            raise InvalidArgument("pageToken: invalid page token")
        conditions.append(space.c.id > after[0])
    rows = (
        await conn.execute(
            sa.select(space, space_member.c.role.label("my_role"))
            .join(space_member, space_member.c.space_id == space.c.id)
            .where(*conditions)
            .order_by(space.c.id)
            .limit(page_size + 1)
        )
    ).all()
    token = ""
    if len(rows) > page_size:
        rows = rows[:page_size]
        token = encode_token(ctx.secret, query_id, [rows[-1].id])
    names = await _usernames(conn, {r.creator_id for r in rows})
    return schemas.ListSpacesResponse(
        spaces=[
            space_out(r, names.get(r.creator_id, ""), _role_through(ctx.caller, r), state)
            for r in rows
        ],
        next_page_token=token,
    )


def space_mask(mask: str | None, data: schemas.SpaceIn) -> set[str]:
    known = {
        "title": "title",
        "description": "description",
        "defaultmembergrants": "default_member_grants",
    }
    if mask is None or not mask.strip():
        return {
            name
            for name in ("title", "description", "default_member_grants")
            if not isinstance(getattr(data, name), msgspec.UnsetType)
        }
    paths = set()
    for raw in mask.split(","):
        path = known.get(raw.strip().replace("_", "").lower())
        if path is None:
            raise InvalidArgument(f"updateMask: unknown path {raw.strip()!r}")
        paths.add(path)
    return paths


async def update_space(
    conn: AsyncConnection, ctx: SpaceContext, uid: str, data: schemas.SpaceIn, paths: set[str]
) -> schemas.Space:
    row, seat = await member_space(conn, ctx.caller, uid, admin=True, lock=True)
    if not paths:
        raise InvalidArgument("updateMask: nothing to update")
    values: dict[str, Any] = {}

    def need(name: str) -> Any:
        value = getattr(data, name)
        if isinstance(value, msgspec.UnsetType):
            raise InvalidArgument(f"{name}: named in updateMask but missing from the body")
        return value

    if "title" in paths:
        values["title"] = roster.valid_title(need("title"))
    if "description" in paths:
        values["description"] = roster.valid_description(need("description"))
    if "default_member_grants" in paths:
        values["default_member_grants"] = roster.valid_default_grants(need("default_member_grants"))
    changed = {k: v for k, v in values.items() if getattr(row, k) != v}
    if changed:
        changed["updated_ts"] = ctx.now
        await conn.execute(space.update().where(space.c.id == row.id).values(**changed))
        await _event(conn, ctx, row.id, "UPDATE", {"prior": {k: getattr(row, k) for k in values}})
    fresh = (await conn.execute(sa.select(space).where(space.c.id == row.id))).one()
    return await present_space(conn, fresh, seat.role, seat.state)


async def delete_space(conn: AsyncConnection, ctx: SpaceContext, uid: str) -> None:
    """Delete the space, its roster and every memo in it (comments included).

    Each deleted memo gets its DELETE history event, as a single delete would.
    """
    row, _ = await member_space(conn, ctx.caller, uid, admin=True, lock=True)
    doomed = (
        await conn.execute(
            sa.select(memo).where(
                sa.or_(
                    memo.c.space_id == row.id,
                    memo.c.parent_id.in_(sa.select(memo.c.id).where(memo.c.space_id == row.id)),
                )
            )
        )
    ).all()
    if doomed:
        await conn.execute(memo_event.insert(), [_delete_event(ctx, m) for m in doomed])
        await conn.execute(memo.delete().where(memo.c.id.in_([m.id for m in doomed])))
    await conn.execute(space.delete().where(space.c.id == row.id))
    await _event(
        conn, ctx, row.id, "DELETE", {"uid": row.uid, "title": row.title, "memos": len(doomed)}
    )


def _delete_event(ctx: SpaceContext, m: Any) -> dict[str, Any]:
    return {
        "memo_id": m.id,
        "kind": "DELETE",
        "actor_id": ctx.caller.user_id,
        "credential": ctx.caller.origin(),
        "prior_content": m.content,
        "prior": {k: getattr(m, k) for k in MEMO_TRACKED if k != "content"},
        "version": m.version + 1,
        "created_ts": ctx.now,
    }


# --- roster -------------------------------------------------------------------


def member_out(space_uid_: str, row: Any, names: dict[int, str]) -> schemas.Member:
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
    conn: AsyncConnection, space_uid_: str, rows: Sequence[Any]
) -> list[schemas.Member]:
    ids = {r.user_id for r in rows} | {r.invited_by for r in rows if r.invited_by is not None}
    names = await _usernames(conn, ids)
    return [member_out(space_uid_, r, names) for r in rows]


async def _user_by_name(conn: AsyncConnection, name: str, field: str) -> Any:
    username = resource_id(name, "users", field=field)
    row = (
        await conn.execute(sa.select(user_account).where(user_account.c.username == username))
    ).first()
    if row is None:
        raise NotFound(f"user {username!r} not found")
    return row


async def _seat_row(conn: AsyncConnection, space_id: int, user_id: int) -> Any:
    return (
        await conn.execute(
            sa.select(space_member).where(
                space_member.c.space_id == space_id, space_member.c.user_id == user_id
            )
        )
    ).first()


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
        after = decode_token(ctx.secret, query_id, page_token)
        if len(after) != 1 or type(after[0]) is not int:
            raise InvalidArgument("pageToken: invalid page token")
        conditions.append(space_member.c.user_id > after[0])
    rows = (
        await conn.execute(
            sa.select(space_member)
            .where(*conditions)
            .order_by(space_member.c.user_id)
            .limit(page_size + 1)
        )
    ).all()
    token = ""
    if len(rows) > page_size:
        rows = rows[:page_size]
        token = encode_token(ctx.secret, query_id, [rows[-1].user_id])
    return schemas.ListMembersResponse(
        members=await _present_members(conn, row.uid, rows), next_page_token=token
    )


async def invite(
    conn: AsyncConnection, ctx: SpaceContext, uid: str, data: schemas.InvitationIn
) -> schemas.Member:
    row, _ = await member_space(conn, ctx.caller, uid, admin=True, lock=True)
    role = roster.valid_role(data.role)
    invitee = await _user_by_name(conn, data.invitee, "invitee")
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
    await _event(conn, ctx, row.id, "INVITE", {"user_id": invitee.id, "role": role})
    seat = await _seat_row(conn, row.id, invitee.id)
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
    await _event(
        conn,
        ctx,
        row.id,
        "ACCEPT",
        {"role": seat.role, "defaultMemberGrants": row.default_member_grants},
    )
    fresh = await _seat_row(conn, row.id, ctx.caller.user_id)
    return (await _present_members(conn, row.uid, [fresh]))[0]


async def decline(conn: AsyncConnection, ctx: SpaceContext, uid: str, username: str) -> None:
    row, _ = await _own_invitation(conn, ctx, uid, username)
    await conn.execute(
        space_member.delete().where(
            space_member.c.space_id == row.id, space_member.c.user_id == ctx.caller.user_id
        )
    )
    await _event(conn, ctx, row.id, "DECLINE", {"user_id": ctx.caller.user_id})


async def revoke(conn: AsyncConnection, ctx: SpaceContext, uid: str, username: str) -> None:
    row, _ = await member_space(conn, ctx.caller, uid, admin=True, lock=True)
    target = await _user_by_name(conn, username, "username")
    seat = await _seat_row(conn, row.id, target.id)
    if seat is None or seat.state != "INVITED":
        raise NotFound(f"invitation of {target.username!r} not found")
    await conn.execute(
        space_member.delete().where(
            space_member.c.space_id == row.id, space_member.c.user_id == target.id
        )
    )
    await _event(conn, ctx, row.id, "REVOKE", {"user_id": target.id})


async def _target_seat(conn: AsyncConnection, space_row: Any, username: str) -> tuple[Any, Any]:
    target = await _user_by_name(conn, username, "username")
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
        await _event(
            conn, ctx, row.id, "ROLE", {"user_id": target.id, "from": seat.role, "to": role}
        )
    fresh = await _seat_row(conn, row.id, target.id)
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
    await _event(conn, ctx, row.id, "LEAVE" if leaving else "REMOVE", {"user_id": target.id})


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
