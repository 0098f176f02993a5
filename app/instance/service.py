"""The reads behind the instance profile and stats (the routes hold no SQL)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from app.db.schema import attachment, user_account

__all__ = ["database_bytes", "first_admin", "local_storage_bytes"]


async def first_admin(db: AsyncConnection) -> Row[Any] | None:
    """The oldest active admin: the profile's ``admin`` (Memos shows its owner)."""
    return (
        await db.execute(
            sa.select(user_account)
            .where(user_account.c.role == "ADMIN", user_account.c.state == "NORMAL")
            .order_by(user_account.c.id)
            .limit(1)
        )
    ).first()


async def database_bytes(db: AsyncConnection) -> int:
    if db.dialect.name == "sqlite":
        pages = (await db.exec_driver_sql("PRAGMA page_count")).scalar_one()
        size = (await db.exec_driver_sql("PRAGMA page_size")).scalar_one()
        return int(pages) * int(size)
    size_of = sa.select(sa.func.pg_database_size(sa.func.current_database()))
    return int((await db.execute(size_of)).scalar_one())


async def local_storage_bytes(db: AsyncConnection) -> int:
    """Bytes of attachments stored on the local disk (S3 ones are not ours to count)."""
    total = sa.select(sa.func.coalesce(sa.func.sum(attachment.c.size), 0)).where(
        attachment.c.storage_type == "LOCAL"
    )
    return int((await db.execute(total)).scalar_one())
