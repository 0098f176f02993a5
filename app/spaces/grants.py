"""Tree grants of a space, and the caller's effective access (``access.md`` sections 4-5).

Managing a grant at a path needs OWNER at that path or an ancestor (from the
caller's own member grants), or space ADMIN. A space ADMIN may grant itself
OWNER at the root: an explicit action, recorded as ``GRANT_SELF_ROOT`` in the
space's event log and logged. Restricted keys never reach these mutations
(the routes' management-plane guard), but may ask for their own access:
the member grants clamped by the key's ceiling, normalised
(:func:`app.access.scope.effective_grants`, the pure twin of the SQL
resolver).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
import structlog
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.clamp import LEVEL_NAMES, Grant, level_at
from app.access.paths import parse_tree_path
from app.access.scope import (
    LEVELS,
    OWNER,
    effective_grants,
    load_member_grants,
    space_ceiling,
)
from app.api.structs import rfc3339
from app.db.schema import space_grant, space_group_member, space_member, user_account
from app.errors import FailedPrecondition, InvalidArgument, NotFound, PermissionDenied
from app.spaces import schemas
from app.spaces.groups import group_id, group_in_space
from app.spaces.rows import GrantRow, SpaceRow
from app.spaces.service import SpaceContext, member_space, record_event, user_by_name

log = structlog.get_logger("daybook.spaces")

__all__ = ["create_grant", "delete_grant", "get_access", "list_grants"]


def _level(raw: str) -> int:
    level = LEVELS.get(raw)
    if level is None:
        raise InvalidArgument(f"level: {raw!r} is not one of READ, WRITE, OWNER")
    return level


async def _own_grants(conn: AsyncConnection, user_id: int, space_id: int) -> list[Grant]:
    return (await load_member_grants(conn, user_id, space_id)).get(space_id, [])


def _may_manage(role: str, own: list[Grant], path: str) -> bool:
    return role == "ADMIN" or level_at(own, path) >= OWNER


async def _present(
    conn: AsyncConnection, space_uid: str, rows: Sequence[GrantRow]
) -> list[schemas.Grant]:
    ids = {r.user_id for r in rows if r.user_id is not None}
    names: dict[int, str] = {}
    if ids:
        found = await conn.execute(
            sa.select(user_account.c.id, user_account.c.username).where(user_account.c.id.in_(ids))
        )
        names = {int(i): str(u) for i, u in found.all()}
    return [
        schemas.Grant(
            name=f"spaces/{space_uid}/grants/{r.id}",
            principal=(
                f"users/{names.get(r.user_id, '')}"
                if r.user_id is not None
                else f"spaces/{space_uid}/groups/{r.group_id}"
            ),
            path=r.path,
            level=LEVEL_NAMES.get(r.level, "NONE"),
            create_time=rfc3339(r.created_ts),
        )
        for r in rows
    ]


async def list_grants(
    conn: AsyncConnection, ctx: SpaceContext, uid: str
) -> schemas.ListGrantsResponse:
    """Every grant for a space ADMIN; else the caller's, its groups', and those it manages."""
    row, seat = await member_space(conn, ctx.caller, uid)
    rows = (
        await conn.execute(
            sa.select(space_grant)
            .where(space_grant.c.space_id == row.id)
            .order_by(space_grant.c.id)
        )
    ).all()
    if seat.role != "ADMIN":
        # "Those it manages" through this credential: a key's own grants are clamped.
        member = await _own_grants(conn, ctx.caller.user_id, row.id)
        own = effective_grants(member, space_ceiling(ctx.caller, row.uid))
        groups = set(
            (
                await conn.execute(
                    sa.select(space_group_member.c.group_id).where(
                        space_group_member.c.user_id == ctx.caller.user_id
                    )
                )
            ).scalars()
        )
        rows = [
            r
            for r in rows
            if r.user_id == ctx.caller.user_id
            or r.group_id in groups
            or level_at(own, r.path) >= OWNER
        ]
    return schemas.ListGrantsResponse(grants=await _present(conn, row.uid, list(rows)))


async def _principal(
    conn: AsyncConnection, space_row: SpaceRow, raw: str
) -> tuple[int | None, int | None]:
    if raw.startswith("users/"):
        user = await user_by_name(conn, raw, "principal")
        active = (
            await conn.execute(
                sa.select(space_member.c.user_id).where(
                    space_member.c.space_id == space_row.id,
                    space_member.c.user_id == user.id,
                    space_member.c.state == "ACTIVE",
                )
            )
        ).first()
        if active is None:
            raise FailedPrecondition(
                f"principal: user {user.username!r} is not an active member of this space"
            )
        return int(user.id), None
    prefix = f"spaces/{space_row.uid}/groups/"
    if raw.startswith(prefix):
        group = await group_in_space(conn, space_row.id, group_id(raw))
        return None, int(group.id)
    raise InvalidArgument(
        f"principal: {raw!r} is neither users/{{username}} nor {prefix}{{id}} of this space"
    )


async def create_grant(
    conn: AsyncConnection, ctx: SpaceContext, uid: str, data: schemas.GrantIn
) -> schemas.Grant:
    row, seat = await member_space(conn, ctx.caller, uid, lock=True)
    path = parse_tree_path(data.path, ctx.caller.user_id, field="path")
    level = _level(data.level)
    own = await _own_grants(conn, ctx.caller.user_id, row.id)
    if not _may_manage(seat.role, own, path):
        raise PermissionDenied(
            f"path: managing grants at {path!r} needs OWNER there or space ADMIN"
        )
    user_id, gid = await _principal(conn, row, data.principal)
    new_id = (
        await conn.execute(
            space_grant.insert()
            .values(
                space_id=row.id,
                user_id=user_id,
                group_id=gid,
                path=path,
                level=level,
                created_by=ctx.caller.user_id,
                created_ts=ctx.now,
            )
            .returning(space_grant.c.id)
        )
    ).scalar_one()
    detail = {"grant_id": new_id, "user_id": user_id, "group_id": gid, "path": path, "level": level}
    self_root = user_id == ctx.caller.user_id and path == "" and level == OWNER
    if self_root:
        log.warning("grant_self_root", space=row.uid, user=ctx.caller.username)
    await record_event(conn, ctx, row.id, "GRANT_SELF_ROOT" if self_root else "GRANT", detail)
    fresh = (await conn.execute(sa.select(space_grant).where(space_grant.c.id == new_id))).one()
    return (await _present(conn, row.uid, [fresh]))[0]


async def delete_grant(conn: AsyncConnection, ctx: SpaceContext, uid: str, raw_id: str) -> None:
    row, seat = await member_space(conn, ctx.caller, uid, lock=True)
    text = raw_id.rsplit("/", 1)[-1]
    if not (text.isascii() and text.isdigit()) or len(text) > 9:
        raise InvalidArgument(f"grant: {raw_id!r} is not a grant id")
    grant = (
        await conn.execute(
            sa.select(space_grant).where(
                space_grant.c.id == int(text), space_grant.c.space_id == row.id
            )
        )
    ).first()
    if grant is None:
        raise NotFound(f"grant {text} not found")
    own = await _own_grants(conn, ctx.caller.user_id, row.id)
    if not _may_manage(seat.role, own, grant.path):
        raise PermissionDenied(
            f"path: managing grants at {grant.path!r} needs OWNER there or space ADMIN"
        )
    await conn.execute(space_grant.delete().where(space_grant.c.id == grant.id))
    await record_event(
        conn,
        ctx,
        row.id,
        "REVOKE_GRANT",
        {
            "grant_id": grant.id,
            "user_id": grant.user_id,
            "group_id": grant.group_id,
            "path": grant.path,
            "level": grant.level,
        },
    )


async def get_access(conn: AsyncConnection, ctx: SpaceContext, uid: str) -> schemas.Access:
    """The caller's effective grants here: member grants, clamped by its key, normalised."""
    row, _ = await member_space(conn, ctx.caller, uid)
    member = await _own_grants(conn, ctx.caller.user_id, row.id)
    grants = effective_grants(member, space_ceiling(ctx.caller, row.uid))
    return schemas.Access(
        space=f"spaces/{row.uid}",
        grants=[schemas.EffectiveGrant(path=g.path, level=LEVEL_NAMES[g.level]) for g in grants],
        restricted=ctx.caller.restriction is not None,
    )
