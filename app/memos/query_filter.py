"""The CEL ``filter=`` parameter of memo lists, through the filter's edge.

A compile error is a 400 naming the problem and its offset; a missing or
blank parameter is no filter. The text is compiled once
(``app.filter.compile_filter``) and rendered for the connection's dialect
and data (``app.filter.probe``).
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from app.errors import InvalidArgument
from app.filter import FilterError, compile_filter
from app.filter.probe import render_measured


async def memo_filter_clause(
    conn: AsyncConnection, text: str | None, *, now: int
) -> ColumnElement[bool] | None:
    """The filter as a predicate over ``memo`` for ``conn``'s dialect, rendered for its data."""
    if text is None or not text.strip():
        return None
    try:
        compiled = compile_filter(text, "memo")
    except FilterError as exc:
        raise InvalidArgument(f"filter: {exc}") from None
    return await render_measured(conn, compiled, now=now)
