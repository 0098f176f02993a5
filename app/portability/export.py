"""Streaming a Memos Export Format 1.0 archive out of one read snapshot.

What is exported, precisely: every memo (top-level, comment, archived) whose
creator is the caller *and* that the caller's credential can read now, under
the audience predicate (``app.access.audience``), in one snapshot. So a
session exports all its own memos except SPACE ones in spaces it has left;
a restricted key exports the holder's memos inside its reach only. Related
rows are loaded only for the memos that statement returned, and carry only
what the caller can read: a comment's ``parent``, a ``REFERENCE`` target
and a prior version's space path are named only when readable; reactions
(informational) are those on the memo, with usernames.

The archive is built as it is sent: ``stream-zip`` deflates each member in a
worker thread while the memos are read page by page (keyset on
``(created_ts, id)``, oldest first, so an import recreates ties in order).
Per member: the attachment bytes (hashed as they stream), then the record
(rendered once the digests are known), then the content, byte-identical.
Memory holds one page and one attachment; the ZIP central directory that
stream-zip must keep for the end (about 0.24 KB per entry in memory, 48 MB
at 100,000 memos) is spooled to a temporary file (:mod:`.zipdir`), so
nothing grows with the archive. ``daybook/memos.jsonl``, written last in a second
pass over the same snapshot, carries Daybook's extras (tree path, space,
history); Memos ignores it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import sqlalchemy as sa
import structlog
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from stream_zip import ZIP_64, ZIP_AUTO, async_stream_zip

from app import __version__
from app.access.admission import Admission, Kind, admitted, readable
from app.access.audience import AccessMode
from app.access.caller import Caller
from app.access.paths import render_tree_path
from app.access.scope import READ, SpaceScope, load_scope
from app.attachments import storage
from app.db.schema import (
    attachment,
    memo,
    memo_event,
    memo_relation,
    memo_tag,
    reaction,
    space,
    user_account,
)
from app.portability import format as fmt
from app.portability.limits import ArchiveLimits
from app.portability.records import (
    AttachmentItem,
    DaybookExtra,
    HistoryEvent,
    Location,
    Manifest,
    MemoRecord,
    ReactionItem,
    SpaceRef,
    extra_json,
    manifest_json,
    record_json,
)
from app.portability.units import read_snapshot
from app.portability.zipdir import install as spool_central_directories

spool_central_directories()
log = structlog.get_logger("daybook.portability.export")

PAGE = 500
CHUNK = 64 * 1024
FILE_MODE = 0o100644
HISTORY_BUDGET = 8 * 1024 * 1024  # bytes of prior content per memo in the extras
_encoder = msgspec.json.Encoder()
PARENT = memo.alias("export_parent")
TARGET = memo.alias("export_target")

__all__ = ["ExportRequest", "export_archive", "export_counts", "page_statement"]


@dataclass(frozen=True, slots=True)
class ExportRequest:
    caller: Caller
    mode: AccessMode
    data_dir: Path
    display_name: str = ""
    export_ts: int = 0
    progress: Callable[[int], None] | None = None


def _exported(caller: Caller, mode: AccessMode, state: str | None = None) -> sa.ColumnElement[bool]:
    """The one statement's condition: the caller's own memos and comments, as the
    caller can read them (``state`` None: every state the read rule admits)."""
    return admitted(Admission(caller, mode, Kind.ANY, state=state, creator_id=caller.user_id))


async def export_counts(conn: AsyncConnection, caller: Caller, mode: AccessMode) -> tuple[int, int]:
    """Memos and attachments with bytes the archive will hold (the manifest's counts)."""
    memos = (
        await conn.execute(
            sa.select(sa.func.count()).select_from(memo).where(_exported(caller, mode))
        )
    ).scalar_one()
    with_bytes = sa.or_(attachment.c.storage_key.is_not(None), attachment.c.blob.is_not(None))
    attachments = (
        await conn.execute(
            sa.select(sa.func.count())
            .select_from(attachment)
            .join(memo, memo.c.id == attachment.c.memo_id)
            .where(_exported(caller, mode), with_bytes)
        )
    ).scalar_one()
    return int(memos), int(attachments)


def page_statement(
    caller: Caller, mode: AccessMode, state: str, after: tuple[int, int] | None
) -> sa.Select[Any]:
    """One page of one state, on ``ix_memo_creator_timeline`` (creator, state, time, id).

    A state at a time, so the index gives the order and the page stops at its
    limit; over both states at once the database would sort every remaining
    memo for every page.
    """
    stmt = sa.select(memo).where(_exported(caller, mode, state))
    if after is not None:
        stmt = stmt.where(sa.tuple_(memo.c.created_ts, memo.c.id) > sa.tuple_(*after))
    return stmt.order_by(memo.c.created_ts, memo.c.id).limit(PAGE)


async def _pages(
    conn: AsyncConnection, caller: Caller, mode: AccessMode
) -> AsyncIterator[list[Any]]:
    """NORMAL memos first, then ARCHIVED ones, each oldest first."""
    for state in fmt.STATES:
        after: tuple[int, int] | None = None
        while True:
            rows = list((await conn.execute(page_statement(caller, mode, state, after))).all())
            if not rows:
                break
            yield rows
            after = (rows[-1].created_ts, rows[-1].id)


@dataclass(frozen=True, slots=True)
class _Related:
    """A page's related rows, each loaded for the ids that page's statement returned."""

    tags: dict[int, list[str]]
    attachments: dict[int, list[Any]]
    relations: dict[int, list[str]]
    parents: dict[int, str]
    reactions: dict[int, list[ReactionItem]]
    spaces: dict[int, SpaceRef]


async def _related(
    conn: AsyncConnection, rows: Sequence[Any], caller: Caller, mode: AccessMode
) -> _Related:
    ids = [r.id for r in rows]
    tags: dict[int, list[str]] = defaultdict(list)
    for memo_id, tag in await conn.execute(
        sa.select(memo_tag.c.memo_id, memo_tag.c.tag)
        .where(memo_tag.c.memo_id.in_(ids))
        .order_by(memo_tag.c.memo_id, memo_tag.c.position)
    ):
        tags[memo_id].append(tag)
    attachments: dict[int, list[Any]] = defaultdict(list)
    for a in await conn.execute(
        sa.select(
            attachment.c.id,
            attachment.c.uid,
            attachment.c.memo_id,
            attachment.c.filename,
            attachment.c.mime_type,
            attachment.c.size,
            attachment.c.storage_key,
            attachment.c.blob.is_not(None).label("in_db"),
            attachment.c.external_link,
            attachment.c.created_ts,
        )
        .where(attachment.c.memo_id.in_(ids))
        .order_by(attachment.c.created_ts, attachment.c.id)
    ):
        attachments[a.memo_id].append(a)
    relations: dict[int, list[str]] = defaultdict(list)
    for memo_id, uid in await conn.execute(
        sa.select(memo_relation.c.memo_id, TARGET.c.uid)
        .join(TARGET, TARGET.c.id == memo_relation.c.related_memo_id)
        .where(
            memo_relation.c.memo_id.in_(ids),
            memo_relation.c.type == fmt.REFERENCE,
            readable(caller, mode, TARGET),
        )
        .order_by(memo_relation.c.memo_id, TARGET.c.id)
    ):
        relations[memo_id].append(uid)
    parent_ids = {r.parent_id for r in rows if r.parent_id is not None}
    parent_uid: dict[int, str] = {}
    if parent_ids:
        parent_uid = dict(
            (
                await conn.execute(
                    sa.select(PARENT.c.id, PARENT.c.uid).where(
                        PARENT.c.id.in_(parent_ids), readable(caller, mode, PARENT)
                    )
                )
            ).all()
        )
    parents = {r.id: parent_uid[r.parent_id] for r in rows if r.parent_id in parent_uid}
    reactions: dict[int, list[ReactionItem]] = defaultdict(list)
    for r in await conn.execute(
        sa.select(
            reaction.c.memo_id,
            reaction.c.reaction_type,
            reaction.c.created_ts,
            user_account.c.username,
        )
        .join(user_account, user_account.c.id == reaction.c.creator_id)
        .where(reaction.c.memo_id.in_(ids))
        .order_by(reaction.c.id)
    ):
        reactions[r.memo_id].append(
            ReactionItem(r.reaction_type, r.username, fmt.format_time(r.created_ts))
        )
    space_ids = {r.space_id for r in rows if r.space_id is not None}
    spaces: dict[int, SpaceRef] = {}
    if space_ids:
        for sid, uid, title in await conn.execute(
            sa.select(space.c.id, space.c.uid, space.c.title).where(space.c.id.in_(space_ids))
        ):
            spaces[int(sid)] = SpaceRef(uid, title)
    return _Related(tags, attachments, relations, parents, reactions, spaces)


def _location(row: Any) -> Location | None:
    if row.location_placeholder is None:
        return None
    return Location(
        row.location_placeholder, row.location_latitude or 0.0, row.location_longitude or 0.0
    )


class _Digests:
    """SHA-256 and size of each attachment entry, filled as its bytes stream out."""

    def __init__(self) -> None:
        self.values: dict[str, tuple[str, int]] = {}


def _mtime(ts: int) -> datetime:
    """Aware UTC: the extended timestamp is the epoch, the MS-DOS fields read UTC."""
    return datetime.fromtimestamp(ts, UTC)


async def _one(data: bytes) -> AsyncIterator[bytes]:
    yield data


async def _attachment_bytes(
    conn: AsyncConnection, row: Any, data_dir: Path, digests: _Digests
) -> AsyncIterator[bytes]:
    if row.storage_key is not None:
        data = await storage.read_bytes(data_dir, row.storage_key)
    else:
        data = (
            await conn.execute(sa.select(attachment.c.blob).where(attachment.c.id == row.id))
        ).scalar_one()
    if data is None:
        log.error("attachment bytes missing", attachment=row.uid)
        raise RuntimeError(f"attachment {row.uid}: stored bytes are missing")
    digest = hashlib.sha256(data).hexdigest()
    digests.values[row.uid] = (digest, len(data))
    for start in range(0, len(data), CHUNK):
        yield bytes(data[start : start + CHUNK])


def _record(
    row: Any, related: _Related, username: str, digests: _Digests, paths: dict[str, str]
) -> MemoRecord:
    items = []
    for a in related.attachments.get(row.id, []):
        if a.storage_key is not None or a.in_db:
            digest, size = digests.values[a.uid]
            items.append(
                AttachmentItem(
                    uid=a.uid,
                    filename=a.filename,
                    type=a.mime_type,
                    size=size,
                    create_time=fmt.format_time(a.created_ts),
                    sha256=digest,
                    path=paths[a.uid],
                )
            )
        elif a.external_link:
            items.append(
                AttachmentItem(
                    uid=a.uid,
                    filename=a.filename,
                    type=a.mime_type,
                    size=a.size,
                    create_time=fmt.format_time(a.created_ts),
                    external_link=a.external_link,
                )
            )
    space_ref = related.spaces.get(row.space_id) if row.space_id is not None else None
    return MemoRecord(
        uid=row.uid,
        creator=username,
        create_time=fmt.format_time(row.created_ts),
        update_time=fmt.format_time(row.updated_ts),
        state=row.state,
        visibility=row.visibility,
        pinned=bool(row.pinned),
        content_path=fmt.content_path(row.uid),
        tags=tuple(related.tags.get(row.id, [])),
        location=_location(row),
        space=space_ref,
        parent=related.parents.get(row.id, ""),
        relations=tuple(related.relations.get(row.id, [])),
        attachments=tuple(items),
        reactions=tuple(related.reactions.get(row.id, [])),
    )


async def _record_bytes(build: Callable[[], MemoRecord]) -> AsyncIterator[bytes]:
    yield _encoder.encode(record_json(build())) + b"\n"


async def _history(
    conn: AsyncConnection, ids: list[int], caller: Caller, scope: SpaceScope, spaces: dict[int, str]
) -> dict[int, list[HistoryEvent]]:
    events: dict[int, list[Any]] = defaultdict(list)
    for e in await conn.execute(
        sa.select(memo_event, user_account.c.username)
        .outerjoin(user_account, user_account.c.id == memo_event.c.actor_id)
        .where(memo_event.c.memo_id.in_(ids))
        .order_by(memo_event.c.memo_id, memo_event.c.id)
    ):
        if e.kind == "CREATE":
            events[e.memo_id] = []  # a reused id's older life is not this memo's history
        events[e.memo_id].append(e)
    out: dict[int, list[HistoryEvent]] = {}
    for memo_id, rows in events.items():
        out[memo_id] = [_event(e, caller, scope, spaces) for e in rows]
    return out


def _event(e: Any, caller: Caller, scope: SpaceScope, spaces: dict[int, str]) -> HistoryEvent:
    prior = dict(e.prior) if isinstance(e.prior, dict) else None
    if prior is not None:
        sid, tree = prior.pop("space_id", None), prior.pop("tree", None)
        if (
            isinstance(sid, int)
            and isinstance(tree, str)
            and sid in spaces
            and scope.level_at(sid, tree) >= READ
        ):
            prior["space"] = spaces[sid]
            prior["tree"] = render_tree_path(tree, caller.user_id)
    return HistoryEvent(
        kind=e.kind,
        version=int(e.version),
        create_time=fmt.format_time(e.created_ts),
        actor=e.username or "",
        prior_content=e.prior_content,
        prior=prior,
    )


def _bounded_history(events: list[HistoryEvent]) -> tuple[tuple[HistoryEvent, ...], bool]:
    """The newest events whose prior contents fit the budget, oldest first."""
    kept: list[HistoryEvent] = []
    used = 0
    for event in reversed(events):
        used += len((event.prior_content or "").encode())
        if used > HISTORY_BUDGET:
            return tuple(reversed(kept)), True
        kept.append(event)
    return tuple(reversed(kept)), False


async def _extras(
    conn: AsyncConnection, req: ExportRequest, scope: SpaceScope
) -> AsyncIterator[bytes]:
    caller = req.caller
    async for rows in _pages(conn, caller, req.mode):
        space_ids = {r.space_id for r in rows if r.space_id is not None} | {
            sid for sid, _, _ in scope.rows
        }
        spaces: dict[int, str] = {}
        titles: dict[int, str] = {}
        for i, u, t in await conn.execute(
            sa.select(space.c.id, space.c.uid, space.c.title).where(space.c.id.in_(space_ids))
        ):
            spaces[int(i)], titles[int(i)] = str(u), str(t)
        history = await _history(conn, [r.id for r in rows], caller, scope, spaces)
        lines = []
        for r in rows:
            events, truncated = _bounded_history(history.get(r.id, []))
            placed = r.space_id in spaces and r.tree is not None
            extra = DaybookExtra(
                uid=r.uid,
                tree=render_tree_path(r.tree, caller.user_id) if placed else "",
                space=SpaceRef(spaces[r.space_id], titles.get(r.space_id, "")) if placed else None,
                history=events,
                history_truncated=truncated,
            )
            lines.append(_encoder.encode(extra_json(extra)) + b"\n")
        yield b"".join(lines)


async def _members(
    conn: AsyncConnection, req: ExportRequest, counts: tuple[int, int]
) -> AsyncIterator[tuple[str, datetime, int, Any, AsyncIterator[bytes]]]:
    caller = req.caller
    mtime = _mtime(req.export_ts)
    manifest = Manifest(
        format=fmt.FORMAT,
        format_version=fmt.FORMAT_VERSION,
        generator_name="daybook",
        generator_version=__version__,
        export_time=fmt.format_time(req.export_ts),
        scope_kind=fmt.SCOPE_USER,
        username=caller.username,
        display_name=req.display_name,
        count_memos=counts[0],
        count_attachments=counts[1],
    )
    body = _encoder.encode(manifest_json(manifest)) + b"\n"
    yield fmt.MANIFEST, mtime, FILE_MODE, ZIP_AUTO(len(body)), _one(body)
    done = 0
    limits = ArchiveLimits()
    async for rows in _pages(conn, caller, req.mode):
        related = await _related(conn, rows, caller, req.mode)
        for row in rows:
            digests = _Digests()
            paths: dict[str, str] = {}
            for a in related.attachments.get(row.id, []):
                if a.storage_key is None and not a.in_db:
                    continue
                paths[a.uid] = fmt.attachment_path(a.uid, a.filename)
                yield (
                    paths[a.uid],
                    mtime,
                    FILE_MODE,
                    ZIP_AUTO(max(int(a.size), 1)),
                    _attachment_bytes(conn, a, req.data_dir, digests),
                )

            def build(
                row: Any = row,
                related: _Related = related,
                digests: _Digests = digests,
                paths: dict[str, str] = paths,
            ) -> MemoRecord:
                return _record(row, related, caller.username, digests, paths)

            yield (
                fmt.record_path(row.uid),
                mtime,
                FILE_MODE,
                ZIP_AUTO(limits.max_record_bytes),
                _record_bytes(build),
            )
            content = row.content.encode("utf-8")
            yield fmt.content_path(row.uid), mtime, FILE_MODE, ZIP_AUTO(len(content)), _one(content)
            done += 1
            if req.progress is not None:
                req.progress(1)
    scope = await load_scope(conn, caller)
    yield fmt.DAYBOOK_EXTRAS, mtime, FILE_MODE, ZIP_64, _extras(conn, req, scope)


async def export_archive(engine: AsyncEngine, req: ExportRequest) -> AsyncIterator[bytes]:
    """The archive's bytes, produced as they are read (one read snapshot throughout)."""
    if req.export_ts == 0:
        req = dataclasses.replace(req, export_ts=int(time.time()))
    async with read_snapshot(engine) as conn:
        counts = await export_counts(conn, req.caller, req.mode)
        async for chunk in async_stream_zip(_members(conn, req, counts)):
            yield chunk
