"""The outbox: events enqueued in the memo write's own transaction.

:func:`emit` is the one call the write paths make. It runs on the write's
connection, so the outbox row commits with the memo row or not at all: a
rolled-back write leaves no event, and a committed one always has its event
(a crash after the commit only delays it; the worker finds it in the table).

Who is told, as in Memos: the memo's creator's webhooks, for
``memos.memo.created|updated|deleted``; the parent's creator's webhooks, for
``memos.memo.comment.created``. An event whose memo the webhook's owner cannot
read at write time is not enqueued (Memos sends a PRIVATE comment to the
parent's owner; Daybook does not); delivery asks again (:mod:`.delivery`).
The memo is rendered into the row as the owner reads it at write time (the
payload is the memo as of the event, as in Memos). Writes by a user without
webhooks pay one indexed lookup.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import asdict
from enum import StrEnum
from typing import Any

import msgspec
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from app.db.schema import webhook, webhook_event
from app.webhooks.audience import facts_of, may_read, memo_row, owner_caller
from app.webhooks.payload import go_memo


async def _hook_ids(conn: AsyncConnection, owner_id: int) -> list[int]:
    found = await conn.execute(sa.select(webhook.c.id).where(webhook.c.owner_id == owner_id))
    return [int(h) for h in found.scalars()]


class Activity(StrEnum):
    CREATED = "memos.memo.created"
    UPDATED = "memos.memo.updated"
    DELETED = "memos.memo.deleted"
    COMMENT_CREATED = "memos.memo.comment.created"


def now_ms() -> int:
    return int(time.time() * 1000)


def new_msg_id() -> str:
    return "msg_" + secrets.token_hex(16)


def _recorded(row: Any) -> dict[str, Any]:
    facts = asdict(facts_of(row))
    facts.pop("creator_state")  # looked up again at delivery
    return facts


async def emit(
    conn: AsyncConnection,
    ctx: Any,
    memo_id: int,
    activity: Activity,
    *,
    owner_id: int | None = None,
    has_hooks: bool | None = None,
) -> None:
    """Enqueue ``activity`` on ``memo_id`` for the webhooks that should hear of it.

    ``ctx`` is the write's :class:`~app.memos.service.WriteContext` (its access
    mode decides PUBLIC reads). Call it before a delete removes the row.
    ``owner_id``, when the caller knows it, is whose webhooks hear of it (the
    memo's creator; the parent's creator for a comment): then a write by a user
    without webhooks costs that one lookup, under the write lock, and nothing
    else (docs/decisions/0028); ``has_hooks`` is whether that owner has any, when
    the write's own statement already said so (``RETURNING EXISTS (...)``, in
    the write's transaction): then it costs nothing.
    """
    if has_hooks is False and owner_id is not None:
        return
    if owner_id is not None and has_hooks is None and not await _hook_ids(conn, owner_id):
        return
    row = await memo_row(conn, memo_id)
    if row is None:
        return
    parent = None
    target = row.creator_id
    if activity is Activity.COMMENT_CREATED:
        if row.parent_id is None:
            return
        parent = await memo_row(conn, row.parent_id)
        if parent is None:
            return
        target = parent.creator_id
    hooks = await _hook_ids(conn, target)
    if not hooks:
        return
    owner = await owner_caller(conn, target)
    mode = ctx.access.access_mode
    if owner is None or not await may_read(conn, owner, facts_of(row), mode):
        return
    if parent is not None and not await may_read(conn, owner, facts_of(parent), mode):
        return
    # The memo as its owner reads it now, with the facts the read rule looks at:
    # the event is delivered as of this write (Memos' payload), if still readable.
    from app.memos.present import present_one

    shown = await present_one(conn, row, owner, mode)
    facts = _recorded(row)
    snapshot = {
        "memo": go_memo(shown),
        "creator": shown.creator,
        "facts": facts,
        "parent_facts": _recorded(parent) if parent is not None else None,
        "name": shown.name,
    }
    stamp = now_ms()
    await conn.execute(
        webhook_event.insert(),
        [
            {
                "msg_id": new_msg_id(),
                "webhook_id": hook,
                "activity": activity.value,
                "memo_id": memo_id,
                "parent_id": parent.id if parent is not None else None,
                "snapshot": msgspec.to_builtins(snapshot),
                "state": "PENDING",
                "attempts": 0,
                "next_attempt_ms": stamp,
                "claimed_until_ms": 0,
                "created_ms": stamp,
            }
            for hook in hooks
        ],
    )
