"""The CEL ``filter=`` of ListAttachments, compiled for the connection's dialect.

The filter is one more conjunct beside "the caller's own, readable
attachments", so it can only narrow that set.
"""

from __future__ import annotations

from sqlalchemy.sql.elements import ColumnElement

from app.errors import InvalidArgument


def attachment_filter_clause(
    text: str | None, *, now: int, dialect_name: str
) -> ColumnElement[bool] | None:
    if text is None or not text.strip():
        return None
    from app.filter import FilterError, compile_attachment_filter

    try:
        return compile_attachment_filter(text, now=now, dialect_name=dialect_name)
    except FilterError as exc:
        raise InvalidArgument(f"filter: {exc}") from None
