"""The memo write rule, as pure decisions.

For memos outside spaces only the creator writes. A restricted key with
scope READ never writes. (Space paths and key ceilings refine this in the
grants issue.)
"""

from __future__ import annotations

from app.access.caller import Caller


def key_may_write(caller: Caller) -> bool:
    restriction = caller.restriction
    return restriction is None or restriction.get("scope") == "WRITE"


def can_write_memo(caller: Caller, creator_id: int, visibility: str) -> bool:
    """Edit, pin, archive, restore or delete an existing memo."""
    if not key_may_write(caller):
        return False
    return visibility != "SPACE" and caller.user_id == creator_id
