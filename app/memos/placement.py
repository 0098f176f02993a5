"""Where a memo lives: its visibility, space and tree path, on create and on move.

Placement and visibility are independent (``docs/decisions/0030``): a memo
is placed (a space and a tree path) or unplaced, and has any visibility,
except that SPACE needs a placement. Placement governs who may write the
memo, visibility who may read it (``app.access.audience``). A placed memo's
path is always named explicitly by the client (no silent default,
``access.md`` section 4). Naming a space implies SPACE when the visibility
is left out on create; on a move the visibility changes only when it is
named, so moving a PUBLIC memo into a space keeps its audience. The space is
resolved through the caller's own scope, so a space it is not an ACTIVE
member of is "not found", like everything else in a space.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.caller import Caller
from app.access.paths import parse_tree_path
from app.access.scope import SpaceScope
from app.access.writes import READ_ONLY, Spot, memo_spot, write_denial
from app.api.structs import resource_id, valid_uid
from app.db.schema import memo_share, space
from app.errors import Conflict, InvalidArgument, NotFound, PermissionDenied
from app.memos.rows import MemoRow
from app.memos.schemas import MemoIn

PERSONAL = ("PRIVATE", "PROTECTED", "PUBLIC")


@dataclass(frozen=True, slots=True)
class Placement:
    visibility: str
    space_id: int | None = None
    tree: str | None = None


def _given(value: Any) -> bool:
    return not isinstance(value, msgspec.UnsetType)


async def _space_id(conn: AsyncConnection, name: str, scope: SpaceScope) -> int:
    uid = valid_uid(resource_id(name, "spaces", field="space"), field="space")
    space_id = (await conn.execute(sa.select(space.c.id).where(space.c.uid == uid))).scalar()
    if space_id is None or int(space_id) not in scope.space_ids():
        raise NotFound(f"space {uid!r} not found")
    return int(space_id)


def _check_personal(visibility: str, tree: Any) -> None:
    if visibility == "SPACE":
        raise InvalidArgument(
            "visibility: a SPACE memo needs a space (spaces/{id}) and a tree path"
        )
    if isinstance(tree, str) and tree != "":
        raise InvalidArgument(f"tree: only SPACE memos have a tree path, not {visibility} ones")


def require_write(
    caller: Caller,
    creator_id: int,
    before: Spot | None,
    after: Spot | None,
    scope: SpaceScope,
    uid: str | None = None,
) -> None:
    """403 with the write rule's reason (:func:`app.access.writes.write_denial`)."""
    reason = write_denial(caller, creator_id, before, after, scope)
    if reason is None:
        return
    if reason == READ_ONLY or reason.startswith(("tree:", "visibility:")) or uid is None:
        raise PermissionDenied(reason)
    raise PermissionDenied(f"memo {uid!r}: {reason}")


async def place_new(
    conn: AsyncConnection, caller: Caller, data: MemoIn, scope: SpaceScope
) -> Placement:
    visibility = data.visibility if isinstance(data.visibility, str) else None
    if not isinstance(data.space, str) or data.space == "":
        visibility = visibility or "PRIVATE"
        _check_personal(visibility, data.tree)
        personal = Placement(visibility)
        require_write(caller, caller.user_id, None, memo_spot(personal), scope)
        return personal
    if not isinstance(data.tree, str):
        raise InvalidArgument(
            "tree: required for a memo in a space; name the path explicitly (e.g. 'share' or '~')"
        )
    space_id = await _space_id(conn, data.space, scope)
    tree = parse_tree_path(data.tree, caller.user_id)
    placed = Placement(visibility or "SPACE", space_id, tree)
    require_write(caller, caller.user_id, None, memo_spot(placed), scope)
    return placed


async def place_moved(
    conn: AsyncConnection,
    caller: Caller,
    row: MemoRow,
    data: MemoIn,
    paths: set[str],
    scope: SpaceScope,
) -> Placement | None:
    """The memo's new placement, or None when the update does not touch it.

    The whole move goes through the write rule here (source, destination,
    widening, personal destinations); the caller of this function has
    already checked the source side alone, before reading the body.
    """
    if not paths & {"visibility", "space", "tree"}:
        return None

    def need(name: str) -> Any:
        value = getattr(data, name)
        if not _given(value):
            raise InvalidArgument(f"{name}: named in updateMask but missing from the body")
        return value

    space_id = row.space_id
    if "space" in paths:
        name = need("space")
        space_id = None if name == "" else await _space_id(conn, name, scope)
    if "visibility" in paths:
        visibility = need("visibility")
    elif space_id is None and row.visibility == "SPACE":
        raise InvalidArgument(
            "visibility: say which visibility the memo takes when it leaves its space"
        )
    else:
        visibility = row.visibility  # placement never changes who reads (0030)
    tree = need("tree") if "tree" in paths else None
    if space_id is None:
        _check_personal(visibility, tree)
        personal = Placement(visibility)
        require_write(caller, row.creator_id, memo_spot(row), memo_spot(personal), scope, row.uid)
        return personal
    if tree is not None:
        if not isinstance(tree, str):
            raise InvalidArgument("tree: must be a path string")
        new_tree = parse_tree_path(tree, caller.user_id)
    elif row.space_id == space_id and row.tree is not None:
        new_tree = row.tree
    else:
        raise InvalidArgument(
            "tree: required when moving a memo into a space; name the path explicitly"
        )
    placed = Placement(visibility, space_id, new_tree)
    require_write(caller, row.creator_id, memo_spot(row), memo_spot(placed), scope, row.uid)
    return placed


async def refuse_if_shared(conn: AsyncConnection, memo_id: int, now: int) -> None:
    """A memo with a live share link cannot be placed in a space (decision 0030).

    Share links admit only unplaced memos: a placed memo is written by the
    owners of its path too, and a link must not publish their edits.
    """
    live = (
        await conn.execute(
            sa.select(memo_share.c.id)
            .where(
                memo_share.c.memo_id == memo_id,
                sa.or_(memo_share.c.expires_ts.is_(None), memo_share.c.expires_ts > now),
            )
            .limit(1)
        )
    ).first()
    if live is not None:
        raise Conflict(
            "space: this memo has live share links; revoke them before moving it into a space"
        )
