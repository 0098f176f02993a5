"""Which parts of a filter a selectivity probe can rate, and the probe statements (pure).

Two predicate families have an index of their own on SQLite, and each can
be rendered two ways that select exactly the same rows:

- a content substring match of 3+ folded characters (``contains``,
  ``startsWith``, ``endsWith``), prefiltered by the ``memo_trgm`` trigram
  table: *sparse* ``memo.id IN (SELECT rowid FROM memo_trgm WHERE ... MATCH
  :phrase) AND <exact>`` or *dense* ``<exact>`` alone;
- a tag membership (``"t" in tags``, ``tag in [..]``, ``sets.intersects``,
  ``tags.exists(t, t == "s")``, ``tags.exists(t, t.startsWith("s"))``),
  served by ``ix_memo_tag_tag``: *sparse* ``memo.id IN (SELECT memo_id FROM
  memo_tag WHERE <cond>)`` or *dense* ``EXISTS (SELECT ... FROM memo_tag
  WHERE memo_tag.memo_id = memo.id AND <cond>)``.

The sparse form lets the IN-list drive the plan (right when few memos
match); the dense form lets SQLite walk a timeline index newest first and
test each row, stopping after one page (right when many match). Which one
a request gets is decided by a sampled count per needle, run at the edge
(``app.memos.query_filter``); this module only names the needles and builds
the probe statements, so the compiler stays free of I/O. See
docs/decisions/0011-filter-selectivity-probe.md.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

import sqlalchemy as sa

from app.db.schema import memo, memo_tag
from app.filter import ir
from app.fold import fold

TRIGRAM_MIN = 3  # FTS5 trigram tokens: shorter needles have no index to consult
MAX_PROBES = 8  # per filter; needles beyond the first eight keep the sparse rendering
CAP_FACTOR = 65  # cap = ceil(sqrt(CAP_FACTOR * memos)), see the decision record
DRIVE_RATIO = 2  # beside an IN-list that drives, an IN-list this much denser costs more than a test
SAMPLE = 32  # hits a needle at the cap's density has in its probe window

TagNeedleOp = Literal["==", "in", "startsWith"]


@dataclass(frozen=True, slots=True)
class TrigramNeedle:
    """A folded content needle of at least ``TRIGRAM_MIN`` characters."""

    text: str


@dataclass(frozen=True, slots=True)
class TagNeedle:
    """A ``memo_tag.tag`` condition that ``ix_memo_tag_tag`` serves as a range."""

    op: TagNeedleOp
    values: tuple[str, ...]


Needle = TrigramNeedle | TagNeedle

_trgm = sa.table("memo_trgm", sa.column("rowid", sa.Integer), sa.column("content", sa.Text))


def glob_escape(text: str) -> str:
    """Escape SQLite GLOB metacharacters by bracketing them."""
    return "".join(f"[{ch}]" if ch in "*?[" else ch for ch in text)


def fts_phrase(text: str) -> str:
    """Quote a needle as one FTS5 phrase, so no character is an FTS operator."""
    return '"' + text.replace('"', '""') + '"'


def needle_of(pred: ir.Pred, target: str = "memo") -> Needle | None:
    """The needle behind one IR node, or ``None`` if it has no two renderings.

    The renderer asks the same question of every node it renders, so the
    probe and the rendering can never disagree about what a needle is.
    """
    if target != "memo":
        return None
    if isinstance(pred, ir.TextMatch):
        if pred.field != "content" or not pred.folded:
            return None
        needle = fold(pred.value)
        return TrigramNeedle(needle) if len(needle) >= TRIGRAM_MIN else None
    if isinstance(pred, ir.TagHas):
        return TagNeedle("==", (pred.tag,))
    if isinstance(pred, ir.TagAny):
        return TagNeedle("in", pred.tags) if pred.tags else None
    if isinstance(pred, ir.TagQuant) and pred.quantifier == "exists":
        if pred.op == "==":
            return TagNeedle("==", (pred.value,))
        if pred.op == "startsWith":
            return TagNeedle("startsWith", (pred.value,))
    return None


def _walk(pred: ir.Pred) -> Iterator[ir.Pred]:
    yield pred
    if isinstance(pred, ir.And | ir.Or):
        for part in pred.parts:
            yield from _walk(part)
    elif isinstance(pred, ir.Not):
        yield from _walk(pred.part)


def needles(pred: ir.Pred, target: str = "memo") -> tuple[Needle, ...]:
    """Every distinct probe-able needle of ``pred``, in the order they appear."""
    seen: dict[Needle, None] = {}
    for node in _walk(pred):
        needle = needle_of(node, target)
        if needle is not None:
            seen.setdefault(needle, None)
    return tuple(seen)


def probe_cap(memos: int) -> int:
    """The count at or above which a needle is dense: ``ceil(sqrt(65 * memos))``, at least 1."""
    return max(1, math.ceil(math.sqrt(CAP_FACTOR * max(memos, 0))))


def tag_condition(needle: TagNeedle) -> sa.ColumnElement[bool]:
    """The ``memo_tag`` condition of a tag needle, as the SQLite renderer writes it."""
    column = memo_tag.c.tag
    if needle.op == "==":
        return column == needle.values[0]
    if needle.op == "in":
        return column.in_(needle.values)
    return column.op("GLOB", is_comparison=True)(glob_escape(needle.values[0]) + "*")


def candidates(needle: Needle) -> sa.Select[tuple[int]]:
    """The memo ids a needle's index yields: the sparse rendering's IN-list."""
    if isinstance(needle, TrigramNeedle):
        return sa.select(_trgm.c.rowid).where(_trgm.c.content.match(fts_phrase(needle.text)))
    return sa.select(memo_tag.c.memo_id).where(tag_condition(needle))


@dataclass(frozen=True, slots=True)
class Span:
    """The memo id range: ``size`` stands in for the number of memos.

    Deleted ids, archived memos and comments count too, which only errs
    towards a larger cap, i.e. towards the sparse rendering.
    """

    first_id: int
    last_id: int

    @property
    def size(self) -> int:
        return max(0, self.last_id - self.first_id + 1)


def span_statement() -> sa.Select[Any]:
    """``SELECT (SELECT min(id) FROM memo), (SELECT max(id) FROM memo)``: two B-tree edges."""
    return sa.select(
        sa.select(sa.func.min(memo.c.id)).scalar_subquery(),
        sa.select(sa.func.max(memo.c.id)).scalar_subquery(),
    )


@dataclass(frozen=True, slots=True)
class Probe:
    """One statement that measures the density of up to ``MAX_PROBES`` needles.

    Counting a needle's candidates up to the cap reads ``cap`` index entries
    when it is common and its whole doclist when it is rare (FTS5 must
    intersect every trigram's doclist to find the few). So each needle is
    sampled instead, in a window of ``window`` ids sized so that a needle
    exactly at the cap's density has ``SAMPLE`` hits in it: "at least
    ``SAMPLE`` hits in the window" is "``count >= cap``" for an evenly spread
    needle, at a bounded cost. The window is the newest ids for tags (a
    B-tree range; tags come and go, and the newest memos are what a walk
    reads first) and the oldest ids for content, because FTS5 reads doclists
    front to back: a window at the end costs as much as the whole doclist
    on a table of many segments.
    """

    needles: tuple[Needle, ...]
    span: Span  # as of the previous probe on this connection, or read just before
    cap: int

    @property
    def window(self) -> int:
        return min(self.span.size, max(1, math.ceil(SAMPLE * self.span.size / self.cap)))

    def statement(self) -> sa.CompoundSelect[Any]:
        """Per needle ``(i, hits, edge)``, then ``(-1, min(id), max(id))``: one round trip.

        Content: ``SELECT :i, count(*), max(rowid) FROM (SELECT rowid FROM memo_trgm
        WHERE memo_trgm.content MATCH :phrase AND rowid <= :hi LIMIT 32)``.
        Tags: ``SELECT :i, count(DISTINCT memo_id), min(memo_id) FROM memo_tag
        WHERE <condition> AND memo_id >= :lo`` (a prefix pattern is tested per
        entry of the window, ``tag || ''``, so it cannot scan the whole tag range).
        The statement depends only on the needles' kinds and is built once per
        kind sequence (building it costs more than running it); the values
        are in ``params()``.
        """
        return _probe_template(tuple(_kind(needle) for needle in self.needles))

    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "hi": self.span.first_id + self.window - 1,
            "lo": self.span.last_id - self.window + 1,
        }
        for i, needle in enumerate(self.needles):
            if isinstance(needle, TrigramNeedle):
                out[f"v{i}"] = fts_phrase(needle.text)
            elif needle.op == "in":
                out[f"v{i}"] = list(needle.values)
            elif needle.op == "startsWith":
                out[f"v{i}"] = glob_escape(needle.values[0]) + "*"
            else:
                out[f"v{i}"] = needle.values[0]
        return out

    def read(
        self, rows: list[tuple[int, int | None, int | None]]
    ) -> tuple[dict[Needle, float], Span]:
        """The density of each needle (hits per id of its window), and the current id range."""
        span = self.span
        for i, first, last in rows:
            if i < 0:
                span = Span(int(first or 1), int(last or 0))
        density: dict[Needle, float] = {}
        for i, hits, edge in rows:
            if i < 0:
                continue
            needle, hits = self.needles[i], int(hits or 0)
            if isinstance(needle, TrigramNeedle):
                # SAMPLE hits: they filled the ids up to the last one; fewer: the whole window.
                end = int(edge or 0) if hits >= SAMPLE else self.span.first_id + self.window - 1
                window = end - self.span.first_id + 1
            else:
                window = span.last_id - (self.span.last_id - self.window + 1) + 1
            density[needle] = hits / max(1, window)
        return density, span


ProbeKind = Literal["content", "==", "in", "startsWith"]


def _kind(needle: Needle) -> ProbeKind:
    return "content" if isinstance(needle, TrigramNeedle) else needle.op


@lru_cache(maxsize=512)
def _probe_template(kinds: tuple[ProbeKind, ...]) -> sa.CompoundSelect[Any]:
    rows: list[sa.Select[*tuple[Any, ...]]] = []
    for i, kind in enumerate(kinds):
        value: sa.BindParameter[Any] = sa.bindparam(f"v{i}", expanding=kind == "in")
        if kind == "content":
            sample = (
                sa.select(_trgm.c.rowid)
                .where(_trgm.c.content.match(value), _trgm.c.rowid <= sa.bindparam("hi"))
                .limit(SAMPLE)
                .subquery()
            )
            (rowid,) = sample.c
            rows.append(
                sa.select(sa.literal(i), sa.func.count(), sa.func.max(rowid)).select_from(sample)
            )
            continue
        tag, memo_id = memo_tag.c.tag, memo_tag.c.memo_id
        condition: sa.ColumnElement[bool]
        if kind == "startsWith":
            condition = (tag + "").op("GLOB", is_comparison=True)(value)
        else:
            condition = tag.in_(value) if kind == "in" else tag == value
        counted = sa.select(sa.literal(i), sa.func.count(memo_id.distinct()), sa.func.min(memo_id))
        rows.append(counted.where(condition, memo_id >= sa.bindparam("lo")))
    edges = span_statement().subquery()
    rows.append(sa.select(sa.literal(-1), *edges.c))
    return sa.union_all(*rows)


def _conjunctions(pred: ir.Pred, target: str) -> Iterator[list[Needle]]:
    """Per ``And`` node, the needles among its direct parts."""
    for node in _walk(pred):
        if isinstance(node, ir.And):
            found = (needle_of(part, target) for part in node.parts)
            group = list(dict.fromkeys(n for n in found if n is not None))
            if len(group) > 1:
                yield group


def choose_dense(
    pred: ir.Pred,
    density: dict[Needle, float],
    *,
    memos: int,
    target: str = "memo",
) -> frozenset[Needle]:
    """The needles to render per row, from their densities (pure).

    With density ``p`` over ``N`` memos a walk reads about ``50 / p`` rows for
    a page and the IN-list ``p * N``: a needle is dense when ``p * p * N >=
    CAP_FACTOR``, i.e. when it matches ``cap = sqrt(CAP_FACTOR * N)`` memos
    or more.

    Dense needles ANDed together match far fewer memos than each alone
    (taken as independent: ``joint``, the product of their densities), so the
    walk reads ``50 / joint`` rows while the rarest one's IN-list still reads
    ``p_min * N``. If ``joint * p_min * N < CAP_FACTOR`` the walk loses: the
    rarest renders sparse again and drives the plan, and so does any other
    member less than ``DRIVE_RATIO`` times as dense (its IN-list costs less
    than testing each candidate); denser members stay per-row tests.
    """
    cap = probe_cap(memos)
    dense = {needle for needle, p in density.items() if p * memos >= cap}
    for group in _conjunctions(pred, target):
        members = [needle for needle in group if needle in dense]
        if len(members) < 2:
            continue
        lowest = min(density[needle] for needle in members)
        if math.prod(density[needle] for needle in members) * lowest * memos >= CAP_FACTOR:
            continue  # the walk still wins
        dense.difference_update(n for n in members if density[n] < DRIVE_RATIO * lowest)
    return frozenset(dense)
