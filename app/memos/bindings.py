"""Attachments and relations named in a CreateMemo / UpdateMemo body (Memos 0.31).

Memos binds ``memo.attachments`` and ``memo.relations`` on create, and on
update when the mask names ``attachments`` or ``relations``. Daybook does the
same through the very functions behind ``SetMemoAttachments`` and
``SetMemoRelations``, so the write rule (may the caller change this memo) and
the attachment-ownership rule (only one's own attachments, moved from another
memo only if that memo is writable too) are the ones those endpoints enforce.
Everything runs in the request's transaction: a refused binding rolls the
memo write back with it, so a create never half-succeeds.

As Memos does, relations sent back in their output shape are tolerated:
COMMENT relations (made by creating a comment), a memo's reference to
itself, and relations in which this memo is the *related* one are skipped.
"""

from __future__ import annotations

import msgspec
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.audience import AccessMode
from app.access.caller import Caller
from app.attachments.service import set_memo_attachments
from app.memos.rows import MemoRow
from app.memos.schemas import MemoIn, MemoRelationIn
from app.relations.schemas import MemoRefIn, RelationIn
from app.relations.service import set_references


def _own_relations(row: MemoRow, relations: list[MemoRelationIn]) -> list[RelationIn]:
    name = f"memos/{row.uid}"
    kept = []
    for rel in relations:
        if (rel.type or "").upper() == "COMMENT":
            continue
        if rel.memo is not None and rel.memo.name and rel.memo.name not in (name, row.uid):
            continue  # an incoming relation: this memo is its related memo
        related = rel.related_memo.name if rel.related_memo is not None else ""
        if related in (name, row.uid):
            continue
        kept.append(
            RelationIn(
                related_memo=MemoRefIn(name=related) if rel.related_memo is not None else None,
                type=rel.type,
            )
        )
    return kept


async def bind(
    conn: AsyncConnection,
    caller: Caller,
    mode: AccessMode,
    row: MemoRow,
    data: MemoIn,
    paths: set[str] | None = None,
) -> None:
    """Bind what ``data`` names (on update: only what ``paths`` names)."""
    attachments = data.attachments
    if not isinstance(attachments, msgspec.UnsetType) and (paths is None or "attachments" in paths):
        await set_memo_attachments(conn, caller, mode, row, [a.name for a in attachments])
    elif paths is not None and "attachments" in paths:
        await set_memo_attachments(conn, caller, mode, row, [])
    relations = data.relations
    if not isinstance(relations, msgspec.UnsetType) and (paths is None or "relations" in paths):
        await set_references(conn, caller, mode, row, _own_relations(row, relations))
    elif paths is not None and "relations" in paths:
        await set_references(conn, caller, mode, row, [])
