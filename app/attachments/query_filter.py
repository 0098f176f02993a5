"""The CEL ``filter=`` of ListAttachments, through the filter's edge.

The filter is one more conjunct beside "the caller's own, readable
attachments", so it can only narrow that set. Attachment filters have no
needles to probe, so the compiled filter renders for the dialect alone.
"""

from __future__ import annotations

from sqlalchemy.sql.elements import ColumnElement

from app.errors import InvalidArgument
from app.filter import FilterError, compile_filter


def attachment_filter_clause(
    text: str | None, *, now: int, dialect_name: str
) -> ColumnElement[bool] | None:
    if text is None or not text.strip():
        return None
    try:
        compiled = compile_filter(text, "attachment")
    except FilterError as exc:
        raise InvalidArgument(f"filter: {exc}") from None
    return compiled.render(dialect_name=dialect_name, now=now)
