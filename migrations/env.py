"""Alembic environment: one migration chain for SQLite and PostgreSQL.

The URL comes from ``config.attributes["url"]`` (set by app.db.migrate) or,
for the ``alembic`` command line, from Daybook's environment settings.
"""

from __future__ import annotations

import asyncio

from alembic import context
from sqlalchemy.engine import Connection

from app.db.engine import create_engine
from app.db.schema import metadata

config = context.config


def _url() -> str:
    url = config.attributes.get("url")
    if url:
        return str(url)
    from app.settings import load_settings

    return load_settings().database_url


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


async def _run_async() -> None:
    engine = create_engine(_url())
    try:
        async with engine.connect() as connection:
            await connection.run_sync(_run)
            await connection.commit()
    finally:
        await engine.dispose()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
    else:
        asyncio.run(_run_async())


if context.is_offline_mode():
    raise SystemExit("offline (SQL script) migrations are not supported; run `daybook migrate`")
run_migrations_online()
