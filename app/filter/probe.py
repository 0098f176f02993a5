"""The filter's edge with the database: measure the needles, then render.

Before rendering a memo filter, ``dense_needles`` asks SQLite how common
each indexed needle is (hits in a sample window per needle, at most
``MAX_PROBES``, one statement), so that a common needle renders per row and
lets the list walk its timeline index, while a rare one keeps its IN-list.
The probe's statements are built in ``app.filter.selectivity`` (pure); this
module only runs them. See docs/decisions/0011-filter-selectivity-probe.md.
"""

from __future__ import annotations

import time

from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from app.filter.compiled import CompiledFilter
from app.filter.selectivity import (
    MAX_PROBES,
    Needle,
    Probe,
    Span,
    choose_dense,
    probe_cap,
    span_statement,
)

__all__ = ["dense_needles", "render_measured"]

# The memo id range as of the connection's previous probe, kept on the pooled
# DBAPI connection: the cap and the sample windows only need its order of
# magnitude, and reusing it saves a round trip. Each probe reads it again.
_SPAN_KEY = "daybook.filter.memo_span"

# A probe's densities, kept on the pooled DBAPI connection for PROBE_TTL
# seconds by the needles probed: a list asked again with the same filter
# (a saved filter, the next page, a client polling) renders as the last
# probe chose without a statement of its own. The choice changes the plan,
# never the rows, so a choice some seconds old costs at most a slower plan
# while the data shifts (decision 0057).
_PROBES_KEY = "daybook.filter.probes"
PROBE_TTL = 10.0  # seconds
PROBES_KEPT = 64  # needle sets per connection; all are forgotten when full


async def _span(conn: AsyncConnection) -> Span:
    span = conn.info.get(_SPAN_KEY)
    if isinstance(span, Span):
        return span
    first, last = (await conn.execute(span_statement())).one()
    return Span(int(first or 1), int(last or 0))


async def dense_needles(conn: AsyncConnection, compiled: CompiledFilter) -> frozenset[Needle]:
    """The needles of ``compiled`` to render per row, measured on this connection's database.

    SQLite only: PostgreSQL's planner already weighs its GIN and tag indexes
    against the timeline with statistics of its own, so nothing is probed
    there. One statement (two on a connection's first filter) for the first
    ``MAX_PROBES`` needles, none when this connection probed the same needles
    less than ``PROBE_TTL`` seconds ago; needles beyond the first
    ``MAX_PROBES`` keep the sparse rendering.
    """
    if conn.dialect.name != "sqlite":
        return frozenset()
    found = compiled.needles[:MAX_PROBES]
    if not found:
        return frozenset()
    kept = conn.info.setdefault(_PROBES_KEY, {})
    now = time.monotonic()
    hit = kept.get(found)
    if hit is not None and now - hit[0] < PROBE_TTL:
        _, density, memos = hit
        return choose_dense(compiled.pred, density, memos=memos)
    span = await _span(conn)
    if span.size == 0:
        return frozenset()  # no memos: nothing to walk
    probe = Probe(found, span, probe_cap(span.size))
    rows = (await conn.execute(probe.statement(), probe.params())).all()
    density, span = probe.read([(int(i), hits, edge) for i, hits, edge in rows])
    conn.info[_SPAN_KEY] = span
    if len(kept) >= PROBES_KEPT:
        kept.clear()
    kept[found] = (now, density, span.size)
    return choose_dense(compiled.pred, density, memos=span.size)


async def render_measured(
    conn: AsyncConnection, compiled: CompiledFilter, *, now: int
) -> ColumnElement[bool]:
    """``compiled`` rendered for ``conn``'s dialect and, on SQLite, for its data."""
    dense = await dense_needles(conn, compiled)
    return compiled.render(dialect_name=conn.dialect.name, now=now, dense=dense)
