"""The schema revision this code runs on, and the database's, read without Alembic.

Why not Alembic: ``/readyz`` compares the two on every probe, and importing
Alembic for it cost every worker about 9 MB (decision 0054), besides
re-reading every migration script per probe. Migrating still goes through
Alembic (``app.db.migrate``); ``tests/test_migrations.py`` checks that
:data:`HEAD` is Alembic's head and that :func:`database_revision` reads what
Alembic wrote.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

__all__ = ["HEAD", "VERSION_TABLE", "database_revision"]

HEAD = "0020"  # the newest revision in migrations/versions; bump it with each new one
VERSION_TABLE = "alembic_version"


async def database_revision(conn: AsyncConnection) -> str | None:
    """The revision stamped in the database; None before its first migration."""
    present = await conn.run_sync(lambda sync: sa.inspect(sync).has_table(VERSION_TABLE))
    if not present:
        return None
    version = sa.table(VERSION_TABLE, sa.column("version_num"))
    rows = (await conn.execute(sa.select(version.c.version_num))).all()
    return str(rows[0][0]) if len(rows) == 1 else None
