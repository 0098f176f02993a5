"""CEL filters (Memos 0.30 surface) compiled to SQLAlchemy Core expressions.

Pipeline, all pure: ``parse`` (cel-python's lark parser, after cheap length
and depth checks) -> ``lower`` (type check against the memo or attachment
schema, constant folding, rejection with offsets) -> ``ir`` (frozen
dataclasses, cached by text) -> ``render`` (a two-valued SQL predicate for the
dialect, with the request clock applied last so the cache never holds it).

One input comes from outside: ``dense``, the needles (content substrings
with a trigram prefilter, tag memberships) that the caller has measured to
be common, which render per row rather than as an IN-list
(``app.filter.selectivity``; the probe itself runs at the edge, in
``app.memos.query_filter``). It changes the plan, never the rows.

Every rejection is a ``FilterError`` (a ``ValueError``) with a message and a
0-based offset; no input raises anything else. Semantic choices (case
folding, ``size(tags)`` counting ancestors, ...) are recorded in
docs/decisions/0002-filter-semantics.md.
"""

from __future__ import annotations

from functools import lru_cache

from sqlalchemy.sql.elements import ColumnElement

from app.filter.ddl import content_index_ddl, content_index_drop_ddl
from app.filter.errors import FilterError
from app.fold import fold
from app.filter.ir import Pred
from app.filter.lower import Lowerer, Target
from app.filter.parse import MAX_DEPTH, MAX_LENGTH, parse
from app.filter.render import Renderer, user_id_subquery
from app.filter.selectivity import Needle, needles

__all__ = [
    "MAX_DEPTH",
    "MAX_LENGTH",
    "FilterError",
    "Needle",
    "compile_attachment_filter",
    "compile_memo_filter",
    "content_index_ddl",
    "content_index_drop_ddl",
    "fold",
    "lower_filter",
    "memo_filter_needles",
    "user_id_subquery",
    "validate_memo_filter",
]


@lru_cache(maxsize=1024)
def _lowered(text: str, target: Target) -> Pred | tuple[str, int]:
    # Errors are cached too (as plain data, not exception objects), so a client
    # retrying a hostile filter costs a dict lookup.
    try:
        return Lowerer(text, target).lower(parse(text))
    except FilterError as exc:
        return (exc.message, exc.offset)
    except RecursionError:
        return ("filter too complex", 0)
    except Exception as exc:  # the contract: no input may cause anything but a 400
        return (f"invalid filter ({type(exc).__name__})", 0)


def lower_filter(text: str, target: Target = "memo") -> Pred:
    """The cached IR for ``text``, or ``FilterError``."""
    if not isinstance(text, str):
        raise FilterError("filter must be a string", 0)
    result = _lowered(text, target)
    if isinstance(result, tuple):
        raise FilterError(*result)
    return result


def _render(
    text: str,
    target: Target,
    now: int,
    dialect_name: str,
    dense: frozenset[Needle] = frozenset(),
) -> ColumnElement[bool]:
    pred = lower_filter(text, target)
    renderer = Renderer(target=target, dialect_name=dialect_name, now=int(now), dense=dense)
    return renderer.render(pred)


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
    return _render(text, "memo", now, dialect_name, dense)


def memo_filter_needles(text: str) -> tuple[Needle, ...]:
    """The needles of a memo filter whose rendering a selectivity probe may choose
    (``FilterError`` if ``text`` is invalid)."""
    return needles(lower_filter(text, "memo"), "memo")


def compile_attachment_filter(text: str, *, now: int, dialect_name: str) -> ColumnElement[bool]:
    """A predicate over ``attachment`` (``memo_id`` compares through ``memo.uid``)."""
    return _render(text, "attachment", now, dialect_name)


def validate_memo_filter(text: str) -> None:
    """Raise ``FilterError`` if ``text`` is not a valid memo filter (used when saving views)."""
    lower_filter(text, "memo")
