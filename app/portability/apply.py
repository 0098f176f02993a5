"""Importing a validated archive: one walk that plans, and (unless dry) writes.

The plan (``validateOnly``) and the import are the same code with the writes
skipped, so the plan cannot promise what the import then does differently.
Everything runs in the caller's one write transaction: a problem found
anywhere in the walk raises :class:`ArchiveRefused` and the transaction rolls
back (attachment files written on the way are removed), so an import
happens whole or not at all.

Memos are written through the memo services (``prepare_memo``,
``insert_memo``, ``update_memo``): the same checks as an API create, the
derived columns and tags, a history event per write, the full-text index and
the embedding queue (triggers). A page's top-level creates are parsed
together and written together (:mod:`app.memos.bulk`: the same rows in a few
statements instead of five per memo); comments, replacements and skips go one
by one. The importer is the creator of everything,
whatever the records' ``creator`` says. Order, as the format prescribes:
top-level memos in archive order, then comments (parents precede them),
then the ``REFERENCE`` relations, once every record exists.

Placement: a record's ``space`` is matched by uid, then by a unique title,
among the spaces the caller is an ACTIVE member of (for a key: declared in
it); the path is the Daybook extra's ``tree`` (``~`` is the importer's own
home) or ``share``. When it cannot be placed there under the write rule, the
memo is imported unplaced and, if it was SPACE, PRIVATE (the spec's
fallback), with a warning. A comment takes its parent's placement, as every
comment does (``comment_placement``). A PUBLIC memo on an instance that
disallows PUBLIC becomes PROTECTED, with a warning.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

import msgspec
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.scope import SpaceScope, load_scope
from app.attachments import storage
from app.db.schema import memo, memo_relation, space
from app.errors import DaybookError, InvalidArgument, NotFound, PermissionDenied
from app.memos.bulk import NewMemo, insert_memos, prerender_all
from app.memos.lookup import comment_placement
from app.memos.schemas import LocationIn, MemoIn
from app.memos.service import (
    PreparedMemo,
    insert_memo,
    load_for_read,
    may_write,
    prepare_memo,
    update_memo,
)
from app.portability import format as fmt
from app.portability.attach import apply_attachments
from app.portability.errors import ArchiveRefused
from app.portability.plan import (
    Action,
    GeneratorOut,
    Holder,
    ImportPlan,
    WarningOut,
    candidates,
    decide,
)
from app.portability.records import MemoRecord
from app.portability.staging import Outcome
from app.portability.validation import ValidatedArchive
from app.portability.walk import ImportContext, Walk

PAGE = 200
MAX_WARNINGS_SHOWN = 200
DEFAULT_TREE = "share"

__all__ = ["ImportContext", "run_import"]


@dataclass(frozen=True, slots=True)
class _Parent:
    """A comment's parent as ``comment_placement`` reads it (a memo row's fields)."""

    uid: str
    id: int | None  # None: planned in a dry run, not written
    visibility: str
    space_id: int | None
    tree: str | None
    is_comment: bool


# --- lookups --------------------------------------------------------------------------


async def _holders(conn: AsyncConnection, uids: list[str]) -> dict[str, Holder]:
    out: dict[str, Holder] = {}
    for start in range(0, len(uids), 500):
        chunk = uids[start : start + 500]
        for uid, memo_id, creator_id in await conn.execute(
            sa.select(memo.c.uid, memo.c.id, memo.c.creator_id).where(memo.c.uid.in_(chunk))
        ):
            out[str(uid)] = Holder(int(memo_id), int(creator_id))
    return out


async def _member_spaces(
    conn: AsyncConnection, scope: SpaceScope
) -> tuple[dict[str, int], dict[str, list[str]]]:
    ids = scope.space_ids()
    by_uid: dict[str, int] = {}
    by_title: dict[str, list[str]] = {}
    if ids:
        for sid, uid, title in await conn.execute(
            sa.select(space.c.id, space.c.uid, space.c.title).where(space.c.id.in_(ids))
        ):
            by_uid[str(uid)] = int(sid)
            by_title.setdefault(str(title), []).append(str(uid))
    return by_uid, by_title


# --- building the create body ---------------------------------------------------------


def _body(walk: Walk, record: MemoRecord, content: str) -> tuple[MemoIn, MemoIn | None]:
    """The create body as placed, and the unplaced fallback (None when not placed)."""
    visibility = record.visibility
    if visibility == "PUBLIC" and walk.ctx.write.access.disallow_public_visibility:
        walk.warn(record.uid, "PUBLIC is disallowed on this instance: imported as PROTECTED")
        visibility = "PROTECTED"
    location: LocationIn | msgspec.UnsetType = msgspec.UNSET
    if record.location is not None:
        location = LocationIn(
            placeholder=record.location.placeholder,
            latitude=record.location.latitude,
            longitude=record.location.longitude,
        )
    base = MemoIn(
        content=content,
        visibility="PRIVATE" if visibility == "SPACE" else visibility,
        state=record.state,
        pinned=record.pinned,
        create_time=fmt.format_time(fmt.parse_time(record.create_time)),
        update_time=fmt.format_time(fmt.parse_time(record.update_time)),
        location=location,
    )
    extra = walk.staging.extra_of(record.uid)
    ref = (extra.space if extra is not None and extra.space is not None else None) or record.space
    if ref is None:
        if visibility == "SPACE":
            walk.warn(record.uid, "SPACE memo without a space: imported as PRIVATE")
        return base, None
    space_uid = _match_space(walk, ref.uid, ref.title)
    if space_uid is None:
        walk.warn(
            record.uid,
            f"space {ref.uid!r} is not one of yours: imported unplaced"
            + (" and PRIVATE" if visibility == "SPACE" else ""),
        )
        return base, None
    tree = extra.tree if extra is not None and extra.tree else DEFAULT_TREE
    placed = msgspec.structs.replace(
        base, visibility=visibility, space=f"spaces/{space_uid}", tree=tree
    )
    return placed, base


def _match_space(walk: Walk, uid: str, title: str) -> str | None:
    if uid in walk.spaces_by_uid:
        return uid
    titled = walk.spaces_by_title.get(title, []) if title else []
    return titled[0] if len(titled) == 1 else None


async def _prepare(
    conn: AsyncConnection,
    walk: Walk,
    record: MemoRecord,
    placed: MemoIn,
    fallback: MemoIn | None,
    uid: str,
    parent_id: int | None,
) -> PreparedMemo | None:
    """Every create check; the unplaced fallback when the placement is refused."""
    wctx = walk.ctx.write
    try:
        return await prepare_memo(conn, wctx, placed, uid, parent_id)
    except (PermissionDenied, NotFound, InvalidArgument) as exc:
        if fallback is None:
            walk.problem(record.uid, exc.message)
            return None
        walk.warn(
            record.uid,
            f"cannot be placed in its space ({exc.message}): imported unplaced"
            + (" and PRIVATE" if placed.visibility == "SPACE" else ""),
        )
    try:
        return await prepare_memo(conn, wctx, fallback, uid, parent_id)
    except DaybookError as exc:
        walk.problem(record.uid, exc.message)
        return None


# --- one record -----------------------------------------------------------------------


def _content(walk: Walk, record: MemoRecord) -> str:
    entry = walk.staging.entry(record.content_path)
    assert entry is not None  # validation checked it
    return walk.staging.entry_bytes(entry).decode("utf-8")


async def _parent(conn: AsyncConnection, walk: Walk, record: MemoRecord) -> _Parent | None:
    """The comment's parent as imported or on the instance, or None (imported top-level)."""
    uid = record.parent
    outcome = walk.staging.outcome(uid)
    if outcome is not None:
        parent = await _parent_of(conn, outcome)
    elif walk.staging.record_parent(uid) is not None:
        parent = None  # in the archive but not imported (a nested comment): no parent
    else:
        caller, mode = walk.ctx.write.caller, walk.ctx.write.access.access_mode
        try:
            row = await load_for_read(conn, uid, caller, mode)
        except NotFound:
            row = None
        parent = None if row is None else _row_parent(row)
        if parent is None:
            walk.warn(record.uid, f"parent {uid} is neither in the archive nor readable here")
            return None
    if parent is None or parent.is_comment:
        walk.warn(record.uid, f"parent {uid} is itself a comment: imported as a top-level memo")
        return None
    return parent


def _row_parent(row: Any) -> _Parent:
    return _Parent(
        row.uid, row.id, row.visibility, row.space_id, row.tree, row.parent_id is not None
    )


async def _parent_of(conn: AsyncConnection, outcome: Outcome) -> _Parent:
    if outcome.memo_id is not None:
        row = (await conn.execute(sa.select(memo).where(memo.c.id == outcome.memo_id))).one()
        return _row_parent(row)
    return _Parent(
        outcome.target_uid,
        None,
        outcome.visibility,
        outcome.space_id,
        outcome.tree,
        outcome.is_comment,
    )


async def _comment_body(
    conn: AsyncConnection, walk: Walk, record: MemoRecord, body: MemoIn, parent: _Parent
) -> MemoIn | None:
    """The comment placed as its parent dictates; None when the caller may not comment there."""
    data = msgspec.structs.replace(
        body, space=msgspec.UNSET, tree=msgspec.UNSET, visibility=body.visibility
    )
    if parent.visibility == "SPACE" and data.visibility != "SPACE":
        data = msgspec.structs.replace(data, visibility="SPACE")
    if parent.visibility != "SPACE" and data.visibility == "SPACE":
        data = msgspec.structs.replace(data, visibility="PRIVATE")
    if parent.id is None and parent.visibility == "SPACE":
        # Dry run: the parent is planned, not written; the write rule is checked on its path.
        uid = (
            await conn.execute(sa.select(space.c.uid).where(space.c.id == parent.space_id))
        ).scalar_one()
        return msgspec.structs.replace(data, space=f"spaces/{uid}", tree=parent.tree or "")
    try:
        return await comment_placement(conn, walk.ctx.write.caller, parent, data)
    except (PermissionDenied, InvalidArgument) as exc:
        walk.warn(record.uid, f"cannot comment on {parent.uid} ({exc.message}): imported top-level")
        return None


@dataclass(frozen=True, slots=True)
class _Pending:
    """A top-level create that passed every check, written with its page (:func:`_flush`)."""

    record: MemoRecord
    action: Action
    content: str
    new: NewMemo


async def _one(
    conn: AsyncConnection,
    walk: Walk,
    record: MemoRecord,
    holders: dict[str, Holder],
    batch: list[_Pending] | None,
) -> None:
    """Decide and apply one record; a top-level create joins ``batch`` when there is one."""
    caller = walk.ctx.write.caller
    decision = decide(record.uid, holders, caller.user_id, walk.ctx.policy)
    if decision is None:
        walk.problem(record.uid, "every candidate id is held by another account")
        return
    action, target, holder = decision
    walk.tally.count(action)
    if action is Action.SKIP:
        assert holder is not None
        row = (await conn.execute(sa.select(memo).where(memo.c.id == holder.memo_id))).one()
        walk.staging.record_outcome(_outcome(record, action, row.uid, row.id, row))
        return
    content = _content(walk, record)
    placed_body, fallback = _body(walk, record, content)
    parent: _Parent | None = None
    if record.parent:
        parent = await _parent(conn, walk, record)
        if parent is not None:
            comment = await _comment_body(conn, walk, record, fallback or placed_body, parent)
            if comment is None:
                parent = None
            else:
                placed_body, fallback = comment, None
    if action is Action.REPLACE:
        assert holder is not None
        await _replace(conn, walk, record, placed_body, fallback, holder)
        return
    uid = secrets.token_hex(11) if action is Action.DUPLICATE else target
    prepared = await _prepare(
        conn, walk, record, placed_body, fallback, uid, parent.id if parent else None
    )
    if prepared is None:
        return
    if batch is not None and parent is None:
        batch.append(_Pending(record, action, content, NewMemo(walk.ctx.write, prepared)))
        return
    memo_id: int | None = None
    if not walk.ctx.dry_run:
        memo_id = await insert_memo(conn, walk.ctx.write, prepared)
        if parent is not None:
            assert parent.id is not None
            await conn.execute(
                memo_relation.insert().values(
                    memo_id=memo_id, related_memo_id=parent.id, type="COMMENT"
                )
            )
    await _created(conn, walk, record, action, content, prepared, memo_id, parent is not None)


async def _created(
    conn: AsyncConnection,
    walk: Walk,
    record: MemoRecord,
    action: Action,
    content: str,
    prepared: PreparedMemo,
    memo_id: int | None,
    is_comment: bool,
) -> None:
    """What follows a create (or, in a dry run, its plan): the outcome, the attachments."""
    v = prepared.values
    walk.staging.record_outcome(
        Outcome(
            record.uid,
            action.value,
            prepared.uid,
            memo_id,
            v["visibility"],
            v["space_id"],
            v["tree"],
            is_comment,
        )
    )
    await apply_attachments(conn, walk, record, content, memo_id, replacing=False)


async def _flush(conn: AsyncConnection, walk: Walk, batch: list[_Pending]) -> None:
    """Write a page's top-level creates in a few statements (:mod:`app.memos.bulk`), then
    their outcomes and attachments in archive order; in a dry run, only the latter."""
    ids: list[int | None] = [None] * len(batch)
    if not walk.ctx.dry_run:
        ids = list(await insert_memos(conn, [p.new for p in batch]))
    for p, memo_id in zip(batch, ids, strict=True):
        await _created(conn, walk, p.record, p.action, p.content, p.new.prepared, memo_id, False)
    batch.clear()


def _outcome(
    record: MemoRecord, action: Action, uid: str, memo_id: int | None, row: Any
) -> Outcome:
    return Outcome(
        record.uid,
        action.value,
        uid,
        memo_id,
        row.visibility,
        row.space_id,
        row.tree,
        row.parent_id is not None,
    )


async def _replace(
    conn: AsyncConnection,
    walk: Walk,
    record: MemoRecord,
    body: MemoIn,
    fallback: MemoIn | None,
    holder: Holder,
) -> None:
    """Make the importer's memo match the record, as a fresh create of it would be."""
    row = (await conn.execute(sa.select(memo).where(memo.c.id == holder.memo_id))).one()
    if row.state == "TRASHED":  # app.memos.trash: only :undelete brings a memo back
        walk.problem(
            record.uid,
            "is in your trash: restore it (:undelete) or purge it before replacing it (REPLACE)",
        )
        return
    if not await may_write(conn, walk.ctx.write.caller, row):
        walk.problem(record.uid, "exists and is yours, but you may no longer change it (REPLACE)")
        return
    paths = {"content", "pinned", "state", "location", "create_time", "update_time"}
    if row.parent_id is None:
        paths |= {"visibility", "space", "tree"}
    else:
        body = msgspec.structs.replace(body, space=msgspec.UNSET, tree=msgspec.UNSET)
        if row.visibility == "SPACE":
            body = msgspec.structs.replace(body, visibility="SPACE")
        paths.add("visibility")
    if isinstance(body.location, msgspec.UnsetType):
        body = msgspec.structs.replace(body, location=None)
    if "space" in paths and isinstance(body.space, msgspec.UnsetType):
        body = msgspec.structs.replace(body, space="", tree="")
    attempt = body
    for candidate in (body, fallback):
        if candidate is None:
            continue
        attempt = candidate
        if "space" in paths and isinstance(attempt.space, msgspec.UnsetType):
            attempt = msgspec.structs.replace(attempt, space="", tree="")
        try:
            await _update(conn, walk, row, attempt, paths)
            break
        except (PermissionDenied, NotFound, InvalidArgument) as exc:
            if candidate is fallback or fallback is None:
                walk.problem(record.uid, exc.message)
                return
            walk.warn(
                record.uid, f"cannot be placed in its space ({exc.message}): replaced unplaced"
            )
    fresh = (await conn.execute(sa.select(memo).where(memo.c.id == row.id))).one()
    walk.staging.record_outcome(_outcome(record, Action.REPLACE, row.uid, row.id, fresh))
    content = body.content if isinstance(body.content, str) else ""
    await apply_attachments(conn, walk, record, content, row.id, replacing=True)


async def _update(
    conn: AsyncConnection, walk: Walk, row: Any, body: MemoIn, paths: set[str]
) -> None:
    """The replacement; in a dry run only its checks (a create's, at the destination)."""
    if not walk.ctx.dry_run:
        await update_memo(conn, walk.ctx.write, row, body, paths, None)
    elif row.parent_id is None:
        await prepare_memo(conn, walk.ctx.write, body, row.uid)


# --- relations ------------------------------------------------------------------------


async def _target_id(conn: AsyncConnection, walk: Walk, uid: str) -> tuple[bool, int | None]:
    """Whether the relation target exists (archive or instance), and its id once written."""
    outcome = walk.staging.outcome(uid)
    if outcome is not None:
        return True, outcome.memo_id
    try:
        row = await load_for_read(
            conn, uid, walk.ctx.write.caller, walk.ctx.write.access.access_mode
        )
    except NotFound:
        return False, None
    return True, int(row.id)


async def _relations(conn: AsyncConnection, walk: Walk) -> None:
    after = 0
    while True:
        page = walk.staging.all_records_page(after, PAGE)
        if not page:
            return
        after = page[-1][0]
        walk.staging.commit()  # the warnings of the page before (see _walk)
        for _, record in page:
            outcome = walk.staging.outcome(record.uid)
            if outcome is None or outcome.action == Action.SKIP.value:
                continue
            memo_id = outcome.memo_id
            targets: list[int] = []
            for target_uid in record.relations:
                exists, target_id = await _target_id(conn, walk, target_uid)
                if not exists:
                    walk.warn(
                        record.uid,
                        f"relation to {target_uid} dropped: not in the archive nor readable",
                    )
                    continue
                if target_id is not None and target_id != memo_id and target_id not in targets:
                    targets.append(target_id)
            if walk.ctx.dry_run or memo_id is None:
                continue
            if outcome.action == Action.REPLACE.value:
                await conn.execute(
                    memo_relation.delete().where(
                        memo_relation.c.memo_id == memo_id, memo_relation.c.type == fmt.REFERENCE
                    )
                )
            if targets:
                await conn.execute(
                    sa.insert(memo_relation),
                    [
                        {"memo_id": memo_id, "related_memo_id": t, "type": fmt.REFERENCE}
                        for t in targets
                    ],
                )


# --- the walk -------------------------------------------------------------------------


def _writes(walk: Walk, record: MemoRecord, holders: dict[str, Holder]) -> bool:
    """Whether the record's decision writes its content (so it is worth parsing ahead)."""
    decision = decide(record.uid, holders, walk.ctx.write.caller.user_id, walk.ctx.policy)
    return decision is not None and decision[0] is not Action.SKIP


async def _walk(conn: AsyncConnection, walk: Walk) -> None:
    caller = walk.ctx.write.caller
    for comments in (False, True):
        after = 0
        while True:
            page = walk.staging.records_page(after, PAGE, comments=comments)
            if not page:
                break
            after = page[-1][0]
            wanted = [c for _, r in page for c in candidates(r.uid, caller.user_id)]
            holders = await _holders(conn, wanted)
            await prerender_all(
                (_content(walk, r) for _, r in page if _writes(walk, r, holders)),
                walk.ctx.write.access.content_length_limit,
            )
            # Comments one by one: a comment's parent may be another comment of the page,
            # whose outcome must be recorded before it is looked up.
            batch: list[_Pending] | None = None if comments else []
            for _, record in page:
                await _one(conn, walk, record, holders, batch)
                if walk.ctx.progress is not None:
                    walk.ctx.progress(1)
            if batch:
                await _flush(conn, walk, batch)
            # The page's outcomes and warnings to the staging file: an open staging
            # transaction would hold every dirty page in memory until the end.
            walk.staging.commit()
    await _relations(conn, walk)


async def run_import(
    conn: AsyncConnection, ctx: ImportContext, archive: ValidatedArchive
) -> ImportPlan:
    """Plan (dry run) or apply ``archive`` in ``conn``'s transaction; refused whole on a problem."""
    scope = await load_scope(conn, ctx.write.caller)
    by_uid, by_title = await _member_spaces(conn, scope)
    walk = Walk(ctx, archive, scope, by_uid, by_title)
    try:
        await _walk(conn, walk)
        if walk.problems:
            raise ArchiveRefused(walk.problems)
    except BaseException:
        for key in walk.written_keys:
            await storage.remove(ctx.data_dir, key)
        raise
    archive.staging.commit()
    manifest = archive.manifest
    warnings = archive.staging.warnings(MAX_WARNINGS_SHOWN)
    t = walk.tally
    return ImportPlan(
        validate_only=ctx.dry_run,
        conflict_policy=ctx.policy.value,
        export_time=manifest.export_time,
        exporter=manifest.username,
        generator=GeneratorOut(name=manifest.generator_name, version=manifest.generator_version),
        memo_count=archive.memo_count,
        attachment_count=archive.attachment_count,
        new=t.new,
        existing=t.existing,
        renamed=t.renamed,
        inserted=t.inserted,
        replaced=t.replaced,
        skipped=t.skipped,
        duplicated=t.duplicated,
        attachments_stored=t.attachments_stored,
        attachments_reused=t.attachments_reused,
        warnings=[WarningOut(memo=u, message=m) for u, m in warnings],
        warning_count=archive.staging.count("warning"),
        problems=[],
    )
