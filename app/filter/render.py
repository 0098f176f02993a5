"""IR to a SQLAlchemy boolean expression for one dialect and one request clock.

Every value is a bound parameter; the only SQL text written here is fixed
(operator names, the FTS table name). Every predicate is two-valued: nullable
columns are guarded with ``IS NOT NULL`` and set lookups use ``IN (subquery)``
rather than a scalar ``=`` that could be NULL, so ``NOT`` is always exact.

Shapes chosen for the indexes (see the plan tests):

- ``content`` text matches: on SQLite ``memo.id IN (SELECT rowid FROM
  memo_trgm WHERE memo_trgm.content MATCH :q) AND <exact>`` for needles of 3+
  characters (the trigram table indexes ``daybook_fold(content)``, so the
  prefilter is a superset of the exact predicate); on PostgreSQL
  ``lower(content) LIKE lower(:pattern) ESCAPE '\\'``, which the GIN
  ``lower(content) gin_trgm_ops`` index serves.
- tags: ``memo.id IN (SELECT memo_id FROM memo_tag WHERE tag ...)``, served
  by ``ix_memo_tag_tag``.

On PostgreSQL the needle values themselves (a content pattern, the tags of
``"t" in tags``, ``tag in [..]``, a tag pattern) are written into the
statement text as quoted literals (``literal_execute``: the dialect's literal
processor quotes them when the statement is sent), not sent as ``$n``
parameters. asyncpg prepares every statement, and after five executions
PostgreSQL may keep a generic plan, planned without the parameter values: it
then takes ``lower(content) LIKE $n`` for 0.5% of memos and ``tag = $n`` for
``1 / n_distinct``, so an ANDed pair looks rare enough to drive from the
trigram index or the tag rows and sort, which reads every match of a common
word (about 600 ms at 100k memos instead of 5). With the values in the text,
every plan, generic or not, is costed with them. See
docs/decisions/0045-postgresql-combined-filters.md.

Needles in ``dense`` (see ``app.filter.selectivity``: the edge probes how
common each one is) render per row instead, so SQLite can walk a timeline
index and stop after one page: a content match as the exact folded ``LIKE``
alone, a tag membership as a correlated ``EXISTS (SELECT ... FROM memo_tag
WHERE memo_tag.memo_id = memo.id AND tag ...)`` (the primary key serves it).
Both forms select exactly the same rows.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.sql.elements import ColumnElement

from app.db.schema import attachment, memo, memo_tag, space, user_account
from app.filter import ir
from app.filter.literals import INT64_MAX, INT64_MIN
from app.filter.selectivity import (
    TRIGRAM_MIN,
    Needle,
    TrigramNeedle,
    candidates,
    fts_phrase,
    glob_escape,
    needle_of,
)
from app.fold import fold

__all__ = ["TRIGRAM_MIN", "Renderer", "fts_phrase", "glob_escape", "like_escape"]

_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}

_MEMO_COLUMNS: dict[str, sa.ColumnElement[Any]] = {
    "content": memo.c.content,
    "visibility": memo.c.visibility,
    "creator_id": memo.c.creator_id,
    "created_ts": memo.c.created_ts,
    "updated_ts": memo.c.updated_ts,
    "tree": memo.c.tree,
    "space": memo.c.space_id,
}
_ATTACHMENT_COLUMNS: dict[str, sa.ColumnElement[Any]] = {
    "filename": attachment.c.filename,
    "mime_type": attachment.c.mime_type,
    "create_time": attachment.c.created_ts,
    "memo_id": attachment.c.memo_id,
}


def like_escape(text: str) -> str:
    """Escape LIKE metacharacters with backslash (the renderer always says ``ESCAPE '\\'``)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def user_id_subquery(username: str) -> sa.Select[tuple[int]]:
    """``SELECT id FROM user_account WHERE username = :username``: resolves ``users/{username}``."""
    return sa.select(user_account.c.id).where(user_account.c.username == username)


def _clamp(value: int) -> int:
    return max(INT64_MIN, min(INT64_MAX, value))


class Renderer:
    def __init__(
        self,
        *,
        target: str,
        dialect_name: str,
        now: int,
        dense: frozenset[Needle] = frozenset(),
    ) -> None:
        if dialect_name not in ("sqlite", "postgresql"):
            raise ValueError(f"unsupported dialect {dialect_name!r}")
        self.sqlite = dialect_name == "sqlite"
        self.target = target
        self.columns = _MEMO_COLUMNS if target == "memo" else _ATTACHMENT_COLUMNS
        self.now = now
        self.dense = dense

    def _is_dense(self, pred: ir.Pred) -> bool:
        needle = needle_of(pred, self.target)
        return needle is not None and needle in self.dense

    def render(self, pred: ir.Pred) -> ColumnElement[bool]:
        method: Callable[[Any], ColumnElement[bool]] = getattr(self, f"_{type(pred).__name__}")
        return method(pred)

    # ---- structure -----------------------------------------------------------

    def _BoolConst(self, pred: ir.BoolConst) -> ColumnElement[bool]:
        return sa.true() if pred.value else sa.false()

    def _And(self, pred: ir.And) -> ColumnElement[bool]:
        return sa.and_(*(self.render(p) for p in pred.parts))

    def _Or(self, pred: ir.Or) -> ColumnElement[bool]:
        return sa.or_(*(self.render(p) for p in pred.parts))

    def _Not(self, pred: ir.Not) -> ColumnElement[bool]:
        return sa.not_(self.render(pred.part))

    def _Flag(self, pred: ir.Flag) -> ColumnElement[bool]:
        if pred.field == "has_location":
            return memo.c.location_placeholder.is_not(None)
        column: ColumnElement[bool] = memo.c[pred.field]
        return column

    # ---- text ----------------------------------------------------------------

    def _needle(self, value: str) -> ColumnElement[str]:
        """A needle value for PostgreSQL: inlined as a quoted literal (see the module doc)."""
        return sa.literal(value, sa.Text, literal_execute=True)

    def _tag_is(self, value: str) -> ColumnElement[bool]:
        if self.sqlite:
            return memo_tag.c.tag == value
        return memo_tag.c.tag == self._needle(value)

    def _fold(self, expr: ColumnElement[Any]) -> ColumnElement[str]:
        return sa.func.daybook_fold(expr) if self.sqlite else sa.func.lower(expr)

    def _folded_value(self, value: str) -> ColumnElement[str]:
        # SQLite folds in Python with the same function its UDF uses; PostgreSQL
        # folds the parameter with the same lower() it applies to the column.
        if self.sqlite:
            return sa.literal(fold(value), sa.Text)
        return sa.func.lower(sa.literal(value, sa.Text))

    def _TextCompare(self, pred: ir.TextCompare) -> ColumnElement[bool]:
        column = self.columns[pred.field]
        if not pred.folded:
            return _OPS[pred.op](column, sa.literal(pred.value, sa.Text))  # type: ignore[no-any-return]
        left = self._fold(column)
        if pred.op not in ("==", "!=") and not self.sqlite:
            left = sa.collate(left, "C")  # code point order, as in CEL and SQLite
        return _OPS[pred.op](left, self._folded_value(pred.value))  # type: ignore[no-any-return]

    def _TextIn(self, pred: ir.TextIn) -> ColumnElement[bool]:
        column = self.columns[pred.field]
        if not pred.folded:
            return column.in_(pred.values)
        return self._fold(column).in_([self._folded_value(v) for v in pred.values])

    def _pattern(self, op: str, escaped: str, wildcard: str) -> str:
        if op == "contains":
            return f"{wildcard}{escaped}{wildcard}"
        return f"{escaped}{wildcard}" if op == "startsWith" else f"{wildcard}{escaped}"

    def _case_sensitive_match(
        self, column: ColumnElement[Any], op: str, value: str
    ) -> ColumnElement[bool]:
        if self.sqlite:  # SQLite's LIKE ignores ASCII case; GLOB does not
            return column.op("GLOB", is_comparison=True)(self._pattern(op, glob_escape(value), "*"))
        return column.like(self._needle(self._pattern(op, like_escape(value), "%")), escape="\\")

    def _TextMatch(self, pred: ir.TextMatch) -> ColumnElement[bool]:
        column = self.columns[pred.field]
        if not pred.folded:
            return self._case_sensitive_match(column, pred.op, pred.value)
        if not self.sqlite:
            pattern = self._pattern(pred.op, like_escape(pred.value), "%")
            return sa.func.lower(column).like(sa.func.lower(self._needle(pattern)), escape="\\")
        needle = fold(pred.value)
        exact = self._fold(column).like(
            self._pattern(pred.op, like_escape(needle), "%"), escape="\\"
        )
        trigram = needle_of(pred, self.target)
        if not isinstance(trigram, TrigramNeedle) or trigram in self.dense:
            return exact
        return sa.and_(memo.c.id.in_(candidates(trigram)), exact)

    def _Regex(self, pred: ir.Regex) -> ColumnElement[bool]:
        return self.columns[pred.field].regexp_match(pred.pattern)

    # ---- numbers and time ----------------------------------------------------

    def _int(self, term: ir.IntTerm) -> ColumnElement[Any]:
        if isinstance(term, ir.IntConst):
            return sa.literal(term.value, sa.BigInteger)
        if term.accessor is not None:
            return self._accessor(self.columns[term.field], term.accessor)
        if term.field == "size_tags":
            count = sa.select(sa.func.count()).where(memo_tag.c.memo_id == memo.c.id)
            return count.correlate(memo).scalar_subquery()
        if term.field.startswith("size_"):
            column = self.columns[term.field.removeprefix("size_")]
            return sa.func.length(column) if self.sqlite else sa.func.char_length(column)
        return self.columns[term.field]

    def _accessor(self, column: ColumnElement[Any], accessor: ir.Accessor) -> ColumnElement[Any]:
        part, shift = {
            "getFullYear": (("%Y", "year"), 0),
            "getMonth": (("%m", "month"), -1),
            "getDate": (("%d", "day"), 0),
            "getDayOfMonth": (("%d", "day"), -1),
            "getDayOfWeek": (("%w", "dow"), 0),
            "getDayOfYear": (("%j", "doy"), -1),
            "getHours": (("%H", "hour"), 0),
            "getMinutes": (("%M", "minute"), 0),
            "getSeconds": (("%S", "second"), 0),
        }[accessor]
        value: ColumnElement[Any]
        if self.sqlite:
            value = sa.cast(sa.func.strftime(part[0], column, "unixepoch"), sa.Integer)
        else:
            utc = sa.func.timezone("UTC", sa.func.to_timestamp(column))
            value = sa.cast(sa.extract(part[1], utc), sa.Integer)
        return value + shift if shift else value

    def _IntCompare(self, pred: ir.IntCompare) -> ColumnElement[bool]:
        return _OPS[pred.op](self._int(pred.left), self._int(pred.right))  # type: ignore[no-any-return]

    def _IntIn(self, pred: ir.IntIn) -> ColumnElement[bool]:
        # Each value bound as int8: bound with the column's own type (int4 on
        # PostgreSQL for ids and char_length) a literal past 2**31 - 1 would
        # not even reach the comparison. int4 = int8 is still an index probe.
        values = sa.bindparam(
            pred.term.field, list(pred.values), type_=sa.BigInteger, expanding=True, unique=True
        )
        return self._int(pred.term).in_(values)

    def _TsCompare(self, pred: ir.TsCompare) -> ColumnElement[bool]:
        column = self.columns[pred.field]
        bound: ColumnElement[Any]
        if pred.other_field is not None:
            other = self.columns[pred.other_field]
            bound = other + sa.literal(pred.delta, sa.BigInteger) if pred.delta else other
        else:
            base = self.now if pred.from_now else 0
            bound = sa.literal(_clamp(base + pred.delta), sa.BigInteger)
        return _OPS[pred.op](column, bound)  # type: ignore[no-any-return]

    # ---- people, tags, places ------------------------------------------------

    def _Creator(self, pred: ir.Creator) -> ColumnElement[bool]:
        return memo.c.creator_id.in_(user_id_subquery(pred.username))

    def _tagged(self, pred: ir.Pred, condition: ColumnElement[bool]) -> ColumnElement[bool]:
        if self._is_dense(pred):
            return sa.exists(self._own_tags(condition))
        return memo.c.id.in_(sa.select(memo_tag.c.memo_id).where(condition))

    def _tag_pred(self, op: str, value: str) -> ColumnElement[bool]:
        if op == "==":
            return self._tag_is(value)
        return self._case_sensitive_match(memo_tag.c.tag, op, value)

    def _own_tags(self, *conditions: ColumnElement[bool]) -> sa.Select[tuple[int]]:
        return (
            sa.select(memo_tag.c.memo_id)
            .where(memo_tag.c.memo_id == memo.c.id, *conditions)
            .correlate(memo)
        )

    def _TagHas(self, pred: ir.TagHas) -> ColumnElement[bool]:
        return self._tagged(pred, self._tag_is(pred.tag))

    def _TagAny(self, pred: ir.TagAny) -> ColumnElement[bool]:
        if self.sqlite:
            return self._tagged(pred, memo_tag.c.tag.in_(pred.tags))
        tags: sa.BindParameter[list[str]] = sa.bindparam(
            "tag", list(pred.tags), expanding=True, unique=True, literal_execute=True
        )
        return self._tagged(pred, memo_tag.c.tag.in_(tags))

    def _TagOnly(self, pred: ir.TagOnly) -> ColumnElement[bool]:
        if not pred.tags:
            return ~sa.exists(self._own_tags())
        return ~sa.exists(self._own_tags(memo_tag.c.tag.not_in(pred.tags)))

    def _TagQuant(self, pred: ir.TagQuant) -> ColumnElement[bool]:
        condition = self._tag_pred(pred.op, pred.value)
        if pred.quantifier == "exists":
            return self._tagged(pred, condition)
        if pred.quantifier == "all":
            return sa.and_(
                sa.exists(self._own_tags()), ~sa.exists(self._own_tags(sa.not_(condition)))
            )
        count = sa.select(sa.func.count()).where(memo_tag.c.memo_id == memo.c.id, condition)
        return count.correlate(memo).scalar_subquery() == 1

    def _IsNull(self, pred: ir.IsNull) -> ColumnElement[bool]:
        return self.columns[pred.field].is_(None)

    def _Tree(self, pred: ir.Tree) -> ColumnElement[bool]:
        column = memo.c.tree
        same = column == pred.path
        if pred.subtree:
            below = self._case_sensitive_match(column, "startsWith", pred.path + ".")
            return sa.and_(column.is_not(None), sa.or_(same, below))
        return sa.and_(column.is_not(None), same)

    def _SpaceIs(self, pred: ir.SpaceIs) -> ColumnElement[bool]:
        # Only narrows: the audience predicate beside it decides what is readable,
        # so naming a space the caller is not in matches nothing it could see.
        column = memo.c.space_id
        by_uid = sa.select(space.c.id).where(space.c.uid == pred.uid)
        return sa.and_(column.is_not(None), column.in_(by_uid))

    def _MemoRef(self, pred: ir.MemoRef) -> ColumnElement[bool]:
        column = attachment.c.memo_id
        by_uid = sa.select(memo.c.id).where(memo.c.uid == pred.uid)
        return sa.and_(column.is_not(None), column.in_(by_uid))
