"""Pure rules about a space's roster and settings (no I/O).

The last ACTIVE ADMIN of a space cannot leave, be removed or be demoted:
a space must always have someone who can manage it. Space ADMIN is
structural only: it decides the roster and the settings, never reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.access.paths import parse_tree_path
from app.access.scope import LEVELS
from app.errors import InvalidArgument

ROLES = ("ADMIN", "USER")
MEMBER_STATES = ("INVITED", "ACTIVE")
DEFAULT_MEMBER_GRANTS: list[dict[str, str]] = [{"path": "share", "level": "WRITE"}]
MAX_TITLE = 256
MAX_DESCRIPTION = 4096
MAX_DEFAULT_GRANTS = 32


@dataclass(frozen=True, slots=True)
class Seat:
    """One roster row, as the rules see it."""

    user_id: int
    role: str
    state: str


def valid_role(value: str) -> str:
    if value not in ROLES:
        raise InvalidArgument(f"role: {value!r} is not one of ADMIN, USER")
    return value


def removes_last_admin(active_admins: int, seat: Seat, new_role: str | None) -> bool:
    """Whether giving ``seat`` ``new_role`` (None: removing it) leaves no ACTIVE ADMIN."""
    if seat.state != "ACTIVE" or seat.role != "ADMIN" or new_role == "ADMIN":
        return False
    return active_admins <= 1


def valid_title(value: str) -> str:
    title = value.strip()
    if not title:
        raise InvalidArgument("title: must not be empty")
    if len(title) > MAX_TITLE:
        raise InvalidArgument(f"title: longer than {MAX_TITLE} characters")
    return title


def valid_description(value: str) -> str:
    if len(value) > MAX_DESCRIPTION:
        raise InvalidArgument(f"description: longer than {MAX_DESCRIPTION} characters")
    return value


def valid_default_grants(items: list[Any]) -> list[dict[str, str]]:
    """Canonical ``[{path, level}]``. ``~`` is refused: it would mean the admin's home."""
    if len(items) > MAX_DEFAULT_GRANTS:
        raise InvalidArgument(f"defaultMemberGrants: at most {MAX_DEFAULT_GRANTS} entries")
    out: list[dict[str, str]] = []
    for i, item in enumerate(items):
        field = f"defaultMemberGrants[{i}]"
        if item.path.replace("/", ".").split(".")[0] == "~":
            raise InvalidArgument(
                f"{field}.path: '~' is not allowed here (every member gets its home already)"
            )
        path = parse_tree_path(item.path, 0, field=f"{field}.path")
        if item.level not in LEVELS:
            raise InvalidArgument(f"{field}.level: {item.level!r} is not one of READ, WRITE, OWNER")
        entry = {"path": path, "level": item.level}
        if entry not in out:
            out.append(entry)
    return out
