"""Validation of a personal access token's restriction (``access.md`` section 5).

The restriction is a ceiling, never a grant. Until spaces exist, declaring any
space is refused, since the holder cannot be an ACTIVE member of one.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.caller import Caller
from app.errors import InvalidArgument

SCOPES = ("READ", "WRITE")
PERSONAL = ("NONE", "OWN", "AUDIENCE")


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
    spaces = raw.get("spaces", [])
    if not isinstance(spaces, list):
        raise InvalidArgument("restriction.spaces: must be a list")
    if spaces:
        first = spaces[0].get("space") if isinstance(spaces[0], dict) else spaces[0]
        raise InvalidArgument(f"restriction.spaces: you are not an active member of {first!r}")
    return {"scope": scope, "personal": personal, "spaces": []}
