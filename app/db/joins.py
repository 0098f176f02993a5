"""A join whose order the SQLite planner must keep.

Without ``sqlite_stat1`` (a fresh install) SQLite guesses that an equality on
the first column of any index returns about ten rows, so a join of a page's
related rows with ``memo`` under the audience predicate can be driven from
``memo`` through ``ix_memo_*_timeline (state=?)``: a walk over every memo,
for what should be a few primary-key lookups (issue 15). SQLite keeps the
textual order of a ``CROSS JOIN`` (its documented planner override), so
:func:`ordered_join` renders ``CROSS JOIN ... ON`` there. PostgreSQL has no
such guess to fear and gets a plain ``JOIN``.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.selectable import Alias, Join

__all__ = ["by_key", "ordered_join", "unindexed"]


class OrderedJoin(Join):
    """An inner join that SQLite evaluates left to right."""

    inherit_cache = True


def ordered_join(
    left: sa.FromClause, right: sa.FromClause, onclause: ColumnElement[bool]
) -> OrderedJoin:
    """``left`` drives ``right``: the outer loop is ``left``, on every dialect's plan
    where it matters (SQLite)."""
    return OrderedJoin(left, right, onclause)


@compiles(OrderedJoin, "sqlite")
def _sqlite_cross_join(element: OrderedJoin, compiler: SQLCompiler, **kw: Any) -> str:
    kw["asfrom"] = True
    left = compiler.process(element.left, **kw)
    right = compiler.process(element.right, **kw)
    assert element.onclause is not None  # ordered_join always gives one
    on = compiler.process(element.onclause, **kw)
    return f"{left} CROSS JOIN {right} ON {on}"


class _ByKey(Alias):
    """An alias SQLite may reach only through its primary key (``NOT INDEXED``)."""

    inherit_cache = True


def by_key(table: sa.TableClause, name: str) -> Alias:
    """An alias of ``table`` for statements that look rows up by primary key.

    On SQLite it renders ``table AS name NOT INDEXED``: no secondary index may
    drive the lookup (rowid lookups stay allowed), so ``id IN (...) AND
    <audience>`` can never become a walk of ``ix_memo_*_timeline (state=?)``
    on a database without statistics. Create it once per module: the read
    rule's predicate is memoised per table object.
    """
    return _ByKey._construct(table, name=name)


@compiles(_ByKey, "sqlite")
def _sqlite_not_indexed(element: _ByKey, compiler: SQLCompiler, **kw: Any) -> str:
    text: str = compiler.visit_alias(element, **kw)  # type: ignore[no-untyped-call]
    return f"{text} NOT INDEXED" if kw.get("asfrom") else text


class _Unindexed(ColumnElement[Any]):
    """A column SQLite must not use an index for (``+column``)."""

    inherit_cache = True

    def __init__(self, column: ColumnElement[Any]) -> None:
        self.column = column
        self.type = column.type

    @property
    def _from_objects(self) -> list[Any]:
        return self.column._from_objects


@compiles(_Unindexed)
def _plain(element: _Unindexed, compiler: SQLCompiler, **kw: Any) -> str:
    return compiler.process(element.column, **kw)


@compiles(_Unindexed, "sqlite")
def _sqlite_unary_plus(element: _Unindexed, compiler: SQLCompiler, **kw: Any) -> str:
    return "+" + compiler.process(element.column, **kw)


def unindexed(column: ColumnElement[Any]) -> ColumnElement[Any]:
    """``column`` in a term that must not pick the index (SQLite's documented ``+x``).

    A memo's comments are ``parent_id = ? AND state = ?``: without statistics
    both equalities look alike to SQLite, which then may walk every memo of
    that state through a timeline index instead of the memo's few comments
    through ``ix_memo_parent`` (issue 15).
    """
    return _Unindexed(column)
