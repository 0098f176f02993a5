"""The memo read rule, as a SQL predicate and as a pure function.

Sections 1 to 3 of ``access.md``. Spaces (SPACE visibility) deny until the
spaces issue adds membership; the predicate already has that branch's shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import sqlalchemy as sa
from sqlalchemy.sql.elements import ColumnElement

from app.access.caller import Caller
from app.db.schema import memo, user_account

VISIBILITIES = ("PRIVATE", "PROTECTED", "PUBLIC", "SPACE")
MEMO_STATES = ("NORMAL", "ARCHIVED")
USER_STATES = ("NORMAL", "ARCHIVED")


class AccessMode(StrEnum):
    PRIVATE = "PRIVATE"
    PUBLIC = "PUBLIC"


@dataclass(frozen=True, slots=True)
class MemoFacts:
    """The stored facts the read rule looks at, for one memo."""

    creator_id: int
    creator_state: str | None  # None: the creator row does not exist
    visibility: str
    state: str
    space_id: int | None = None
    tree: str | None = None


def personal_reach(caller: Caller) -> str:
    """A restricted key's reach over memos outside spaces: NONE, OWN or AUDIENCE.

    An unrestricted credential has the holder's whole audience. A malformed
    restriction reaches nothing (fail closed).
    """
    if caller.restriction is None:
        return "AUDIENCE"
    value = caller.restriction.get("personal")
    return value if value in ("NONE", "OWN", "AUDIENCE") else "NONE"


def _personal_reach_allows(caller: Caller, creator_id: int, space_id: int | None) -> bool:
    if space_id is not None:
        return True  # space memos are governed by the key's space ceilings
    reach = personal_reach(caller)
    return reach == "AUDIENCE" or (reach == "OWN" and creator_id == caller.user_id)


def can_read(facts: MemoFacts, caller: Caller | None, mode: AccessMode) -> bool:
    """The point-read decision; must agree with :func:`audience_predicate`."""
    if facts.creator_state not in USER_STATES:
        return False
    is_creator = caller is not None and caller.user_id == facts.creator_id
    if facts.state == "ARCHIVED":
        if not is_creator:
            return False
    elif facts.state != "NORMAL":
        return False
    if caller is not None and not _personal_reach_allows(caller, facts.creator_id, facts.space_id):
        return False
    if facts.visibility == "PUBLIC":
        return caller is not None or mode is AccessMode.PUBLIC
    if facts.visibility == "PROTECTED":
        return caller is not None
    if facts.visibility == "PRIVATE":
        return is_creator
    return False  # SPACE needs membership (spaces issue); anything else is unknown


def audience_predicate(
    caller: Caller | None, mode: AccessMode, table: sa.FromClause = memo
) -> ColumnElement[bool]:
    """The read rule as one boolean expression over ``table`` (``memo`` or an alias).

    Built from ``false()`` upward: each allowing branch is ORed in, so a
    caller for whom no branch applies gets a literal false.
    """
    m = table.c
    creator_ok = sa.exists().where(
        user_account.c.id == m.creator_id, user_account.c.state.in_(USER_STATES)
    )
    visible: ColumnElement[bool] = sa.false()
    if caller is not None:
        visible = sa.or_(
            visible,
            sa.and_(m.creator_id == caller.user_id, m.visibility == "PRIVATE"),
            m.visibility.in_(("PUBLIC", "PROTECTED")),
        )
    elif mode is AccessMode.PUBLIC:
        visible = sa.or_(visible, m.visibility == "PUBLIC")
    if caller is not None:
        state_ok = sa.or_(
            m.state == "NORMAL",
            sa.and_(m.state == "ARCHIVED", m.creator_id == caller.user_id),
        )
    else:
        state_ok = m.state == "NORMAL"
    if caller is not None:
        reach = personal_reach(caller)
        if reach == "NONE":
            visible = sa.and_(visible, m.space_id.is_not(None))
        elif reach == "OWN":
            visible = sa.and_(
                visible, sa.or_(m.space_id.is_not(None), m.creator_id == caller.user_id)
            )
    return sa.and_(visible, state_ok, creator_ok)
