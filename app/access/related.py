"""Who may read the objects that hang off a memo: attachments (and their files).

``access.md`` section 3, "Related objects": reactions, attachments and files
follow their memo; an attachment not yet bound to a memo is readable only by
its creator. This module renders that as one SQL boolean over ``attachment``,
built from :func:`app.access.audience.audience_predicate` on the bound memo,
so the memo rule is never restated here. Point reads use the same predicate
(there is no second rendering that could disagree).
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.sql.elements import ColumnElement

from app.access.admission import readable
from app.access.audience import AccessMode, personal_reach
from app.access.caller import Caller
from app.db.schema import attachment, memo

_HOLDER = memo.alias("attachment_memo")  # one alias: audience predicates are memoised per table


def attachment_predicate(
    caller: Caller | None, mode: AccessMode, table: sa.FromClause = attachment
) -> ColumnElement[bool]:
    """Attachments the caller may read: bound to a readable memo, or its own and unbound.

    A restricted key whose personal reach is NONE does not reach its holder's
    unbound attachments either (they are personal objects outside any space).
    """
    a = table.c
    holder = _HOLDER
    bound = sa.exists().where(holder.c.id == a.memo_id, readable(caller, mode, holder))
    if caller is None or personal_reach(caller) == "NONE":
        return bound
    unbound = sa.and_(a.memo_id.is_(None), a.creator_id == caller.user_id)
    return sa.or_(unbound, bound)


__all__ = ["attachment_predicate"]
