"""The relations of some memos that a caller may see.

A relation and its snippets appear only when *both* ends pass the audience
predicate (checked in SQL on two aliases of ``memo``), so a relation can
never carry a hidden memo's name or snippet into a readable one.
"""

from __future__ import annotations

from collections import defaultdict

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.audience import AccessMode, audience_predicate
from app.access.caller import Caller
from app.db.schema import memo, memo_relation
from app.memos import schemas

# Module-level aliases: the audience predicate is memoised per table, so the
# same alias objects must be reused across requests.
SRC = memo.alias("src")
DST = memo.alias("dst")


async def visible_relations(
    conn: AsyncConnection, ids: list[int], caller: Caller | None, mode: AccessMode
) -> dict[int, list[schemas.Relation]]:
    """Relations touching the memos ``ids`` whose both ends the caller can read."""
    if not ids:
        return {}
    src, dst = SRC, DST
    query = (
        sa.select(
            memo_relation.c.memo_id,
            memo_relation.c.related_memo_id,
            memo_relation.c.type,
            src.c.uid.label("src_uid"),
            src.c.snippet.label("src_snippet"),
            dst.c.uid.label("dst_uid"),
            dst.c.snippet.label("dst_snippet"),
        )
        .join(src, src.c.id == memo_relation.c.memo_id)
        .join(dst, dst.c.id == memo_relation.c.related_memo_id)
        .where(
            sa.or_(memo_relation.c.memo_id.in_(ids), memo_relation.c.related_memo_id.in_(ids)),
            audience_predicate(caller, mode, src),
            audience_predicate(caller, mode, dst),
        )
        .order_by(memo_relation.c.memo_id, memo_relation.c.related_memo_id, memo_relation.c.type)
    )
    result: dict[int, list[schemas.Relation]] = defaultdict(list)
    wanted = set(ids)
    for r in await conn.execute(query):
        rel = schemas.Relation(
            memo=schemas.RelatedMemo(name=f"memos/{r.src_uid}", snippet=r.src_snippet),
            related_memo=schemas.RelatedMemo(name=f"memos/{r.dst_uid}", snippet=r.dst_snippet),
            type=r.type,
        )
        for end in {r.memo_id, r.related_memo_id} & wanted:
            result[end].append(rel)
    return result
