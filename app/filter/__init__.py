"""CEL filters (Memos 0.30 surface) compiled to SQLAlchemy Core expressions.

Pipeline, all pure, behind one step, ``compile_filter``
(``app.filter.compiled``): ``parse`` (cel-python's lark parser, after cheap
length and depth checks) -> ``lower`` (type check against the memo or
attachment schema, constant folding, rejection with offsets) -> ``ir``
(frozen dataclasses, cached by text). The ``CompiledFilter`` it returns
names its needles and renders (``render``) a two-valued SQL predicate for a
dialect, with the request clock applied last so the cache never holds it.

One input comes from outside: ``dense``, the needles (content substrings
with a trigram prefilter, tag memberships) that the caller has measured to
be common, which render per row rather than as an IN-list
(``app.filter.selectivity``; the probe itself runs at the edge, in
``app.filter.probe``, the package's only I/O). It changes the plan, never
the rows.

Every rejection is a ``FilterError`` (a ``ValueError``) with a message and a
0-based offset; no input raises anything else. Semantic choices (case
folding, ``size(tags)`` counting ancestors, ...) are recorded in
docs/decisions/0002-filter-semantics.md.
"""

from __future__ import annotations

from sqlalchemy.sql.elements import ColumnElement

from app.filter.compiled import CompiledFilter, compile_filter, lower_filter
from app.filter.ddl import content_index_ddl, content_index_drop_ddl
from app.filter.errors import FilterError
from app.filter.parse import MAX_DEPTH, MAX_LENGTH
from app.filter.render import user_id_subquery
from app.filter.selectivity import Needle
from app.fold import fold

__all__ = [
    "MAX_DEPTH",
    "MAX_LENGTH",
    "CompiledFilter",
    "FilterError",
    "Needle",
    "compile_attachment_filter",
    "compile_filter",
    "compile_memo_filter",
    "content_index_ddl",
    "content_index_drop_ddl",
    "fold",
    "lower_filter",
    "memo_filter_needles",
    "user_id_subquery",
    "validate_memo_filter",
]

# The functions below are text-in shorthands over ``compile_filter`` for tests,
# benches and one-shot callers; a list request keeps its ``CompiledFilter``.


def compile_memo_filter(
    text: str,
    *,
    now: int,
    dialect_name: str,
    dense: frozenset[Needle] = frozenset(),
) -> ColumnElement[bool]:
    """A predicate over ``memo`` to AND into a list query.

    It may hold subqueries on ``memo_tag``, ``user_account`` and, on SQLite,
    the ``memo_trgm`` table from migration 0002. Needles in ``dense`` (from
    ``memo_filter_needles``) render per row instead of as an IN-list.
    """
    return compile_filter(text, "memo").render(dialect_name=dialect_name, now=now, dense=dense)


def memo_filter_needles(text: str) -> tuple[Needle, ...]:
    """The needles of a memo filter whose rendering a selectivity probe may choose
    (``FilterError`` if ``text`` is invalid)."""
    return compile_filter(text, "memo").needles


def compile_attachment_filter(text: str, *, now: int, dialect_name: str) -> ColumnElement[bool]:
    """A predicate over ``attachment`` (``memo_id`` compares through ``memo.uid``)."""
    return compile_filter(text, "attachment").render(dialect_name=dialect_name, now=now)


def validate_memo_filter(text: str) -> None:
    """Raise ``FilterError`` if ``text`` is not a valid memo filter (used when saving views)."""
    compile_filter(text, "memo")
