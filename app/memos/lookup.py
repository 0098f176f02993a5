"""Resolving a ``memos/{uid}`` path segment to a row the caller may read or write.

Shared by the endpoints nested under a memo (comments, relations, reactions,
attachments, shares), so each of them starts from the same point read
(:func:`app.memos.service.load_for_read`) and the same write rule.
"""

from __future__ import annotations

from typing import Annotated, Any

from litestar.params import Parameter
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.audience import AccessMode
from app.access.caller import Caller
from app.access.writes import can_write_memo, key_may_write
from app.api.structs import resource_id, valid_uid
from app.errors import PermissionDenied
from app.memos.service import load_for_read

MemoName = Annotated[str, Parameter(description="memo id or name (memos/{id})", max_length=64)]


def memo_uid(name: str, field: str = "memo") -> str:
    """``memos/abc`` or ``abc`` → ``abc``; a 400 naming ``field`` otherwise."""
    return valid_uid(resource_id(name, "memos", field=field), field=field)


async def readable_memo(
    conn: AsyncConnection, name: str, caller: Caller | None, mode: AccessMode
) -> Any:
    """The memo row, or 404 (401 for an anonymous caller a user could be)."""
    return await load_for_read(conn, memo_uid(name), caller, mode)


def require_writer(caller: Caller, row: Any, action: str) -> None:
    """403 unless the caller may change the memo (its creator, with a writing key)."""
    if not key_may_write(caller):
        raise PermissionDenied("this access token is read-only")
    if not can_write_memo(caller, row.creator_id, row.visibility):
        raise PermissionDenied(f"memo {row.uid!r}: only a writer of the memo can {action}")


__all__ = ["MemoName", "memo_uid", "readable_memo", "require_writer"]
