"""Diff between two versions of a memo, and revert to one of them.

Both start from the history listing (:func:`app.memos.history.list_history`),
the one place that decides which versions a caller may see and what of them
(the memo's current audience, the location shown only where readable now,
and whatever history-visibility rule that module applies). A version the
listing does not give the caller does not exist for diff or revert.

Revert is an ordinary update through :func:`app.memos.service.update_memo`
(the write rule, placement, ``disallowPublicVisibility``, ``If-Match``), so
it cannot do anything a PATCH could not; its history event is marked
``REVERT``. What a revert restores: the content, the visibility, the
placement (space and path) and ``pinned``. Not the state (archive and trash
have their own operations) and not the timestamps (a revert is a new write).
"""

from __future__ import annotations

import difflib
from typing import Any

import msgspec
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.audience import AccessMode
from app.access.caller import Caller
from app.api.structs import Out
from app.db.schema import memo_event
from app.errors import FailedPrecondition, InvalidArgument, NotFound
from app.memos.history import HistoryQuery, MemoVersion, list_history
from app.memos.rows import MemoRow
from app.memos.schemas import MemoIn
from app.memos.service import WriteContext, update_memo

__all__ = ["FieldChange", "MemoDiff", "diff_versions", "find_versions", "revert_memo"]

# Version fields compared by a diff, as the history shows them (camelCase).
_COMPARED = (
    ("visibility", "visibility"),
    ("state", "state"),
    ("pinned", "pinned"),
    ("display_time", "displayTime"),
    ("update_time", "updateTime"),
    ("space", "space"),
    ("tree", "tree"),
)
_PAGE = 1000


class FieldChange(Out):
    field: str
    from_value: str = msgspec.field(name="from")
    to_value: str = msgspec.field(name="to")


class MemoDiff(Out):
    """``GET /api/v1/memos/{memo}/history:diff?from=V&to=W``."""

    name: str  # memos/{uid}
    from_version: int
    to_version: int
    content_diff: str  # unified diff of the content, "" when equal
    changed_fields: list[FieldChange]


async def find_versions(
    conn: AsyncConnection,
    uid: str,
    caller: Caller | None,
    mode: AccessMode,
    secret: str,
    wanted: set[int | None],
) -> dict[int | None, MemoVersion]:
    """The caller's view of versions ``wanted`` (None: the newest); 404 for a missing one."""
    found: dict[int | None, MemoVersion] = {}
    token: str | None = None
    while True:
        page = await list_history(conn, HistoryQuery(uid, caller, mode, _PAGE, token), secret)
        for v in page.versions:
            if None in wanted and None not in found:
                found[None] = v
            if v.version in wanted:
                found[v.version] = v
        token = page.next_page_token or None
        if token is None or set(found) >= wanted:
            break
    for w in wanted:
        if w not in found:
            raise NotFound(f"memo {uid!r} has no version {w} that you can read")
    return found


def _value(v: MemoVersion, attr: str) -> str:
    value = getattr(v, attr)
    if isinstance(value, msgspec.UnsetType):
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def diff_versions(uid: str, old: MemoVersion, new: MemoVersion) -> MemoDiff:
    """A pure comparison of two versions as the caller sees them."""
    lines = difflib.unified_diff(
        old.content.splitlines(keepends=True),
        new.content.splitlines(keepends=True),
        fromfile=f"memos/{uid}@{old.version}",
        tofile=f"memos/{uid}@{new.version}",
    )
    text = "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )
    changes = [
        FieldChange(field=name, from_value=_value(old, attr), to_value=_value(new, attr))
        for attr, name in _COMPARED
        if _value(old, attr) != _value(new, attr)
    ]
    return MemoDiff(
        name=f"memos/{uid}",
        from_version=old.version,
        to_version=new.version,
        content_diff=text,
        changed_fields=changes,
    )


def parse_version(raw: Any, field: str) -> int:
    if type(raw) is not int or raw < 1:
        raise InvalidArgument(f"{field}: a version number (1 or more) is required")
    return int(raw)


async def revert_memo(
    conn: AsyncConnection,
    ctx: WriteContext,
    row: MemoRow,
    version: int,
    if_match: str | None,
    secret: str,
) -> bool:
    """Write version ``version``'s content and placement as a new version; False if unchanged."""
    target = (
        await find_versions(conn, row.uid, ctx.caller, ctx.access.access_mode, secret, {version})
    )[version]
    paths = {"content", "visibility", "pinned"}
    data = MemoIn(content=target.content, visibility=target.visibility, pinned=target.pinned)
    # A placed version goes back to its place; a version that shows no place
    # (unplaced, or placed where the caller cannot see, decision 0030) leaves
    # the memo where it is now. A SPACE version must show its place.
    if target.visibility == "SPACE" or not isinstance(target.space, msgspec.UnsetType):
        if isinstance(target.space, msgspec.UnsetType) or isinstance(
            target.tree, msgspec.UnsetType
        ):
            raise FailedPrecondition(
                f"version {version} of memo {row.uid!r} is in a place you cannot read now"
            )
        data = MemoIn(
            content=target.content,
            visibility=target.visibility,
            pinned=target.pinned,
            space=target.space,
            tree=target.tree,
        )
        paths |= {"space", "tree"}
    newest = sa.select(sa.func.max(memo_event.c.id)).where(memo_event.c.memo_id == row.id)
    before = (await conn.execute(newest)).scalar_one_or_none()
    await update_memo(conn, ctx, row, data, paths, if_match)
    after = (await conn.execute(newest)).scalar_one_or_none()
    if after == before:
        return False
    await conn.execute(
        memo_event.update()
        .where(memo_event.c.id == after, memo_event.c.kind == "UPDATE")
        .values(kind="REVERT")
    )
    return True
