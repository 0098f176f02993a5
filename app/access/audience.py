"""The memo read rule, as a SQL predicate and as a pure function.

Sections 1 to 3 of ``access.md``, with placement independent of visibility
(``docs/decisions/0030``): where a memo lives (its space and tree path)
governs who may write it; its visibility governs who may read it.

- SPACE memos need a space, a tree path, and the caller's level there
  (:mod:`app.access.scope`) to be at least READ. A missing space, a missing
  path or a former member all deny, the author included.
- PRIVATE, PROTECTED and PUBLIC memos are read by their visibility alone,
  placed in a space or not: PRIVATE by the creator, PROTECTED by any
  signed-in user, PUBLIC also anonymously on a PUBLIC instance. A placed
  memo without a tree path is corrupt and denies.
- A restricted key reaches an unplaced memo through its ``personal`` reach,
  and a placed memo (any visibility) only inside its space ceiling
  intersected with the holder's live grants: the key's level at the memo's
  path must be at least READ, exactly as for a SPACE memo there. An
  undeclared space stays invisible to the key, whatever the visibility.

Both renderings take the caller's space scope from the same place: the
predicate embeds :func:`app.access.scope.space_scope` as a subquery, and
point reads load it into a :class:`~app.access.scope.SpaceScope` first.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.sql.elements import ColumnElement

from app.access.caller import Caller, restriction_key
from app.access.scope import EMPTY_SCOPE, READ, SpaceScope, path_covers, space_scope
from app.access.vocab import AccessMode, MemoState, Visibility
from app.db.schema import memo, user_account

__all__ = [
    "MEMO_STATES",
    "PERSONAL_VISIBILITIES",
    "USER_STATES",
    "VISIBILITIES",
    "AccessMode",
    "MemoFacts",
    "audience_predicate",
    "can_read",
    "personal_reach",
    "place_shown",
]

VISIBILITIES = tuple(Visibility)
PERSONAL_VISIBILITIES = (Visibility.PRIVATE, Visibility.PROTECTED, Visibility.PUBLIC)
# The only states any read admits. Every other value denies on every path,
# the creator included: ``TRASHED`` (app.memos.trash) is reachable only
# through the creator's trash endpoints, which read the memo as it would be
# restored (``app.memos.trash.RESTORED``) under this same predicate.
MEMO_STATES = (MemoState.NORMAL, MemoState.ARCHIVED)
USER_STATES = ("NORMAL", "ARCHIVED")


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
    restriction reaches nothing (fail closed, :class:`~app.access.restriction.Restriction`).
    """
    if caller.restriction is None:
        return "AUDIENCE"
    return caller.restriction.personal.value


def _personal_reach_allows(caller: Caller, creator_id: int) -> bool:
    reach = personal_reach(caller)
    return reach == "AUDIENCE" or (reach == "OWN" and creator_id == caller.user_id)


def can_read(
    facts: MemoFacts, caller: Caller | None, mode: AccessMode, scope: SpaceScope = EMPTY_SCOPE
) -> bool:
    """The point-read decision; must agree with :func:`audience_predicate`.

    ``scope`` is the caller's space scope (``load_scope``); the default, empty,
    denies every SPACE memo.
    """
    if facts.creator_state not in USER_STATES:
        return False
    is_creator = caller is not None and caller.user_id == facts.creator_id
    if facts.state == "ARCHIVED":
        if not is_creator:
            return False
    elif facts.state != "NORMAL":
        return False
    if facts.visibility == "SPACE":
        return (
            caller is not None
            and facts.space_id is not None
            and facts.tree is not None
            and scope.level_at(facts.space_id, facts.tree) >= READ
        )
    if facts.visibility not in PERSONAL_VISIBILITIES:
        return False  # unknown visibility
    if facts.space_id is not None:
        if facts.tree is None:
            return False  # a placed memo without a path
        restricted = caller is not None and caller.restriction is not None
        # A key reaches a placed memo only inside its ceiling there (0030).
        if restricted and scope.level_at(facts.space_id, facts.tree) < READ:
            return False
    elif caller is not None and not _personal_reach_allows(caller, facts.creator_id):
        return False
    if facts.visibility == "PUBLIC":
        return caller is not None or mode is AccessMode.PUBLIC
    if facts.visibility == "PROTECTED":
        return caller is not None
    return is_creator  # PRIVATE


_PREDICATES: OrderedDict[tuple[Any, ...], ColumnElement[bool]] = OrderedDict()
_PREDICATE_CACHE_SIZE = 2048


def audience_predicate(
    caller: Caller | None, mode: AccessMode, table: sa.FromClause = memo
) -> ColumnElement[bool]:
    """The read rule as one boolean expression over ``table`` (``memo`` or an alias).

    The expression is a pure function of the caller's identity and
    restriction, the access mode and the table, and SQLAlchemy expressions
    are immutable, so it is memoised: building it costs milliseconds, reusing
    it nothing. Nothing about grants or rosters is cached; those are read by
    the statement itself, at execution.
    """
    key = (
        None if caller is None else caller.user_id,
        restriction_key(caller),
        mode,
        table,
    )
    predicate = _PREDICATES.get(key)
    if predicate is None:
        predicate = _build_predicate(caller, mode, table)
        _PREDICATES[key] = predicate
        if len(_PREDICATES) > _PREDICATE_CACHE_SIZE:
            _PREDICATES.popitem(last=False)
    return predicate


def _build_predicate(
    caller: Caller | None, mode: AccessMode, table: sa.FromClause
) -> ColumnElement[bool]:
    """Built from ``false()`` upward: each allowing branch is ORed in, so a
    caller for whom no branch applies gets a literal false."""
    m = table.c
    creator_ok = sa.exists().where(
        user_account.c.id == m.creator_id, user_account.c.state.in_(USER_STATES)
    )
    # Who may read by visibility alone (PRIVATE, PROTECTED, PUBLIC).
    by_visibility: ColumnElement[bool] = sa.false()
    if caller is not None:
        by_visibility = sa.or_(
            sa.and_(m.creator_id == caller.user_id, m.visibility == "PRIVATE"),
            m.visibility.in_(("PUBLIC", "PROTECTED")),
        )
    elif mode is AccessMode.PUBLIC:
        by_visibility = m.visibility == "PUBLIC"
    placed = sa.and_(m.space_id.is_not(None), m.tree.is_not(None))
    # Unplaced memos: by visibility, within a key's personal reach.
    unplaced = sa.and_(by_visibility, m.space_id.is_(None))
    reach = personal_reach(caller) if caller is not None else "AUDIENCE"
    if reach == "NONE":
        unplaced = sa.false()
    elif reach == "OWN" and caller is not None:
        unplaced = sa.and_(unplaced, m.creator_id == caller.user_id)
    visible: ColumnElement[bool] = unplaced
    restricted = caller is not None and caller.restriction is not None
    if not restricted:
        # Placed memos of a personal visibility: by visibility, wherever they are.
        visible = sa.or_(visible, sa.and_(by_visibility, placed))
    scope_query = space_scope(caller)
    if scope_query is not None:
        scope = scope_query.subquery("scope")
        in_scope = sa.exists().where(
            scope.c.space_id == m.space_id,
            scope.c.level >= READ,
            path_covers(scope.c.path, m.tree),
        )
        # SPACE memos by tree grant; through a key, placed memos of any
        # visibility only inside its ceiling (and then by visibility too).
        readable_here = m.visibility == "SPACE"
        if restricted:
            readable_here = sa.or_(readable_here, by_visibility)
        visible = sa.or_(visible, sa.and_(readable_here, placed, in_scope))
    if caller is not None:
        state_ok = sa.or_(
            m.state == "NORMAL",
            sa.and_(m.state == "ARCHIVED", m.creator_id == caller.user_id),
        )
    else:
        state_ok = m.state == "NORMAL"
    return sa.and_(visible, state_ok, creator_ok)


def place_shown(caller: Caller | None, table: sa.FromClause = memo) -> ColumnElement[bool]:
    """Whether the caller sees a readable memo's space and path (decision 0030).

    Only where it could read a SPACE memo at that path: a PUBLIC memo placed
    in a space is read by non-members too, and neither its presentation nor a
    filter on ``space`` or ``tree`` may tell them where it lives. For a memo
    the audience predicate admits, this is the SQL twin of
    ``app.memos.present``'s ``_shows_place``.
    """
    m = table.c
    scope_query = space_scope(caller)
    if scope_query is None:
        return sa.false()
    scope = scope_query.subquery("shown_scope")
    in_scope = sa.exists().where(
        scope.c.space_id == m.space_id,
        scope.c.level >= READ,
        path_covers(scope.c.path, m.tree),
    )
    return sa.and_(m.space_id.is_not(None), m.tree.is_not(None), in_scope)
