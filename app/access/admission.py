"""Admission: the one way a read asks for the memos its reader may see.

Every read path (the memo list, comments, search, user stats, feeds, export)
asks here, with an :class:`Admission` (who reads, which memos: top-level,
the comments of one memo or both, in which state, narrowed by a compiled
filter), and gets back SQL conditions over ``memo`` that it puts in the WHERE
clause of its own statement, before any LIMIT. So hidden memos never fill,
count towards or shift a page, and the rule around the audience predicate
(top-level or comments, state, the archive being a personal view, the filter
only narrowing) is written once instead of once per path.

The other end of something a readable memo points at (a relation's target, a
comment's parent, the memo holding an attachment) is checked with
:func:`readable`, the audience alone.

This module is a thin layer over :func:`app.access.audience.audience_predicate`
and the only module besides ``audience`` that calls it
(``tests/access/test_admission.py`` fails on any other caller).

Rows a read has admitted carry their ``version``: related rows (tags,
reactions, attachments, relations) are loaded for the page's ids and kept
only where the memo row they join still has the version the page read
(:func:`pinned`). Inside the request's single snapshot that always holds;
without one (a PostgreSQL READ COMMITTED statement per statement), a memo
rewritten in between loses its related rows rather than showing the new
version's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import sqlalchemy as sa
from sqlalchemy.sql import visitors
from sqlalchemy.sql.elements import ColumnElement

from app.access.audience import AccessMode, audience_predicate, place_shown
from app.access.caller import Caller
from app.db.joins import unindexed
from app.db.schema import memo

__all__ = ["Admission", "Kind", "admitted", "conditions", "pinned", "readable"]


class Kind(StrEnum):
    """Which memos a read ranges over."""

    TOP_LEVEL = "TOP_LEVEL"  # memos that are not comments (list, search, stats, feeds)
    COMMENTS = "COMMENTS"  # the comments of one memo (``Admission.parent_id``)
    ANY = "ANY"  # memos and comments alike (export)


@dataclass(frozen=True, slots=True)
class Admission:
    """What one read asks for. ``state`` None: every state the read rule admits
    (NORMAL, and the reader's own ARCHIVED memos); a filter and ``creator_id``
    can only narrow."""

    reader: Caller | None
    mode: AccessMode
    kind: Kind = Kind.TOP_LEVEL
    state: str | None = "NORMAL"
    parent_id: int | None = None  # Kind.COMMENTS: whose comments
    creator_id: int | None = None  # only this creator's memos (stats, export)
    filter: ColumnElement[bool] | None = None  # a compiled CEL filter or another narrowing

    def __post_init__(self) -> None:
        if (self.kind is Kind.COMMENTS) != (self.parent_id is not None):
            raise ValueError("parent_id is given exactly for Kind.COMMENTS")


def conditions(a: Admission, table: sa.FromClause = memo) -> tuple[ColumnElement[bool], ...]:
    """The admission as WHERE conditions over ``table`` (``memo`` or an alias).

    A filter is compiled against ``memo`` itself, so it is refused with an alias.
    """
    m = table.c
    out: list[ColumnElement[bool]] = []
    if a.kind is Kind.TOP_LEVEL:
        out.append(m.parent_id.is_(None))
    elif a.kind is Kind.COMMENTS:
        out.append(m.parent_id == a.parent_id)
    if a.state is not None:
        # One memo's comments: ix_memo_parent drives, never a timeline (state=?) walk.
        state = unindexed(m.state) if a.kind is Kind.COMMENTS else m.state
        out.append(state == a.state)
    out.append(audience_predicate(a.reader, a.mode, table))
    if a.state == "ARCHIVED":
        # The archive is a personal view: only the reader's own archived memos.
        out.append(m.creator_id == (a.reader.user_id if a.reader else -1))
    if a.creator_id is not None:
        out.append(m.creator_id == a.creator_id)
    if a.filter is not None:
        if table is not memo:
            raise ValueError("a compiled filter applies to the memo table, not an alias")
        out.append(_placed_as_shown(a.filter, a.reader).self_group())
    return tuple(out)


def _placed_as_shown(f: ColumnElement[bool], reader: Caller | None) -> ColumnElement[bool]:
    """The filter, with ``space`` and ``tree`` as the reader sees them (decision 0030).

    A reader who cannot see where a readable memo lives (a PUBLIC memo placed
    in a space it has no grant in) sees it unplaced, so a filter on ``space``
    or ``tree`` treats it as unplaced too, instead of answering questions
    about its place one by one (``tree.startsWith("h")``).
    """
    placed = (memo.c.space_id, memo.c.tree)
    if not any(any(e is c for c in placed) for e in visitors.iterate(f)):
        return f
    shown = place_shown(reader)

    def replace(element: Any, **kw: Any) -> Any:
        for column in placed:
            if element is column:
                return sa.case((shown, column), else_=sa.null())
        return None

    return visitors.replacement_traverse(f, {}, replace)


def admitted(a: Admission, table: sa.FromClause = memo) -> ColumnElement[bool]:
    """:func:`conditions` as one boolean."""
    return sa.and_(*conditions(a, table))


def readable(
    reader: Caller | None, mode: AccessMode, table: sa.FromClause = memo
) -> ColumnElement[bool]:
    """Memos of ``table`` the reader may read at all: the other end of a relation,
    a comment's parent, the memo an attachment is bound to."""
    return audience_predicate(reader, mode, table)


def pinned(rows: Mapping[int, int], memo_id: int, version: int) -> bool:
    """Whether a related row joined to memo ``memo_id`` at ``version`` belongs to
    the page, whose memo rows (id → version) are ``rows``."""
    return rows.get(memo_id) == version
