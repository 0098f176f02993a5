"""A space's lifecycle (create, list, read, update, delete), in the caller's transaction.

Every lookup inside a space goes through :func:`member_space`, which answers
"not found" unless the caller is an ACTIVE member (and, for a restricted key,
the space is declared): invitees and strangers learn nothing, not even that
the space exists. The only exception is the invitee's own accept/decline.
Each structural change appends a ``space_event`` row in the same
transaction (:func:`record_event`). The roster (members, invitations,
roles) is ``app.spaces.members``.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

import msgspec
import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.caller import Caller
from app.access.scope import keeps_admin
from app.api.paging import decode_int_key, fingerprint, trim_page
from app.api.structs import resource_id, rfc3339, valid_uid
from app.db.schema import memo, memo_event, space, space_event, space_member, user_account
from app.errors import (
    AlreadyExists,
    InvalidArgument,
    NotFound,
    PermissionDenied,
)
from app.memos.rows import MemoRow
from app.spaces import provisioning, roster, schemas
from app.spaces.rows import MemberSpaceRow, SpaceRow
from app.users.rows import UserRow

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


def _role_through(caller: Caller, row: MemberSpaceRow) -> str:
    """The roster role as this credential may act on it (see :func:`member_space`)."""
    role = str(row.my_role)
    if role == "ADMIN" and not keeps_admin(caller.restriction, str(row.uid)):
        return "USER"
    return role


def space_uid(value: str) -> str:
    return valid_uid(resource_id(value, "spaces", field="space"), field="space")


def not_found(uid: str) -> NotFound:
    return NotFound(f"space {uid!r} not found")


async def member_space(
    conn: AsyncConnection, caller: Caller, uid: str, *, admin: bool = False, lock: bool = False
) -> tuple[MemberSpaceRow, roster.Seat]:
    """The space and the caller's ACTIVE seat in it, or 404; 403 when ``admin`` is needed.

    The seat's role is what the credential may act as: a space ADMIN
    presenting a restricted key whose declaration lacks ``admin: true`` is a
    plain USER here (``access.md`` section 5), so every ADMIN check that reads
    the seat (grant listing, roster, settings) honours the declaration.
    """
    declared = declared_uids(caller)
    if declared is not None and uid not in declared:
        raise not_found(uid)
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
        raise not_found(uid)
    role = _role_through(caller, row)  # a key without ``admin: true`` acts as a plain member
    if admin and role != "ADMIN":
        raise PermissionDenied(f"space {uid!r}: only a space ADMIN can do this")
    return row, roster.Seat(caller.user_id, role, row.my_state)


async def record_event(
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


def space_out(row: SpaceRow, creator: str, role: str, state: str) -> schemas.Space:
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


async def usernames(conn: AsyncConnection, ids: set[int]) -> dict[int, str]:
    if not ids:
        return {}
    rows = await conn.execute(
        sa.select(user_account.c.id, user_account.c.username).where(user_account.c.id.in_(ids))
    )
    return {int(i): str(u) for i, u in rows.all()}


async def present_space(
    conn: AsyncConnection, row: SpaceRow, role: str, state: str
) -> schemas.Space:
    names = await usernames(conn, {row.creator_id})
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
    await record_event(conn, ctx, space_id, "CREATE", {"title": values["title"]})
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
        (after,) = decode_int_key(ctx.secret, query_id, page_token, 1)
        conditions.append(space.c.id > after)
    rows = (
        await conn.execute(
            sa.select(space, space_member.c.role.label("my_role"))
            .join(space_member, space_member.c.space_id == space.c.id)
            .where(*conditions)
            .order_by(space.c.id)
            .limit(page_size + 1)
        )
    ).all()
    page = trim_page(rows, page_size, lambda r: [r.id], secret=ctx.secret, query=query_id)
    names = await usernames(conn, {r.creator_id for r in page.rows})
    return schemas.ListSpacesResponse(
        spaces=[
            space_out(r, names.get(r.creator_id, ""), _role_through(ctx.caller, r), state)
            for r in page.rows
        ],
        next_page_token=page.next_token,
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
        await record_event(
            conn, ctx, row.id, "UPDATE", {"prior": {k: getattr(row, k) for k in values}}
        )
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
    await record_event(
        conn, ctx, row.id, "DELETE", {"uid": row.uid, "title": row.title, "memos": len(doomed)}
    )


def _delete_event(ctx: SpaceContext, m: MemoRow) -> dict[str, Any]:
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


async def user_by_name(conn: AsyncConnection, name: str, field: str) -> UserRow:
    username = resource_id(name, "users", field=field)
    row = (
        await conn.execute(sa.select(user_account).where(user_account.c.username == username))
    ).first()
    if row is None:
        raise NotFound(f"user {username!r} not found")
    return row
