"""Where a restricted key's readable memos can be: a few narrow index ranges.

A restricted key usually reaches a sliver of the instance (a few spaces,
a subtree in each, maybe the holder's own notes). Walking the whole
timeline and testing the audience predicate on every row then reads
hundreds of rows per hit. :func:`reach_partition` instead names a handful of
disjoint conditions, one per declared space (``space_id = s`` and inside one
of the key's tree ceilings there) plus one for personal memos when the key
reaches them. The list statement walks each part newest-first on its own
index and merges the walks (``app.memos.listing``).

This is a plan, not a rule: every part is ANDed with the full audience
predicate, so a part can only narrow what the predicate admits, never widen
it. What the partition must get right is completeness: every memo the key
may read lies in exactly one part. That holds because the key's level at a
path is at most its ceiling there (``access.md`` section 5), so a placed memo
(SPACE or, since decision 0030, any other visibility) outside the declared
spaces or outside every ceiling of its space is never readable through the
key, and an unplaced memo is readable only under the key's ``personal`` reach
(``app.access.audience.personal_reach``).

Sessions and unrestricted tokens get no partition: their reach is the whole
audience, which the timeline walk already serves.
"""

from __future__ import annotations

import functools
from typing import Any

import sqlalchemy as sa
from sqlalchemy.sql.elements import ColumnElement

from app.access.audience import personal_reach
from app.access.caller import Caller, key_caller, restriction_key
from app.access.restriction import Restriction
from app.access.scope import key_ceilings, path_covers
from app.db.schema import memo, space

# Beyond this many declared spaces the merge costs more than it saves: the
# key's reach is no longer a sliver, and the timeline walk is the better plan.
MAX_PARTS = 16

__all__ = ["MAX_PARTS", "reach_partition"]


def _space_id(uid: str) -> ColumnElement[Any]:
    return sa.select(space.c.id).where(space.c.uid == uid).scalar_subquery()


def reach_partition(caller: Caller | None) -> tuple[ColumnElement[bool], ...] | None:
    """Disjoint conditions over ``memo`` that together cover what ``caller`` may read.

    None means "no useful partition": the caller is not a restricted key,
    or its reach is too wide to merge. An empty tuple means the key reaches
    nothing (the audience predicate is false for it anyway).
    """
    key = restriction_key(caller)
    if caller is None or key is None:
        return None
    # Built once per key (like the audience predicate): expressions are
    # immutable, and building them costs more than the walk they save.
    return _partition(caller.user_id, key)


@functools.lru_cache(maxsize=1024)
def _partition(user_id: int, key: Restriction) -> tuple[ColumnElement[bool], ...] | None:
    caller = key_caller(user_id, key)
    by_space: dict[str, list[str]] = {}
    for ceiling in key_ceilings(key):
        by_space.setdefault(ceiling.space_uid, []).append(ceiling.path)
    if len(by_space) > MAX_PARTS:
        return None
    parts: list[ColumnElement[bool]] = []
    for uid, paths in by_space.items():
        inside: list[ColumnElement[bool]] = [memo.c.space_id == _space_id(uid)]
        if "" not in paths:  # a root ceiling covers the whole space
            tree = memo.c.tree
            inside.append(sa.or_(*(path_covers(sa.literal(p, sa.String), tree) for p in paths)))
        parts.append(sa.and_(*inside))
    reach = personal_reach(caller)
    if reach == "AUDIENCE":
        parts.append(memo.c.space_id.is_(None))
    elif reach == "OWN":
        parts.append(sa.and_(memo.c.space_id.is_(None), memo.c.creator_id == caller.user_id))
    return tuple(parts)
