"""The relations of some memos a caller has read, with the other ends it may see.

A relation appears only when its other end (the memo at the far side from
the page) passes the read rule, checked in SQL, so a relation can never carry
a hidden memo's name or snippet into a readable one. The page's own end needs
no second check: it was admitted by the statement that read the page, and
its row here is kept only if it still has the version that statement read
(``app.access.admission.pinned``), so a memo rewritten since (say, made
PRIVATE with new references) contributes nothing from its new version.

One statement, driven from the page's ids: the page's memo rows by primary
key, then ``memo_relation`` by its primary key (outgoing) or
``ix_memo_relation_related`` (incoming), in that order on SQLite too
(``app.db.joins.ordered_join``), then the other end by primary key in a
correlated subquery per relation row (both planners evaluate it per row), so
no statistics can make it walk ``memo``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import BindParameter

from app.access.admission import pinned as is_pinned
from app.access.admission import readable
from app.access.audience import AccessMode
from app.access.caller import Caller
from app.db.joins import ordered_join
from app.db.schema import memo, memo_relation
from app.memos import schemas

# Module-level aliases: the read rule's predicate is memoised per table, so the
# same alias objects must be reused across requests.
PAGE = memo.alias("page_memo")
OTHER = memo.alias("other_memo")


def relation_sides(
    ids: Sequence[int] | BindParameter[Any], caller: Caller | None, mode: AccessMode
) -> list[sa.Select[Any]]:
    """The outgoing and the incoming side of :func:`relations_statement`, each one
    SELECT (``app.memos.present`` puts them in the page's one related statement)."""
    r = memo_relation

    def side(page_end: Any, other_end: Any, outgoing: bool) -> sa.Select[Any]:
        def other(column: Any) -> Any:
            # The other end by primary key, per relation row, under the read rule:
            # a correlated subquery, so neither planner can drive the other end
            # from ``memo`` (PostgreSQL without statistics chose a walk of
            # ``ix_memo_visibility_timeline`` hash-joined to the relations).
            return (
                sa.select(column)
                .where(OTHER.c.id == other_end, readable(caller, mode, OTHER))
                .scalar_subquery()
            )

        other_uid, other_snippet = other(OTHER.c.uid), other(OTHER.c.snippet)
        page_uid, page_snippet = PAGE.c.uid, PAGE.c.snippet
        src = (page_uid, page_snippet) if outgoing else (other_uid, other_snippet)
        dst = (other_uid, other_snippet) if outgoing else (page_uid, page_snippet)
        stmt = (
            sa.select(
                PAGE.c.id.label("page_id"),
                PAGE.c.version.label("page_version"),
                r.c.memo_id,
                r.c.related_memo_id,
                r.c.type,
                src[0].label("src_uid"),
                src[1].label("src_snippet"),
                dst[0].label("dst_uid"),
                dst[1].label("dst_snippet"),
            )
            .select_from(ordered_join(PAGE, r, page_end == PAGE.c.id))
            .where(PAGE.c.id.in_(ids), other_uid.is_not(None))
        )
        if not outgoing:  # a memo related to itself is listed once, as outgoing
            stmt = stmt.where(r.c.memo_id != r.c.related_memo_id)
        return stmt

    return [
        side(r.c.memo_id, r.c.related_memo_id, True),
        side(r.c.related_memo_id, r.c.memo_id, False),
    ]


def relations_statement(
    ids: list[int], caller: Caller | None, mode: AccessMode
) -> sa.CompoundSelect[Any]:
    """Outgoing and incoming relations of the memos ``ids`` whose other end the caller can read."""
    return sa.union_all(*relation_sides(ids, caller, mode))


def relation_of(row: Any) -> schemas.Relation:
    """One row of :func:`relations_statement` (or the same columns) as a resource."""
    return schemas.Relation(
        memo=schemas.RelatedMemo(name=f"memos/{row.src_uid}", snippet=row.src_snippet),
        related_memo=schemas.RelatedMemo(name=f"memos/{row.dst_uid}", snippet=row.dst_snippet),
        type=row.type,
    )


async def visible_relations(
    conn: AsyncConnection,
    pinned: Mapping[int, int],
    caller: Caller | None,
    mode: AccessMode,
) -> dict[int, list[schemas.Relation]]:
    """Relations of the memos the caller has read (``pinned``: id → version read)."""
    if not pinned:
        return {}
    rows = [
        row
        for row in await conn.execute(relations_statement(list(pinned), caller, mode))
        if is_pinned(pinned, row.page_id, row.page_version)
    ]
    rows.sort(key=lambda row: (row.memo_id, row.related_memo_id, row.type))
    result: dict[int, list[schemas.Relation]] = defaultdict(list)
    for row in rows:
        result[row.page_id].append(relation_of(row))
    return result
