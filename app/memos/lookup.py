"""Resolving a ``memos/{uid}`` path segment to a row the caller may read or write.

Shared by the endpoints nested under a memo (comments, relations, reactions,
attachments, shares), so each of them starts from the same point read
(:func:`app.memos.service.load_for_read`) and the same write rule.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
import sqlalchemy as sa
from litestar.params import Parameter
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.audience import AccessMode
from app.access.caller import Caller
from app.access.paths import parse_tree_path
from app.access.scope import EMPTY_SCOPE, load_scope
from app.access.writes import can_comment, memo_spot, write_denial
from app.api.structs import resource_id, valid_uid
from app.db.schema import memo, space
from app.errors import InvalidArgument, PermissionDenied
from app.memos.rows import MemoRow, ReadMemoRow
from app.memos.schemas import MemoIn
from app.memos.service import load_for_read

MemoName = Annotated[str, Parameter(description="memo id or name (memos/{id})", max_length=64)]


def memo_uid(name: str, field: str = "memo") -> str:
    """``memos/abc`` or ``abc`` → ``abc``; a 400 naming ``field`` otherwise."""
    return valid_uid(resource_id(name, "memos", field=field), field=field)


async def written_memo(conn: AsyncConnection, memo_id: int) -> MemoRow:
    """The memo's row as this request's own write left it, to answer with.

    Only after the write admitted the caller to the memo (so no audience
    predicate again), and in the write's transaction.
    """
    return (await conn.execute(sa.select(memo).where(memo.c.id == memo_id))).one()


async def readable_memo(
    conn: AsyncConnection, name: str, caller: Caller | None, mode: AccessMode
) -> ReadMemoRow:
    """The memo row, or 404 (401 for an anonymous caller a user could be)."""
    return await load_for_read(conn, memo_uid(name), caller, mode)


async def require_writer(conn: AsyncConnection, caller: Caller, row: MemoRow, action: str) -> None:
    """403 unless the caller may change the memo (the write rule, with its live scope).

    Read-only keys are refused earlier, by the route's ``writable_key`` guard.
    """
    scope = EMPTY_SCOPE if row.space_id is None else await load_scope(conn, caller, row.space_id)
    if write_denial(caller, row.creator_id, memo_spot(row), None, scope) is not None:
        raise PermissionDenied(f"memo {row.uid!r}: only a writer of the memo can {action}")


async def comment_placement(
    conn: AsyncConnection, caller: Caller, parent: Any, data: MemoIn
) -> MemoIn:
    """The comment's body, placed where the rule puts it; 403 when it may not be written.

    A comment on a SPACE memo takes the parent's space and path (a client
    may repeat them, never change them) and needs WRITE there. A read-only
    key is refused by the route's ``writable_key`` guard, and by the write
    rule when the comment is created.
    """
    if parent.visibility != "SPACE":
        return data
    uid = (
        await conn.execute(sa.select(space.c.uid).where(space.c.id == parent.space_id))
    ).scalar_one()
    name = f"spaces/{uid}"
    if isinstance(data.visibility, str) and data.visibility != "SPACE":
        raise InvalidArgument("visibility: a comment on a SPACE memo is SPACE")
    if isinstance(data.space, str) and data.space not in (name, uid):
        raise InvalidArgument("space: a comment takes its parent's space")
    if isinstance(data.tree, str) and parse_tree_path(data.tree, caller.user_id) != parent.tree:
        raise InvalidArgument("tree: a comment takes its parent's path")
    scope = await load_scope(conn, caller, parent.space_id)
    if not can_comment(caller, parent.visibility, parent.space_id, parent.tree, scope):
        raise PermissionDenied(f"tree: no write access at the path of memo {parent.uid!r}")
    return msgspec.structs.replace(data, visibility="SPACE", space=name, tree=parent.tree)


__all__ = ["MemoName", "comment_placement", "memo_uid", "readable_memo", "require_writer"]
