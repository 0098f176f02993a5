"""Alembic environment: one migration chain for SQLite and PostgreSQL.

``app.db.migrate`` hands over its own connection (``config.attributes
["connection"]``), already inside the migration's transaction and holding the
migration lock. For the ``alembic`` command line, the URL comes from
Daybook's environment settings and the same lock and transaction are taken
here.
"""

from __future__ import annotations

import asyncio

from alembic import context
from sqlalchemy.engine import Connection

from app.db.migrate import migration_engine, take_lock
from app.db.schema import metadata

config = context.config


def _url() -> str:
    url = config.attributes.get("url")
    if url:
        return str(url)
    from app.settings import load_settings

    return load_settings().resolved().database_url


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        on_version_apply=config.attributes.get("on_version_apply"),
    )
    with context.begin_transaction():
        context.run_migrations()


def _locked_run(connection: Connection) -> None:
    take_lock(connection)
    _run(connection)


async def _run_async() -> None:
    engine = migration_engine(_url())
    try:
        async with engine.connect() as connection:
            await connection.run_sync(_locked_run)
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
