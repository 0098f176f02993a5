"""The CEL ``filter=`` parameter, compiled for the connection's dialect.

A compile error is a 400 naming the problem and its offset; a missing or
blank parameter is no filter.
"""

from __future__ import annotations

from sqlalchemy.sql.elements import ColumnElement

from app.errors import InvalidArgument


def memo_filter_clause(
    text: str | None, *, now: int, dialect_name: str
) -> ColumnElement[bool] | None:
    if text is None or not text.strip():
        return None
    from app.filter import FilterError, compile_memo_filter

    try:
        return compile_memo_filter(text, now=now, dialect_name=dialect_name)
    except FilterError as exc:
        raise InvalidArgument(f"filter: {exc}") from None
