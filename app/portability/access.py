"""Who may export and import, for sessions and restricted keys alike (pure).

- Both operate on the caller's own memos only: ``users/{u}`` must be the
  caller (an admin gets no bypass, as in Memos), else 403.
- Export is a read of the caller's own memos. A restricted key needs a
  personal reach that includes them (``OWN`` or ``AUDIENCE``); what it then
  exports is exactly what it could read: the holder's memos under the key's
  audience (its space declarations and ceilings included).
- Import is a write of unplaced memos (placed ones fall back to unplaced
  when the key may not write at their path): a key needs scope ``WRITE``
  and a personal reach that allows unplaced writes (``OWN`` or
  ``AUDIENCE``). A validate-only import needs the same: it answers about the
  holder's memos, and one rule is simpler to reason about than two.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.access.audience import personal_reach
from app.access.caller import Caller, Credential
from app.errors import DaybookError, PermissionDenied, Unauthenticated

__all__ = ["LocalCaller", "export_refusal", "import_refusal", "local_caller"]


def _own(caller: Caller | None, username: str, verb: str) -> DaybookError | None:
    if caller is None:
        return Unauthenticated(f"sign in to {verb} memos")
    if caller.username != username:
        return PermissionDenied(f"you can {verb} only your own memos (users/{caller.username})")
    return None


def export_refusal(caller: Caller | None, username: str) -> DaybookError | None:
    refusal = _own(caller, username, "export")
    if refusal is not None or caller is None:
        return refusal
    if personal_reach(caller) == "NONE":
        return PermissionDenied(
            "this access token does not reach its holder's own memos (personal: NONE)"
        )
    return None


def import_refusal(caller: Caller | None, username: str) -> DaybookError | None:
    refusal = _own(caller, username, "import")
    if refusal is not None or caller is None:
        return refusal
    if personal_reach(caller) == "NONE":
        return PermissionDenied(
            "this access token cannot write its holder's own memos (personal: NONE)"
        )
    return None


@dataclass(frozen=True, slots=True)
class LocalCaller(Caller):
    """A user acted for by an operator on the command line (no credential was presented).

    It reads and writes exactly as the user's own session would; only the
    recorded origin differs, so the history says the write came from a tool.
    """

    tool: str = "cli"

    def origin(self) -> dict[str, Any]:
        return {"kind": self.tool}


def local_caller(user_id: int, username: str, role: str, tool: str) -> LocalCaller:
    return LocalCaller(user_id, username, role, Credential.SESSION, tool=tool)
