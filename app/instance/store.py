"""Instance settings, stored in the database so every process agrees.

Read on each request that needs them (one primary-key lookup); never cached
in process memory, so a change made through one process takes effect in all
of them at the next request.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.audience import AccessMode
from app.db.schema import instance_setting

ACCESS = "ACCESS"


@dataclass(frozen=True, slots=True)
class AccessSettings:
    access_mode: AccessMode = AccessMode.PRIVATE
    disallow_public_visibility: bool = False
    allow_registration: bool = False
    content_length_limit: int = 8 * 1024


def _from_json(value: dict[str, Any], default: AccessSettings) -> AccessSettings:
    mode = value.get("access_mode", default.access_mode)
    try:
        access_mode = AccessMode(mode)
    except ValueError:
        access_mode = AccessMode.PRIVATE  # fail closed on a corrupt value
    return AccessSettings(
        access_mode=access_mode,
        disallow_public_visibility=bool(
            value.get("disallow_public_visibility", default.disallow_public_visibility)
        ),
        allow_registration=bool(value.get("allow_registration", default.allow_registration)),
        content_length_limit=int(value.get("content_length_limit", default.content_length_limit)),
    )


def access_value() -> sa.ScalarSelect[Any]:
    """The stored ACCESS value as a scalar subquery: the caller's own statement
    reads it too (``app.auth.middleware``), saving a round trip per request."""
    return (
        sa.select(instance_setting.c.value)
        .where(instance_setting.c.name == ACCESS)
        .scalar_subquery()
    )


def access_from(value: Any, default: AccessSettings) -> AccessSettings:
    """Settings from a stored ACCESS value (``None``: never saved, the defaults)."""
    return default if not isinstance(value, dict) else _from_json(value, default)


async def load_access(conn: AsyncConnection, default: AccessSettings) -> AccessSettings:
    value = (
        await conn.execute(
            sa.select(instance_setting.c.value).where(instance_setting.c.name == ACCESS)
        )
    ).scalar_one_or_none()
    return access_from(value, default)


async def save_access(conn: AsyncConnection, settings: AccessSettings) -> None:
    value = asdict(settings)
    value["access_mode"] = settings.access_mode.value
    updated = await conn.execute(
        instance_setting.update().where(instance_setting.c.name == ACCESS).values(value=value)
    )
    if updated.rowcount == 0:
        await conn.execute(instance_setting.insert().values(name=ACCESS, value=value))


__all__ = [
    "AccessSettings",
    "access_from",
    "access_value",
    "load_access",
    "replace",
    "save_access",
]
