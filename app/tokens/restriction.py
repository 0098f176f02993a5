"""Validation of a personal access token's restriction (``access.md`` section 5).

The restriction is a ceiling, never a grant. A declared space must be one the
holder is an ACTIVE member of when the key is minted (else 400: declaring a
space you cannot see is a mistake worth reporting). Later loss of membership
needs no re-validation: the audience predicate intersects the declaration
with live membership on every request. Tree paths are stored canonical
(``~`` resolved to the holder's home), so the predicate compares strings.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.caller import Caller
from app.access.paths import parse_tree_path
from app.access.scope import LEVELS
from app.api.structs import UID_RE
from app.db.schema import space, space_member
from app.errors import InvalidArgument

SCOPES = ("READ", "WRITE")
PERSONAL = ("NONE", "OWN", "AUDIENCE")
MAX_DECLARED_SPACES = 64
MAX_TREES = 64


def _trees(raw: Any, field: str, holder_id: int) -> list[dict[str, str]]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise InvalidArgument(f"{field}: must be a list of {{path, level}}")
    if len(raw) > MAX_TREES:
        raise InvalidArgument(f"{field}: at most {MAX_TREES} entries")
    out: list[dict[str, str]] = []
    for i, tree in enumerate(raw):
        where = f"{field}[{i}]"
        if not isinstance(tree, dict) or set(tree) - {"path", "level"}:
            raise InvalidArgument(f"{where}: must be {{path, level}}")
        path = parse_tree_path(tree.get("path", ""), holder_id, field=f"{where}.path")
        level = tree.get("level")
        if not isinstance(level, str) or level not in LEVELS:  # a list is unhashable: no 500
            raise InvalidArgument(f"{where}.level: {level!r} is not one of READ, WRITE, OWNER")
        entry = {"path": path, "level": str(level)}
        if entry not in out:
            out.append(entry)
    return out


async def _active_spaces(conn: AsyncConnection, holder_id: int, uids: list[str]) -> set[str]:
    rows = await conn.execute(
        sa.select(space.c.uid)
        .join(space_member, space_member.c.space_id == space.c.id)
        .where(
            space.c.uid.in_(uids),
            space_member.c.user_id == holder_id,
            space_member.c.state == "ACTIVE",
        )
    )
    return {str(u) for (u,) in rows.all()}


async def _spaces(conn: AsyncConnection, caller: Caller, raw: Any) -> list[dict[str, Any]]:
    if not isinstance(raw, list):
        raise InvalidArgument("restriction.spaces: must be a list")
    if len(raw) > MAX_DECLARED_SPACES:
        raise InvalidArgument(f"restriction.spaces: at most {MAX_DECLARED_SPACES} spaces")
    declared: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, entry in enumerate(raw):
        field = f"restriction.spaces[{i}]"
        if not isinstance(entry, dict):
            raise InvalidArgument(f"{field}: must be {{space, admin, trees}}")
        unknown = set(entry) - {"space", "admin", "trees"}
        if unknown:
            raise InvalidArgument(f"{field}: unknown field(s) {', '.join(sorted(unknown))}")
        name = entry.get("space")
        uid = name[len("spaces/") :] if isinstance(name, str) and name.startswith("spaces/") else ""
        if not UID_RE.fullmatch(uid):
            raise InvalidArgument(f"{field}.space: {name!r} is not a space name (spaces/{{id}})")
        if uid in seen:
            raise InvalidArgument(f"{field}.space: {name!r} is declared twice")
        seen.add(uid)
        admin = entry.get("admin", False)
        if not isinstance(admin, bool):
            raise InvalidArgument(f"{field}.admin: must be true or false")
        trees = _trees(entry.get("trees"), f"{field}.trees", caller.user_id)
        declared.append({"space": f"spaces/{uid}", "admin": admin, "trees": trees})
    if declared:
        uids = [d["space"][len("spaces/") :] for d in declared]
        active = await _active_spaces(conn, caller.user_id, uids)
        for d in declared:
            if d["space"][len("spaces/") :] not in active:
                raise InvalidArgument(
                    f"restriction.spaces: you are not an active member of {d['space']!r}"
                )
    return declared


async def validate_restriction(
    conn: AsyncConnection, caller: Caller, raw: dict[str, Any]
) -> dict[str, Any]:
    unknown = set(raw) - {"scope", "personal", "spaces"}
    if unknown:
        raise InvalidArgument(f"restriction: unknown field(s) {', '.join(sorted(unknown))}")
    scope = raw.get("scope", "READ")
    if scope not in SCOPES:
        raise InvalidArgument(f"restriction.scope: {scope!r} is not one of READ, WRITE")
    personal = raw.get("personal", "NONE")
    if personal not in PERSONAL:
        raise InvalidArgument(
            f"restriction.personal: {personal!r} is not one of NONE, OWN, AUDIENCE"
        )
    spaces = await _spaces(conn, caller, raw.get("spaces", []))
    return {"scope": scope, "personal": personal, "spaces": spaces}
