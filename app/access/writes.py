"""The memo write rule, as pure decisions (``access.md`` section 4).

Personal memos (no space): only the creator writes. SPACE memos, with the
caller's level at the memo's path (from its loaded, key-clamped
:class:`~app.access.scope.SpaceScope`):

- create, or move into a path: WRITE at that path;
- edit, archive, pin, delete, or move away (source side): (creator and WRITE)
  or OWNER at the memo's path;
- comment: read on the parent (checked by the point read first) and WRITE
  at the parent's path; the comment takes the parent's space and path.

A restricted key with scope READ never writes. None of these does I/O.
"""

from __future__ import annotations

from app.access.caller import Caller
from app.access.scope import EMPTY_SCOPE, OWNER, WRITE, SpaceScope

PERSONAL_VISIBILITIES = ("PRIVATE", "PROTECTED", "PUBLIC")

__all__ = ["can_comment", "can_place_memo", "can_write_memo", "key_may_write"]


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
    if not key_may_write(caller):
        return False
    if visibility == "SPACE":
        if space_id is None or tree is None:
            return False
        level = scope.level_at(space_id, tree)
        return level >= OWNER or (caller.user_id == creator_id and level >= WRITE)
    return caller.user_id == creator_id and visibility in PERSONAL_VISIBILITIES and space_id is None


def can_place_memo(
    caller: Caller, space_id: int | None, tree: str | None, scope: SpaceScope
) -> bool:
    """Create a SPACE memo at ``tree`` in ``space_id``, or move one there."""
    if not key_may_write(caller) or space_id is None or tree is None:
        return False
    return scope.level_at(space_id, tree) >= WRITE


def can_comment(
    caller: Caller,
    parent_visibility: str,
    parent_space_id: int | None,
    parent_tree: str | None,
    scope: SpaceScope,
) -> bool:
    """Comment on a parent the caller has already been allowed to read."""
    if not key_may_write(caller):
        return False
    if parent_visibility == "SPACE":
        return can_place_memo(caller, parent_space_id, parent_tree, scope)
    return True
