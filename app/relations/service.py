"""Replacing a memo's REFERENCE relations.

Only a writer of the memo may set them, links to memos the caller cannot
read stay as they are unless the caller is the memo's author (the write
rule's relate side, :func:`app.access.writes.may_unlink`), and every
related memo named must be readable by the caller: otherwise a caller could pin a hidden memo's name
onto its own memo and probe its existence, or make a reader of its memo
believe in a link it cannot follow. COMMENT relations belong to comments and
are never set here.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.admission import readable as readable_by
from app.access.audience import AccessMode
from app.access.caller import Caller
from app.access.writes import may_unlink
from app.db.schema import memo, memo_relation
from app.errors import InvalidArgument
from app.memos.lookup import memo_uid, require_writer
from app.memos.service import load_for_read
from app.relations.schemas import RelationIn

MAX_RELATIONS = 1000


async def _hidden_links_kept(
    conn: AsyncConnection, caller: Caller, mode: AccessMode, row: Any
) -> set[int]:
    """The memo's REFERENCE targets this caller may not remove (the write rule's relate side).

    A link to a memo the caller cannot read is not the caller's to see, so
    not its to delete either (:func:`app.access.writes.may_unlink`); it stays
    whatever the new list says, and nothing in the answer tells it exists.
    """
    linked = set(
        (
            await conn.execute(
                sa.select(memo_relation.c.related_memo_id).where(
                    memo_relation.c.memo_id == row.id, memo_relation.c.type == "REFERENCE"
                )
            )
        ).scalars()
    )
    if not linked:
        return set()
    readable = set(
        (
            await conn.execute(
                sa.select(memo.c.id).where(memo.c.id.in_(linked), readable_by(caller, mode))
            )
        ).scalars()
    )
    return {t for t in linked if not may_unlink(caller, row.creator_id, t in readable)}


async def set_references(
    conn: AsyncConnection,
    caller: Caller,
    mode: AccessMode,
    row: Any,
    relations: list[RelationIn],
) -> None:
    await require_writer(conn, caller, row, "set its relations")
    if len(relations) > MAX_RELATIONS:
        raise InvalidArgument(f"relations: at most {MAX_RELATIONS} relations")
    targets: dict[int, None] = {}
    for i, rel in enumerate(relations):
        kind = (rel.type or "REFERENCE").upper()
        if kind in ("TYPE_UNSPECIFIED", "REFERENCE"):
            pass
        elif kind == "COMMENT":
            raise InvalidArgument(
                f"relations[{i}].type: COMMENT relations are made by creating a comment"
            )
        else:
            raise InvalidArgument(f"relations[{i}].type: {rel.type!r} is not REFERENCE")
        if rel.related_memo is None or not rel.related_memo.name:
            raise InvalidArgument(f"relations[{i}].relatedMemo.name: required")
        uid = memo_uid(rel.related_memo.name, field=f"relations[{i}].relatedMemo.name")
        if uid == row.uid:
            raise InvalidArgument(f"relations[{i}]: a memo cannot reference itself")
        target = await load_for_read(conn, uid, caller, mode)
        targets[target.id] = None
    kept = await _hidden_links_kept(conn, caller, mode, row)
    await conn.execute(
        memo_relation.delete().where(
            memo_relation.c.memo_id == row.id,
            memo_relation.c.type == "REFERENCE",
            memo_relation.c.related_memo_id.not_in(kept),
        )
    )
    targets = {t: None for t in targets if t not in kept}
    if targets:
        await conn.execute(
            sa.insert(memo_relation),
            [{"memo_id": row.id, "related_memo_id": t, "type": "REFERENCE"} for t in targets],
        )
