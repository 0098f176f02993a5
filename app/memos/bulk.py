"""Creating many prepared memos in a handful of statements (the importers' path).

:func:`~app.memos.service.insert_memo` writes one memo in four or five
statements (the row, its tags, its rendering, its CREATE event, the outbox
check). An importer carrying 100,000 memos paid that per memo: half a million
round trips to the database (to aiosqlite's thread, or to PostgreSQL), most of
its run. :func:`insert_memos` writes the same rows for a whole page of
prepared memos with one multi-row statement per table, so a page costs the
same handful of round trips as one memo did.

The rows are exactly :func:`insert_memo`'s: the ``memo`` row as prepared, its
``memo_tag`` rows in the content's order, its ``memo_html`` rendering from the
same parse, one CREATE event (version 1, the writer's credential, the write's
time), and an outbox entry for each memo whose creator has webhooks (looked up
once per creator, not per memo). Triggers (full-text rows, the embedding queue)
fire per row as they do for a single insert. Everything runs in the caller's
transaction: a failure anywhere leaves nothing of the page.

Ids are matched to memos by uid (``RETURNING id, uid``), never by the order
rows come back in, which neither SQLite nor PostgreSQL promises.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from app.db.schema import memo, memo_event, memo_html, memo_tag, webhook
from app.errors import AlreadyExists, InvalidArgument
from app.memos.html_cache import content_hash
from app.memos.safe_html import RENDERER_VERSION
from app.memos.service import PreparedMemo, WriteContext, prerender
from app.webhooks.outbox import Activity, emit

__all__ = ["NewMemo", "insert_memos", "prerender_all"]

# Columns a prepared memo may leave out (a memo without a location): filled
# with their column default so that every row of the statement has the same keys.
_OPTIONAL = ("location_placeholder", "location_latitude", "location_longitude")


@dataclass(frozen=True, slots=True)
class NewMemo:
    """One memo of a batch: who writes it (its history's actor and credential) and what."""

    ctx: WriteContext
    prepared: PreparedMemo


async def prerender_all(contents: Iterable[str], limit: int) -> None:
    """Parse a page's contents at once, before its memos are prepared one by one.

    Each memo's :func:`~app.memos.service.prepare_memo` then finds its parse
    done (:func:`~app.memos.service.prerender`'s cache, which holds a page)
    instead of waiting for a worker process in turn: the workers parse in
    parallel while the importer waits once. A content that fails (over the
    limit) is left for its own ``prepare_memo`` to refuse, with its own error.
    """
    await asyncio.gather(*(prerender(c, limit) for c in set(contents)), return_exceptions=True)


async def _creators_with_hooks(conn: AsyncConnection, creators: set[int]) -> set[int]:
    if not creators:
        return set()
    found = await conn.execute(
        sa.select(webhook.c.owner_id).where(webhook.c.owner_id.in_(sorted(creators))).distinct()
    )
    return {int(owner) for owner in found.scalars()}


async def insert_memos(conn: AsyncConnection, batch: Sequence[NewMemo]) -> list[int]:
    """Insert ``batch`` as :func:`insert_memo` would one by one; the new ids, in batch order.

    A uid taken (by another row, or twice in the batch) is a 409, and the
    caller's transaction must then be rolled back: the importers check their
    uids first, in the same transaction, so this is a concurrent writer's doing.
    """
    if not batch:
        return []
    uids = [item.prepared.uid for item in batch]
    if len(set(uids)) != len(uids):
        raise InvalidArgument("a batch of new memos names one id twice")
    rows = []
    for item in batch:
        values = dict(item.prepared.values)
        for column in _OPTIONAL:
            values.setdefault(column, None)
        rows.append(values)
    try:
        returned = await conn.execute(sa.insert(memo).returning(memo.c.id, memo.c.uid), rows)
        ids_by_uid = {str(uid): int(memo_id) for memo_id, uid in returned}
    except sa.exc.IntegrityError as exc:
        raise AlreadyExists("a memo id of this import was taken meanwhile: run it again") from exc
    ids = [ids_by_uid[uid] for uid in uids]
    tags = [
        {"memo_id": memo_id, "tag": tag, "position": i}
        for memo_id, item in zip(ids, batch, strict=True)
        for i, tag in enumerate(item.prepared.tags)
    ]
    if tags:
        await conn.execute(memo_tag.insert(), tags)
    await conn.execute(
        memo_html.insert(),
        [
            {
                "memo_id": memo_id,
                "renderer": RENDERER_VERSION,
                "content_hash": content_hash(str(item.prepared.values["content"])),
                "html": item.prepared.html,
            }
            for memo_id, item in zip(ids, batch, strict=True)
        ],
    )
    await conn.execute(
        memo_event.insert(),
        [
            {
                "memo_id": memo_id,
                "kind": "CREATE",
                "actor_id": item.ctx.caller.user_id,
                "credential": item.ctx.caller.origin(),
                "prior_content": None,
                "prior": None,
                "version": 1,
                "created_ts": item.ctx.now,
            }
            for memo_id, item in zip(ids, batch, strict=True)
        ],
    )
    creators = {int(item.prepared.values["creator_id"]) for item in batch}
    hooked = await _creators_with_hooks(conn, creators)
    for memo_id, item in zip(ids, batch, strict=True):
        owner = int(item.prepared.values["creator_id"])
        if owner in hooked:
            await emit(conn, item.ctx, memo_id, Activity.CREATED, owner_id=owner, has_hooks=True)
    return ids
