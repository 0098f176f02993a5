"""A memo's past versions, rebuilt from its ``memo_event`` rows (``MemoService_ListMemoHistory``).

Every write records one event in the write's own transaction: the version it
produced, who wrote it with which credential, and the *prior* content and
changed fields. So the memo as it stood at version ``v`` is the current row
with the priors of every later event applied, newest first: content from the
``prior_content`` of the event just after ``v`` (every non-CREATE event
carries it), each other field from the nearest later event that changed it.

Who may read the history: only whoever may read the memo now
(``load_for_read``), and each version is its own decision
(:func:`app.access.history.version_readable`, decision 0021): a version
written while the memo was less visible than it is now (PRIVATE before
PROTECTED, a home path before ``share``, an archived stretch) is its
author's only, so widening a memo never publishes its drafts. A former
space member loses the history with the memo. A deleted memo has no history
(404). A version's ``space`` and ``tree`` are shown only where the caller
can read that location now, so an old path in a space or subtree it cannot
see is never named. Pages skip versions the caller may not read and stay
full; the page token is the last shown version's event.

Ids of deleted memos may be reused by the database (SQLite reuses the top
rowid), and events outlive their memo. Only events from the memo's latest
CREATE (or after its latest DELETE) onward belong to it, so a new memo never
inherits an older one's history.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.audience import AccessMode, MemoFacts
from app.access.caller import Caller
from app.access.history import version_readable
from app.access.paths import render_tree_path
from app.access.scope import EMPTY_SCOPE, READ, SpaceScope, load_scope
from app.api.paging import decode_token, encode_token, fingerprint
from app.api.structs import Out, rfc3339
from app.db.schema import memo_event, space, user_account
from app.errors import InvalidArgument
from app.memos.present import _origin
from app.memos.rows import ReadMemoRow
from app.memos.schemas import Origin
from app.memos.service import load_for_read, may_write

__all__ = ["HistoryQuery", "ListMemoHistoryResponse", "MemoVersion", "list_history"]

# The snapshot fields of a version, as memo columns (``prior`` uses the same keys).
_FIELDS = ("visibility", "space_id", "tree", "state", "pinned", "created_ts", "updated_ts")


class MemoVersion(Out):
    """The memo as it stood right after one write."""

    name: str  # memos/{uid}/history/{version}
    version: int
    kind: str  # the write that produced it: CREATE | UPDATE | ARCHIVE | RESTORE
    create_time: str  # when that write happened
    actor: str  # users/{username}
    origin: Origin  # the credential the actor wrote with
    content: str
    visibility: str
    state: str
    pinned: bool
    display_time: str  # the memo's own create (display) time at this version
    update_time: str
    space: str | msgspec.UnsetType = msgspec.UNSET
    tree: str | msgspec.UnsetType = msgspec.UNSET


class ListMemoHistoryResponse(Out):
    versions: list[MemoVersion]
    next_page_token: str = ""
    # Whether the caller may write the memo now (the write rule, app.access.writes),
    # so may revert it to one of these versions: a client offers revert from this
    # answer instead of re-deriving the rule (decision 0040).
    can_edit: bool = False


@dataclass(frozen=True, slots=True)
class HistoryQuery:
    uid: str
    caller: Caller | None
    mode: AccessMode
    page_size: int
    page_token: str | None


def _lineage(memo_id: int) -> sa.ColumnElement[bool]:
    """This memo's own events: from its latest CREATE (or past its latest DELETE) onward."""
    start = (
        sa.select(sa.func.max(memo_event.c.id))
        .where(memo_event.c.memo_id == memo_id, memo_event.c.kind.in_(("CREATE", "DELETE")))
        .scalar_subquery()
    )
    return sa.and_(
        memo_event.c.memo_id == memo_id,
        memo_event.c.id >= sa.func.coalesce(start, 0),
        memo_event.c.kind != "DELETE",
    )


# Events read per statement while filling a page past versions the caller may not read.
_CHUNK = 200


def _facts(row: ReadMemoRow, fields: dict[str, Any]) -> MemoFacts:
    """The read rule's facts of the memo as it stood with these version ``fields``."""
    return MemoFacts(
        creator_id=row.creator_id,
        creator_state=row.creator_state,
        visibility=str(fields["visibility"]),
        state=str(fields["state"]),
        space_id=fields["space_id"],
        tree=fields["tree"],
    )


async def list_history(
    conn: AsyncConnection, query: HistoryQuery, secret: str
) -> ListMemoHistoryResponse:
    row = await load_for_read(conn, query.uid, query.caller, query.mode)
    viewer = query.caller.user_id if query.caller else None
    can_edit = query.caller is not None and await may_write(conn, query.caller, row)
    key = fingerprint("history", row.id, viewer)
    before: int | None = None
    if query.page_token:
        position = decode_token(secret, key, query.page_token)
        if len(position) != 1 or not isinstance(position[0], int):
            raise InvalidArgument("pageToken: invalid page token")
        before = position[0]

    # The memo as it stood at the top of this page: fold the priors of every later event.
    fields: dict[str, Any] = {f: getattr(row, f) for f in _FIELDS}
    now = _facts(row, fields)
    content: str = row.content
    if before is not None:
        later = (
            await conn.execute(
                sa.select(memo_event.c.prior, memo_event.c.prior_content)
                .where(_lineage(row.id), memo_event.c.id >= before)
                .order_by(memo_event.c.id.desc())
            )
        ).all()
        for prior, prior_content in later:
            _apply(fields, prior)
            content = prior_content if prior_content is not None else content

    places = await _places(conn, query.caller)
    shown: list[tuple[Any, str, dict[str, Any]]] = []
    more = False
    cursor = before
    while not more:
        stmt = sa.select(memo_event).where(_lineage(row.id)).order_by(memo_event.c.id.desc())
        if cursor is not None:
            stmt = stmt.where(memo_event.c.id < cursor)
        chunk = (await conn.execute(stmt.limit(_CHUNK))).all()
        for e in chunk:
            # Each version is its own read decision (app.access.history).
            if version_readable(now, _facts(row, fields), query.caller, query.mode, places.scope):
                if len(shown) == query.page_size:
                    more = True
                    break
                shown.append((e, content, dict(fields)))
            _apply(fields, e.prior)
            content = e.prior_content if e.prior_content is not None else content
        if len(chunk) < _CHUNK:
            break
        cursor = chunk[-1].id
    if not shown:
        return ListMemoHistoryResponse(versions=[], can_edit=can_edit)
    actors = await _usernames(conn, {e.actor_id for e, _, _ in shown})
    versions = [
        _version(row.uid, e, text, snapshot, actors, places, viewer) for e, text, snapshot in shown
    ]
    token = encode_token(secret, key, [shown[-1][0].id]) if more else ""
    return ListMemoHistoryResponse(versions=versions, next_page_token=token, can_edit=can_edit)


def _apply(fields: dict[str, Any], prior: Any) -> None:
    if isinstance(prior, dict):
        fields.update({k: v for k, v in prior.items() if k in _FIELDS})


@dataclass(frozen=True, slots=True)
class _Places:
    """Where the caller can read now: its spaces' names and its scope in them."""

    names: dict[int, str]
    scope: SpaceScope

    def shows(self, space_id: int | None, tree: str | None) -> bool:
        if space_id is None or tree is None or space_id not in self.names:
            return False
        return self.scope.level_at(space_id, tree) >= READ


async def _places(conn: AsyncConnection, caller: Caller | None) -> _Places:
    scope = await load_scope(conn, caller) if caller is not None else EMPTY_SCOPE
    if not scope.space_ids():
        return _Places({}, scope)
    found = await conn.execute(
        sa.select(space.c.id, space.c.uid).where(space.c.id.in_(scope.space_ids()))
    )
    return _Places({int(i): f"spaces/{u}" for i, u in found.all()}, scope)


async def _usernames(conn: AsyncConnection, ids: set[int]) -> dict[int, str]:
    rows = await conn.execute(
        sa.select(user_account.c.id, user_account.c.username).where(user_account.c.id.in_(ids))
    )
    return {int(i): str(u) for i, u in rows.all()}


def _version(
    uid: str,
    event: Any,
    content: str,
    fields: dict[str, Any],
    actors: dict[int, str],
    places: _Places,
    viewer: int | None,
) -> MemoVersion:
    sid, tree = fields["space_id"], fields["tree"]
    shown = places.shows(sid, tree)
    return MemoVersion(
        name=f"memos/{uid}/history/{event.version}",
        version=int(event.version),
        kind=str(event.kind),
        create_time=rfc3339(event.created_ts),
        actor=f"users/{actors.get(event.actor_id, '')}",
        origin=_origin(event.credential),
        content=content,
        visibility=str(fields["visibility"]),
        state=str(fields["state"]),
        pinned=bool(fields["pinned"]),
        display_time=rfc3339(int(fields["created_ts"])),
        update_time=rfc3339(int(fields["updated_ts"])),
        space=places.names[sid] if shown else msgspec.UNSET,
        tree=render_tree_path(tree, viewer) if shown else msgspec.UNSET,
    )
