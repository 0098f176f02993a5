"""The trash: a DELETE that can be undone until the retention period ends.

``DELETE /api/v1/memos/{id}`` sets the memo's ``state`` to ``TRASHED``, and
the state of its comments too, in one transaction, and records the group in
``memo_trash`` (``root_id`` is the memo the DELETE named). Nothing else is
touched: relations, reactions, attachments, shares and tags stay in place and
come back with a restore, exactly as they were.

Why a state value rather than a flag beside the state: the read rule
(:mod:`app.access.audience`) admits only NORMAL (and ARCHIVED for the
creator), in both renderings, and denies every other value. ``TRASHED`` is
therefore invisible on every read path that goes through the audience
predicate or ``can_read`` (lists, search, feeds, stats, tags, comments,
relations, reactions, attachments, files, shares, MCP, export), including
paths written later, without any of them naming the trash. Related objects
follow their memo, so they disappear with it.

The one view of a trashed memo is its creator's trash: the rows are read
through :data:`RESTORED`, the trashed memos *as they would be if restored*
(``prior_state`` in place of ``state``), under the same audience predicate,
so a key's ceiling, a lost space membership or a deactivated creator hide a
trashed memo exactly as they would hide the live one.

Purging deletes the rows (and DELETE history events record it); the bytes of
the group's attachments are removed after the transaction commits. The
retention job (:func:`purge_expired`) claims expired groups by writing a
claim token and a lease in ``memo_trash`` first, removes the files, then
deletes the claimed rows: several processes on one database never purge one
group twice, and a claim abandoned by a crash is taken over once its lease
has passed (file removal is idempotent).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
import sqlalchemy as sa
import structlog
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.access.admission import readable
from app.access.audience import AccessMode
from app.access.caller import Caller
from app.api.paging import decode_int_key, fingerprint, trim_page
from app.api.structs import Out, rfc3339
from app.attachments import storage
from app.db.schema import attachment, instance_setting, memo, memo_event, memo_trash
from app.db.transactions import read_transaction, write_transaction
from app.errors import FailedPrecondition, InvalidArgument, NotFound, PermissionDenied
from app.memos.rows import MemoRow, RestoredRow
from app.memos.service import TRACKED, WriteContext, may_write
from app.webhooks.outbox import Activity, emit

log = structlog.get_logger("daybook.trash")

TRASHED = "TRASHED"
TRASH_SETTING = "TRASH"
DEFAULT_RETENTION_DAYS = 30
MAX_RETENTION_DAYS = 3650
DAY = 86400
# A claim older than this is abandoned (its process died); another may take it.
CLAIM_LEASE = 600
PURGE_BATCH = 500
PURGE_INTERVAL = 300.0


# --------------------------------------------------------------------------- settings


@dataclass(frozen=True, slots=True)
class TrashSettings:
    """``instance/settings/TRASH``: days a trashed memo is kept; 0 keeps it until purged."""

    retention_days: int = DEFAULT_RETENTION_DAYS

    def purge_ts(self, trashed_ts: int) -> int | None:
        """When the retention job purges a memo trashed at ``trashed_ts`` (None: never)."""
        return None if self.retention_days == 0 else trashed_ts + self.retention_days * DAY


def valid_retention(days: int) -> int:
    if not 0 <= days <= MAX_RETENTION_DAYS:
        raise InvalidArgument(
            f"retentionDays: {days} is not between 0 (keep until purged) and {MAX_RETENTION_DAYS}"
        )
    return days


async def load_trash_settings(conn: AsyncConnection) -> TrashSettings:
    value = (
        await conn.execute(
            sa.select(instance_setting.c.value).where(instance_setting.c.name == TRASH_SETTING)
        )
    ).scalar_one_or_none()
    if not isinstance(value, dict):
        return TrashSettings()
    days = value.get("retention_days")
    if type(days) is not int or not 0 <= days <= MAX_RETENTION_DAYS:
        return TrashSettings()  # a corrupt value: the default, never "purge now"
    return TrashSettings(retention_days=days)


async def save_trash_settings(conn: AsyncConnection, value: TrashSettings) -> None:
    stored = {"retention_days": value.retention_days}
    updated = await conn.execute(
        instance_setting.update()
        .where(instance_setting.c.name == TRASH_SETTING)
        .values(value=stored)
    )
    if updated.rowcount == 0:
        await conn.execute(instance_setting.insert().values(name=TRASH_SETTING, value=stored))


# --------------------------------------------------------------------------- trash


async def _event(
    conn: AsyncConnection,
    caller_id: int,
    credential: dict[str, Any],
    now: int,
    rows: Sequence[dict[str, Any]],
) -> None:
    if rows:
        await conn.execute(
            memo_event.insert(),
            [
                {
                    "memo_id": r["memo_id"],
                    "kind": r["kind"],
                    "actor_id": caller_id,
                    "credential": credential,
                    "prior_content": r.get("prior_content"),
                    "prior": r.get("prior"),
                    "version": r["version"],
                    "created_ts": now,
                }
                for r in rows
            ],
        )


async def trash_memo(conn: AsyncConnection, ctx: WriteContext, row: MemoRow) -> None:
    """Move ``row`` (already read-checked) and its comments to the creator's trash.

    The write rule is the one every edit uses (:func:`app.memos.service.may_write`).
    The state change is a compare-and-set on the loaded state and version, so
    of two concurrent DELETEs exactly one trashes and the other answers 404.
    """
    if not await may_write(conn, ctx.caller, row):
        raise PermissionDenied(
            f"memo {row.uid!r}: only its creator (with write at its path) or an owner of "
            "its path can delete it"
        )
    # Memos clients hear of a trashing as a delete; queued while the owner can
    # still read the memo (a trashed memo is readable by no one).
    await emit(conn, ctx, row.id, Activity.DELETED)
    children = (
        await conn.execute(
            sa.select(memo.c.id, memo.c.state, memo.c.version, memo.c.content).where(
                memo.c.parent_id == row.id, memo.c.state.in_(("NORMAL", "ARCHIVED"))
            )
        )
    ).all()
    group = [(row.id, row.state, row.version, row.content), *children]
    trashed: list[tuple[int, str, int, str]] = []
    for memo_id, state, version, content in group:
        done = await conn.execute(
            memo.update()
            .where(memo.c.id == memo_id, memo.c.state == state, memo.c.version == version)
            .values(state=TRASHED, version=version + 1, origin=ctx.caller.origin())
        )
        if done.rowcount == 1:
            trashed.append((memo_id, state, version, content))
        elif memo_id == row.id:
            raise NotFound(f"memo {row.uid!r} not found")
    await conn.execute(
        memo_trash.insert(),
        [
            {
                "memo_id": memo_id,
                "root_id": row.id,
                "prior_state": state,
                "trashed_ts": ctx.now,
                "trashed_by": ctx.caller.user_id,
            }
            for memo_id, state, _, _ in trashed
        ],
    )
    await _event(
        conn,
        ctx.caller.user_id,
        ctx.caller.origin(),
        ctx.now,
        [
            {
                "memo_id": memo_id,
                "kind": "TRASH",
                "version": version + 1,
                "prior_content": content,
                "prior": {"state": state},
            }
            for memo_id, state, version, content in trashed
        ],
    )


# The trashed memos as they would be if restored: the audience predicate over
# this answers "could the caller read it, were it not in the trash".
RESTORED = (
    sa.select(
        memo.c.id,
        memo.c.uid,
        memo.c.creator_id,
        memo.c.visibility,
        memo.c.space_id,
        memo.c.tree,
        memo_trash.c.prior_state.label("state"),
        memo.c.content,
        memo.c.snippet,
        memo.c.parent_id,
        memo.c.pinned,
        memo.c.created_ts,
        memo.c.updated_ts,
        memo.c.version,
        memo_trash.c.root_id,
        memo_trash.c.trashed_ts,
        memo_trash.c.trashed_by,
        memo_trash.c.claim_token,
    )
    .select_from(memo.join(memo_trash, memo_trash.c.memo_id == memo.c.id))
    .where(memo.c.state == TRASHED)
    .subquery("restored")
)


def _own_roots(caller: Caller, mode: AccessMode) -> sa.ColumnElement[bool]:
    """The caller's trash: groups it created the root of, as it could read them restored."""
    r = RESTORED.c
    return sa.and_(
        r.creator_id == caller.user_id,
        r.id == r.root_id,
        readable(caller, mode, RESTORED),
    )


class TrashedMemo(Out):
    """One entry of a user's trash: the memo its DELETE named."""

    name: str  # memos/{uid}: restore with POST /api/v1/memos/{uid}:undelete
    creator: str
    content: str
    snippet: str
    visibility: str
    state: str  # always TRASHED
    prior_state: str  # NORMAL | ARCHIVED: what a restore puts back
    pinned: bool
    create_time: str
    update_time: str
    trash_time: str
    comment_count: int  # comments trashed with it (restored with it)
    purge_time: str | msgspec.UnsetType = msgspec.UNSET  # absent: kept until purged
    parent: str | msgspec.UnsetType = msgspec.UNSET  # memos/{uid} for a comment


class ListTrashResponse(Out):
    memos: list[TrashedMemo]
    next_page_token: str = ""


async def list_trash(
    conn: AsyncConnection,
    caller: Caller,
    mode: AccessMode,
    page_size: int,
    page_token: str | None,
    secret: str,
) -> ListTrashResponse:
    """The caller's trash, most recently trashed first, keyset-paged."""
    r = RESTORED.c
    key = fingerprint("trash", caller.user_id)
    comments = (
        sa.select(sa.func.count())
        .select_from(memo_trash)
        .where(memo_trash.c.root_id == r.id, memo_trash.c.memo_id != r.id)
        .scalar_subquery()
    )
    parent = memo.alias("parent")
    stmt = (
        sa.select(RESTORED, comments.label("comment_count"), parent.c.uid.label("parent_uid"))
        .outerjoin(parent, parent.c.id == r.parent_id)
        .where(_own_roots(caller, mode))
    )
    if page_token:
        values = decode_int_key(secret, key, page_token, 2)
        stmt = stmt.where(sa.tuple_(r.trashed_ts, r.id) < sa.tuple_(*values))
    fetched = (
        await conn.execute(stmt.order_by(r.trashed_ts.desc(), r.id.desc()).limit(page_size + 1))
    ).all()
    page = trim_page(
        fetched, page_size, lambda row: [row.trashed_ts, row.id], secret=secret, query=key
    )
    rows, token = page.rows, page.next_token
    settings = await load_trash_settings(conn)
    out = []
    for row in rows:
        purge = settings.purge_ts(int(row.trashed_ts))
        out.append(
            TrashedMemo(
                name=f"memos/{row.uid}",
                creator=f"users/{caller.username}",
                content=row.content,
                snippet=row.snippet,
                visibility=row.visibility,
                state=TRASHED,
                prior_state=row.state,
                pinned=bool(row.pinned),
                create_time=rfc3339(int(row.created_ts)),
                update_time=rfc3339(int(row.updated_ts)),
                trash_time=rfc3339(int(row.trashed_ts)),
                comment_count=int(row.comment_count),
                purge_time=rfc3339(purge) if purge is not None else msgspec.UNSET,
                parent=f"memos/{row.parent_uid}" if row.parent_uid else msgspec.UNSET,
            )
        )
    return ListTrashResponse(memos=out, next_page_token=token)


async def load_trashed(
    conn: AsyncConnection, uid: str, caller: Caller, mode: AccessMode
) -> RestoredRow:
    """A root of the caller's trash by uid, or 404 (the same answer for any other memo)."""
    row = (
        await conn.execute(
            sa.select(RESTORED).where(RESTORED.c.uid == uid, _own_roots(caller, mode))
        )
    ).first()
    if row is None:
        raise NotFound(f"memo {uid!r} not found in your trash")
    return row


async def undelete(conn: AsyncConnection, ctx: WriteContext, row: RestoredRow) -> None:
    """Put back exactly the group the DELETE trashed, each memo in its prior state.

    A restore is a write: the write rule applies to the memo as it would be
    restored. A comment trashed on its own cannot come back while its parent
    is in the trash (it would be reachable by id beside a hidden parent).
    """
    if not await may_write(conn, ctx.caller, row):
        raise PermissionDenied(f"memo {row.uid!r}: only a writer of the memo can restore it")
    if row.claim_token is not None:
        raise FailedPrecondition(f"memo {row.uid!r} is being purged: it cannot be restored")
    if row.parent_id is not None:
        parent_state = (
            await conn.execute(sa.select(memo.c.state).where(memo.c.id == row.parent_id))
        ).scalar_one_or_none()
        if parent_state not in ("NORMAL", "ARCHIVED"):
            raise FailedPrecondition(
                f"memo {row.uid!r} is a comment on a memo in the trash: restore that memo first"
            )
    group = (
        await conn.execute(
            sa.select(memo.c.id, memo.c.version, memo.c.content, memo_trash.c.prior_state)
            .join(memo_trash, memo_trash.c.memo_id == memo.c.id)
            .where(memo_trash.c.root_id == row.id, memo.c.state == TRASHED)
        )
    ).all()
    events = []
    for memo_id, version, content, prior_state in group:
        done = await conn.execute(
            memo.update()
            .where(memo.c.id == memo_id, memo.c.state == TRASHED, memo.c.version == version)
            .values(state=prior_state, version=version + 1, origin=ctx.caller.origin())
        )
        if done.rowcount != 1:
            raise FailedPrecondition(f"memo {row.uid!r} changed while being restored: retry")
        events.append(
            {
                "memo_id": memo_id,
                "kind": "UNTRASH",
                "version": version + 1,
                "prior_content": content,
                "prior": {"state": TRASHED},
            }
        )
    deleted = await conn.execute(
        memo_trash.delete().where(
            memo_trash.c.root_id == row.id, memo_trash.c.claim_token.is_(None)
        )
    )
    if deleted.rowcount != len(group):
        raise FailedPrecondition(f"memo {row.uid!r} is being purged: it cannot be restored")
    await _event(conn, ctx.caller.user_id, ctx.caller.origin(), ctx.now, events)


# --------------------------------------------------------------------------- purge


@dataclass(frozen=True, slots=True)
class StoredFile:
    """Bytes to remove once the purge has committed."""

    storage_type: str
    storage_key: str


async def purge_groups(
    conn: AsyncConnection,
    root_ids: Sequence[int],
    now: int,
    actor: Caller | None = None,
) -> tuple[int, list[StoredFile]]:
    """Delete the trashed groups rooted at ``root_ids`` (in the caller's transaction).

    Answers how many memos were deleted and the files to remove after commit.
    Comments trashed on their own under a purged memo go with it (their
    parent is gone for good). Each deleted memo gets its DELETE event, so its
    history ends there, as a hard delete's did. The attachments and then the
    memos are deleted with RETURNING, and only what this transaction deleted
    is reported and logged: of two concurrent purges of one group (PostgreSQL,
    READ COMMITTED), the second finds the rows gone and reports nothing.
    """
    if not root_ids:
        return 0, []
    members = sa.or_(
        memo.c.id.in_(sa.select(memo_trash.c.memo_id).where(memo_trash.c.root_id.in_(root_ids))),
        memo.c.parent_id.in_(root_ids),
    )
    ids = [
        int(i)
        for i in (
            await conn.execute(sa.select(memo.c.id).where(memo.c.state == TRASHED, members))
        ).scalars()
    ]
    if not ids:
        return 0, []
    files = [
        StoredFile(str(t), str(k))
        for t, k in (
            await conn.execute(
                attachment.delete()
                .where(attachment.c.memo_id.in_(ids))
                .returning(attachment.c.storage_type, attachment.c.storage_key)
            )
        ).all()
        if k is not None
    ]
    doomed = (
        await conn.execute(
            memo.delete().where(memo.c.id.in_(ids), memo.c.state == TRASHED).returning(*memo.c)
        )
    ).all()
    if doomed:
        credential = actor.origin() if actor is not None else {"kind": "retention"}
        await conn.execute(
            memo_event.insert(),
            [
                {
                    "memo_id": m.id,
                    "kind": "DELETE",
                    "actor_id": actor.user_id if actor is not None else m.creator_id,
                    "credential": credential,
                    "prior_content": m.content,
                    "prior": {k: getattr(m, k) for k in TRACKED if k != "content"},
                    "version": m.version + 1,
                    "created_ts": now,
                }
                for m in doomed
            ],
        )
    return len(doomed), files


async def purge_own(
    conn: AsyncConnection, caller: Caller, mode: AccessMode, now: int, uid: str | None
) -> tuple[int, list[StoredFile]]:
    """Purge one root of the caller's trash (``uid``) or all of it; claimed groups excepted."""
    if uid is not None:
        row = await load_trashed(conn, uid, caller, mode)
        if row.claim_token is not None:
            raise FailedPrecondition(f"memo {uid!r} is already being purged")
        roots = [int(row.id)]
    else:
        roots = [
            int(i)
            for i in (
                await conn.execute(
                    sa.select(RESTORED.c.id).where(
                        _own_roots(caller, mode), RESTORED.c.claim_token.is_(None)
                    )
                )
            ).scalars()
        ]
    return await purge_groups(conn, roots, now, caller)


async def remove_files(store: storage.AttachmentStore, files: Sequence[StoredFile]) -> None:
    """Remove purged bytes; one failure is logged and does not stop the rest."""
    for f in files:
        try:
            await storage.discard(store, f.storage_type, f.storage_key)
        except Exception:
            log.warning("trash.file_not_removed", storage_type=f.storage_type, key=f.storage_key)


@dataclass(frozen=True, slots=True)
class PurgeRun:
    groups: int
    memos: int
    files: int


async def claim_expired(
    engine: AsyncEngine, now: int, limit: int = PURGE_BATCH
) -> tuple[str, list[int]]:
    """Claim up to ``limit`` expired groups for this process; answers the token and roots.

    The claim is a conditional UPDATE: the outer WHERE repeats "unclaimed or
    lease passed", which PostgreSQL re-checks on a row another transaction
    has just claimed (so that row is skipped), and SQLite runs one writer at
    a time. A row is therefore claimed by exactly one process per lease.

    On PostgreSQL the candidates are picked ``FOR UPDATE SKIP LOCKED``: without
    it a second purger picked the *same* rows, waited for the first one's
    claim to commit, re-checked them, claimed none and (fewer than ``limit``)
    stopped, so one purger did all the work (bench/trash_purge.py: 110,000
    memos to 0). With it each claims the next free rows. SQLite renders no
    locking clause.
    """
    async with write_transaction(engine) as conn:
        settings = await load_trash_settings(conn)
        if settings.retention_days == 0:
            return "", []
        cutoff = now - settings.retention_days * DAY
        t = memo_trash.c
        free = sa.or_(t.claim_token.is_(None), t.claimed_ts < now - CLAIM_LEASE)
        expired = sa.and_(t.memo_id == t.root_id, t.trashed_ts <= cutoff, free)
        candidates = (
            sa.select(t.memo_id)
            .where(expired)
            .order_by(t.trashed_ts, t.memo_id)
            .limit(limit)
            .with_for_update(skip_locked=True)
        )
        token = secrets.token_hex(16)
        await conn.execute(
            memo_trash.update()
            .where(t.memo_id.in_(candidates.scalar_subquery()), expired)
            .values(claim_token=token, claimed_ts=now)
        )
        roots = (await conn.execute(sa.select(t.memo_id).where(t.claim_token == token))).scalars()
        return token, [int(r) for r in roots]


async def purge_expired(
    engine: AsyncEngine, store: storage.AttachmentStore, now: int, limit: int = PURGE_BATCH
) -> PurgeRun:
    """One round of the retention job: claim, remove the files, delete the rows.

    Files go before rows, so a crash in between leaves rows (claimed, lease
    running) whose files are already gone; the next claimant removes nothing
    more and deletes them. Nothing is ever left as a row-less file.
    """
    token, roots = await claim_expired(engine, now, limit)
    if not roots:
        return PurgeRun(0, 0, 0)
    async with read_transaction(engine) as conn:
        files = [
            StoredFile(str(t), str(k))
            for t, k in (
                await conn.execute(
                    sa.select(attachment.c.storage_type, attachment.c.storage_key)
                    .join(memo_trash, memo_trash.c.memo_id == attachment.c.memo_id)
                    .where(memo_trash.c.root_id.in_(roots), attachment.c.storage_key.is_not(None))
                )
            ).all()
        ]
    await remove_files(store, files)
    async with write_transaction(engine) as conn:
        mine = [
            int(r)
            for r in (
                await conn.execute(
                    sa.select(memo_trash.c.memo_id).where(
                        memo_trash.c.memo_id.in_(roots), memo_trash.c.claim_token == token
                    )
                )
            ).scalars()
        ]
        count, deleted_files = await purge_groups(conn, mine, now)
    # Comments trashed on their own under a purged memo went with it: their bytes now.
    late = [f for f in deleted_files if f not in set(files)]
    await remove_files(store, late)
    log.info("trash.purged", groups=len(mine), memos=count, files=len(files) + len(late))
    return PurgeRun(len(mine), count, len(files) + len(late))


async def purge_until_done(
    engine: AsyncEngine, store: storage.AttachmentStore, now: int, limit: int = PURGE_BATCH
) -> PurgeRun:
    """Rounds of :func:`purge_expired` until nothing expired is left unclaimed."""
    total = PurgeRun(0, 0, 0)
    while True:
        run = await purge_expired(engine, store, now, limit)
        total = PurgeRun(
            total.groups + run.groups, total.memos + run.memos, total.files + run.files
        )
        if run.groups < limit:
            return total


@contextlib.asynccontextmanager
async def retention_job(
    engine: AsyncEngine,
    store: storage.AttachmentStore,
    interval: float = PURGE_INTERVAL,
    lease_ms: int = 15_000,
) -> AsyncIterator[None]:
    """Run the retention job every ``interval`` seconds while the app lives, in
    the one process holding the ``trash-retention`` lease (app.jobs.lease).

    The first round waits one interval too: a process that starts and stops
    quickly (a CLI command, a test) never touches the trash.
    """
    import time

    from app.jobs.lease import leased

    async def loop() -> None:
        while True:
            await asyncio.sleep(interval)
            try:
                await purge_until_done(engine, store, int(time.time()))
            except Exception:
                log.warning("trash.purge_failed", exc_info=True)

    async with leased(engine, "trash-retention", loop, ttl_ms=lease_ms):
        yield
