"""The CEL ``filter=`` parameter, compiled for the connection's dialect.

A compile error is a 400 naming the problem and its offset; a missing or
blank parameter is no filter.

This is the edge where the compiler meets the database: before rendering,
``dense_needles`` asks SQLite how common each indexed needle of the filter
is (hits in a sample window per needle, at most ``MAX_PROBES``, one statement),
so that a common needle renders per row and lets the list walk its timeline
index, while a rare one keeps its IN-list. See ``app.filter.selectivity``
and docs/decisions/0011-filter-selectivity-probe.md.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from app.errors import InvalidArgument
from app.filter import FilterError, compile_memo_filter, lower_filter
from app.filter.ir import Pred
from app.filter.selectivity import (
    MAX_PROBES,
    Needle,
    Probe,
    Span,
    choose_dense,
    needles,
    probe_cap,
    span_statement,
)

# The memo id range as of the connection's previous probe, kept on the pooled
# DBAPI connection: the cap and the sample windows only need its order of
# magnitude, and reusing it saves a round trip. Each probe reads it again.
_SPAN_KEY = "daybook.filter.memo_span"


async def _span(conn: AsyncConnection) -> Span:
    span = conn.info.get(_SPAN_KEY)
    if isinstance(span, Span):
        return span
    first, last = (await conn.execute(span_statement())).one()
    return Span(int(first or 1), int(last or 0))


async def dense_needles(conn: AsyncConnection, pred: Pred) -> frozenset[Needle]:
    """The needles of ``pred`` to render per row, measured on this connection's database.

    SQLite only: PostgreSQL's planner already weighs its GIN and tag indexes
    against the timeline with statistics of its own, so nothing is probed
    there. One statement (two on a connection's first filter) for the first
    ``MAX_PROBES`` needles; any beyond keep the sparse rendering.
    """
    if conn.dialect.name != "sqlite":
        return frozenset()
    found = needles(pred, "memo")[:MAX_PROBES]
    if not found:
        return frozenset()
    span = await _span(conn)
    if span.size == 0:
        return frozenset()  # no memos: nothing to walk
    probe = Probe(found, span, probe_cap(span.size))
    rows = (await conn.execute(probe.statement(), probe.params())).all()
    density, span = probe.read([(int(i), hits, edge) for i, hits, edge in rows])
    conn.info[_SPAN_KEY] = span
    return choose_dense(pred, density, memos=span.size)


async def memo_filter_clause(
    conn: AsyncConnection, text: str | None, *, now: int
) -> ColumnElement[bool] | None:
    """The filter as a predicate over ``memo`` for ``conn``'s dialect, rendered for its data."""
    if text is None or not text.strip():
        return None
    try:
        pred = lower_filter(text, "memo")
        dense = await dense_needles(conn, pred)
        return compile_memo_filter(text, now=now, dialect_name=conn.dialect.name, dense=dense)
    except FilterError as exc:
        raise InvalidArgument(f"filter: {exc}") from None
