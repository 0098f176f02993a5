"""The instance secret, one per database, so that every process agrees on it.

It signs page tokens (``app.api.paging``): a token minted by one process must
be accepted by any other behind the same load balancer, whatever its data
directory. So it lives in ``instance_setting`` under ``SECRET`` (Memos keeps
its ``secret_key`` in an instance setting too), is read once per process at
start, and is never logged or served (``app.instance.routes`` knows only
``ACCESS``).

First start: a ``<data>/secret`` file left by an earlier Daybook is taken
into the database, so existing page tokens stay valid; otherwise a fresh
random value. Processes starting together race with ``INSERT ... ON CONFLICT
DO NOTHING`` and all read back the one that won.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.db.schema import instance_setting
from app.db.transactions import write_transaction

SECRET = "SECRET"  # noqa: S105 (the setting's name, not its value)
LEGACY_FILE = "secret"


def legacy_secret(data_dir: Path) -> str | None:
    """The secret an earlier Daybook kept in ``<data>/secret``, if there is one."""
    path = data_dir / LEGACY_FILE
    try:
        value = path.read_text().strip()
    except FileNotFoundError:
        return None
    return value or None


async def stored_secret(conn: AsyncConnection) -> str | None:
    value = (
        await conn.execute(
            sa.select(instance_setting.c.value).where(instance_setting.c.name == SECRET)
        )
    ).scalar_one_or_none()
    key = value.get("key") if isinstance(value, dict) else None
    return key if isinstance(key, str) and key else None


async def instance_secret(engine: AsyncEngine, data_dir: Path) -> str:
    """The database's secret, created (or taken from the legacy file) on first start."""
    async with engine.connect() as conn:
        found = await stored_secret(conn)
    if found is not None:
        return found
    candidate = legacy_secret(data_dir) or secrets.token_urlsafe(48)
    insert = postgresql.insert if engine.dialect.name == "postgresql" else sqlite.insert
    async with write_transaction(engine) as conn:
        await conn.execute(
            insert(instance_setting)
            .values(name=SECRET, value={"key": candidate})
            .on_conflict_do_nothing(index_elements=[instance_setting.c.name])
        )
    async with engine.connect() as conn:
        found = await stored_secret(conn)
    if found is None:
        raise RuntimeError("the instance secret could not be stored")
    return found
