"""The memo write rule, as pure decisions.

Personal memos (no space): only the creator writes. SPACE memos: the creator
writes while its level at the memo's path is at least WRITE (for now every
ACTIVE member has WRITE everywhere in its spaces, see :mod:`app.access.scope`;
owners editing others' memos come with tree grants). Placing a memo in a
space (create or move) needs WRITE at the destination. A restricted key with
scope READ never writes. Every decision takes the caller's loaded
:class:`~app.access.scope.SpaceScope`, so none of them does I/O.
"""

from __future__ import annotations

from app.access.caller import Caller
from app.access.scope import EMPTY_SCOPE, WRITE, SpaceScope

PERSONAL_VISIBILITIES = ("PRIVATE", "PROTECTED", "PUBLIC")


def key_may_write(caller: Caller) -> bool:
    restriction = caller.restriction
    return restriction is None or restriction.get("scope") == "WRITE"


def can_write_memo(
    caller: Caller,
    creator_id: int,
    visibility: str,
    space_id: int | None = None,
    tree: str | None = None,
    scope: SpaceScope = EMPTY_SCOPE,
) -> bool:
    """Edit, pin, archive, restore, delete or move (source side) an existing memo."""
    if not key_may_write(caller) or caller.user_id != creator_id:
        return False
    if visibility == "SPACE":
        return can_place_memo(caller, space_id, tree, scope)
    return visibility in PERSONAL_VISIBILITIES and space_id is None


def can_place_memo(
    caller: Caller, space_id: int | None, tree: str | None, scope: SpaceScope
) -> bool:
    """Create a SPACE memo at ``tree`` in ``space_id``, or move one there."""
    if not key_may_write(caller) or space_id is None or tree is None:
        return False
    return scope.level_at(space_id, tree) >= WRITE
