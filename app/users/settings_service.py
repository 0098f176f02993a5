"""The SQL of a user's GENERAL setting: one JSON value in ``instance_setting``.

The row is named ``user:{id}:GENERAL`` (no migration for three strings) and
is removed with the user (app.users.service.delete_user). Validation and the
update mask stay in ``settings_routes``; this module only reads and writes.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.caller import Caller
from app.db.schema import instance_setting

GENERAL = "GENERAL"
DEFAULTS = {
    "locale": "en",
    "theme": "system",
    "memoVisibility": "PRIVATE",
    "saveMediaMetadata": False,
}


def setting_key(user_id: int) -> str:
    return f"user:{user_id}:{GENERAL}"


async def load_general(db: AsyncConnection, caller: Caller) -> dict[str, Any]:
    """The caller's values over the defaults; unknown stored keys are dropped."""
    stored = (
        await db.execute(
            sa.select(instance_setting.c.value).where(
                instance_setting.c.name == setting_key(caller.user_id)
            )
        )
    ).scalar_one_or_none()
    values = dict(DEFAULTS)
    if isinstance(stored, dict):
        values.update({k: v for k, v in stored.items() if k in DEFAULTS})
    return values


async def save_general(db: AsyncConnection, caller: Caller, values: dict[str, Any]) -> None:
    """Replace the caller's row, or insert it the first time."""
    key = setting_key(caller.user_id)
    updated = await db.execute(
        instance_setting.update().where(instance_setting.c.name == key).values(value=values)
    )
    if updated.rowcount == 0:
        await db.execute(instance_setting.insert().values(name=key, value=values))
