"""The memo write rule: one pure decision for create, edit, move and relate.

``access.md`` section 4 and the agreed access model (``docs/decisions/0020``).
Every write path asks :func:`write_denial` (or a thin wrapper of it) and
nothing else: memo create, update and delete, batch create (``REPLACE``
goes through update), comments, relations, attachments bound to a memo. A
write is described by where the memo is now (``before``; None for a create)
and where it will be (``after``), each a :class:`Spot` (visibility, space,
path). The caller's reach comes in as its loaded
:class:`~app.access.scope.SpaceScope`, which for a restricted key is already
its ceiling intersected with the holder's live grants, and the key's
personal reach is read from its restriction, so sessions and keys go through
exactly the same lines.

The rule, as a table (the unit test ``tests/access/test_writes.py`` walks it):

- A READ key writes nothing.
- Source (``before`` given: edit, pin, archive, delete, or the source of a
  move): a placed memo (it has a space) needs (creator and WRITE at its path)
  or OWNER at its path; an unplaced memo, its creator, and for a key a
  personal reach other than NONE.
- Destination (create, or a move that changes space or path or leaves the
  space): a placed destination needs WRITE there; an unplaced (personal)
  destination is the creator's only, and for a key a personal reach other
  than NONE. A memo never becomes another user's personal memo by a write.
- A key whose personal reach is NONE writes no PROTECTED or PUBLIC memo,
  placed or not (on either side of the write): such a memo is read outside
  the spaces' grants, which that key never reaches (decision 0030).
- Visibility: only the creator widens it, in the order
  PRIVATE < SPACE < PROTECTED < PUBLIC. Narrowing is an edit.
- Relate: a writer of the memo may replace its REFERENCE links, but removes
  only links to memos it can read; links to memos it cannot see are the
  author's and stay (:func:`may_unlink`).

Unknown visibilities deny. None of this does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from app.access.audience import personal_reach
from app.access.caller import Caller
from app.access.scope import EMPTY_SCOPE, OWNER, WRITE, SpaceScope
from app.access.vocab import Visibility

PERSONAL_VISIBILITIES = (Visibility.PRIVATE, Visibility.PROTECTED, Visibility.PUBLIC)
# How far a visibility reaches: widening moves up this order (Visibility's own).
VISIBILITY_RANK: dict[str, int] = {v.value: v.rank for v in Visibility}

READ_ONLY = "this access token is read-only"
NO_PERSONAL = "this access token does not reach personal memos"
# Visibilities read outside the spaces' grants: a key without personal reach
# writes none of them, placed or not.
BEYOND_SPACES = (Visibility.PROTECTED, Visibility.PUBLIC)

__all__ = [
    "READ_ONLY",
    "VISIBILITY_RANK",
    "Spot",
    "can_comment",
    "can_place_memo",
    "can_write_memo",
    "key_may_write",
    "may_stage_attachment",
    "may_unlink",
    "memo_spot",
    "widens",
    "write_denial",
]


@dataclass(frozen=True, slots=True)
class Spot:
    """Where a memo is or will be: its visibility and its placement (space and path).

    ``space_id`` None means unplaced: a personal memo of its creator.
    """

    visibility: str
    space_id: int | None = None
    tree: str | None = None

    @property
    def placed(self) -> bool:
        return self.space_id is not None

    def same_place(self, other: Spot) -> bool:
        return (self.space_id, self.tree) == (other.space_id, other.tree)


class Placed(Protocol):
    """Anything with a memo's placement columns (a memo row, a ``Placement``)."""

    @property
    def visibility(self) -> str: ...
    @property
    def space_id(self) -> int | None: ...
    @property
    def tree(self) -> str | None: ...


def memo_spot(row: Placed) -> Spot:
    """The :class:`Spot` of a loaded memo row (or anything shaped like one)."""
    return Spot(str(row.visibility), row.space_id, row.tree)


def key_may_write(caller: Caller) -> bool:
    return caller.restriction is None or caller.restriction.may_write()


def _personal_writes(caller: Caller) -> bool:
    """A key writes unplaced memos only when it reaches personal memos at all.

    Personal writes are the creator's own, so OWN and AUDIENCE both allow
    them; NONE (and a malformed restriction) does not.
    """
    return personal_reach(caller) != "NONE"


def widens(before: str, after: str) -> bool:
    """Whether ``before`` → ``after`` reaches further (unknown values count as widening)."""
    old, new = VISIBILITY_RANK.get(before), VISIBILITY_RANK.get(after)
    return old is None or new is None or new > old


def _known(spot: Spot) -> bool:
    if spot.visibility not in VISIBILITY_RANK:
        return False
    if spot.visibility == "SPACE":
        return spot.placed and spot.tree is not None
    return True


def _may_change(caller: Caller, creator_id: int, spot: Spot, scope: SpaceScope) -> bool:
    if not _known(spot):
        return False
    is_creator = caller.user_id == creator_id
    if spot.placed:
        if spot.space_id is None or spot.tree is None:
            return False
        level = scope.level_at(spot.space_id, spot.tree)
        return level >= OWNER or (is_creator and level >= WRITE)
    return is_creator and _personal_writes(caller)


def _may_place(caller: Caller, creator_id: int, spot: Spot, scope: SpaceScope) -> bool:
    if not _known(spot):
        return False
    if spot.placed:
        if spot.space_id is None or spot.tree is None:
            return False
        return scope.level_at(spot.space_id, spot.tree) >= WRITE
    return caller.user_id == creator_id and _personal_writes(caller)


def write_denial(
    caller: Caller,
    creator_id: int,
    before: Spot | None,
    after: Spot | None,
    scope: SpaceScope = EMPTY_SCOPE,
) -> str | None:
    """Why this write is refused, or None when the rule allows it.

    ``before`` None is a create (``creator_id`` is then the caller);
    ``after`` None (or equal to ``before``) is an edit that leaves the
    memo where it is: content, pin, state, delete.
    """
    if not key_may_write(caller):
        return READ_ONLY
    if not _personal_writes(caller) and any(
        spot is not None and spot.visibility in BEYOND_SPACES for spot in (before, after)
    ):
        # A key that reaches no personal memo writes nothing read outside the
        # spaces' grants, placed or not (decision 0030): it could not before
        # placement was independent, and it must not publish what it reads.
        return NO_PERSONAL
    if before is not None and not _may_change(caller, creator_id, before, scope):
        return (
            "only its creator (with write at its path) or an owner of its path can change it"
            if before.placed
            else "only its creator can change it"
        )
    if after is None or after == before:
        return None
    moved = before is None or not after.same_place(before)
    if moved and not _may_place(caller, creator_id, after, scope):
        if after.placed:
            return f"tree: no write access at {after.tree!r} in this space"
        if caller.user_id != creator_id:
            return "a memo outside spaces is its creator's: only they can put it there"
        return NO_PERSONAL
    if (
        before is not None
        and caller.user_id != creator_id
        and widens(before.visibility, after.visibility)
    ):
        return (
            f"visibility: only its creator can widen it ({before.visibility} to {after.visibility})"
        )
    return None


def may_stage_attachment(caller: Caller) -> bool:
    """An attachment bound to no memo is a personal object of its uploader.

    So a key whose personal reach is NONE (which could not read it back, see
    ``app.access.related``) may upload only straight onto a memo it may write.
    """
    return key_may_write(caller) and _personal_writes(caller)


def may_unlink(caller: Caller, creator_id: int, target_readable: bool) -> bool:
    """Whether a writer of a memo may remove its REFERENCE link to a target.

    Only links the caller can see are its to remove; a link to a memo it
    cannot read stays, unless the caller is the memo's author.
    """
    return target_readable or caller.user_id == creator_id


# --- thin wrappers, kept for the call sites that ask one side only -------------


def can_write_memo(
    caller: Caller,
    creator_id: int,
    visibility: str,
    space_id: int | None = None,
    tree: str | None = None,
    scope: SpaceScope = EMPTY_SCOPE,
) -> bool:
    """Edit, pin, archive, restore, delete or move (source side) an existing memo."""
    spot = Spot(visibility, space_id, tree)
    return write_denial(caller, creator_id, spot, None, scope) is None


def can_place_memo(
    caller: Caller, space_id: int | None, tree: str | None, scope: SpaceScope
) -> bool:
    """Create a SPACE memo at ``tree`` in ``space_id``."""
    if space_id is None or tree is None:
        return False
    spot = Spot("SPACE", space_id, tree)
    return write_denial(caller, caller.user_id, None, spot, scope) is None


def can_comment(
    caller: Caller,
    parent_visibility: str,
    parent_space_id: int | None,
    parent_tree: str | None,
    scope: SpaceScope,
    comment_visibility: str = "PRIVATE",
) -> bool:
    """Comment on a parent the caller has already been allowed to read.

    A comment is a create: on a SPACE parent it takes the parent's place
    (WRITE there); otherwise, a placed PRIVATE, PROTECTED or PUBLIC parent
    included, it is the commenter's own personal memo, so whoever may read
    such a memo may comment on it as on Memos (decision 0030).
    """
    if parent_visibility == "SPACE" and parent_space_id is not None:
        spot = Spot(parent_visibility, parent_space_id, parent_tree)
    else:
        spot = Spot(comment_visibility)
    return write_denial(caller, caller.user_id, None, spot, scope) is None
