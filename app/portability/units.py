"""The two units of work portability needs, on both dialects.

An export is one read snapshot however long it streams (PostgreSQL:
``REPEATABLE READ READ ONLY``; SQLite: one deferred transaction, one WAL
snapshot); an import is one write transaction covering everything it
touches. Both are opened by the caller of the route, not by the request's
own dependency, because the export outlives the handler (it is streamed)
and the import validates for a long time before it may take a lock.

Shaped like ``app.db.transactions.transaction`` (issue 12) so that once it
lands these become thin aliases of it.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

__all__ = ["read_snapshot", "write_unit"]


async def _sqlite_begin(conn: AsyncConnection, statement: str) -> None:
    """Begin on SQLite unless the engine already did (the driver never BEGINs before a read)."""
    raw = await conn.get_raw_connection()
    driver = raw.driver_connection
    if driver is not None and not driver.in_transaction:
        await conn.exec_driver_sql(statement)


@contextlib.asynccontextmanager
async def read_snapshot(engine: AsyncEngine) -> AsyncIterator[AsyncConnection]:
    async with engine.connect() as conn:
        if conn.dialect.name == "postgresql":
            await conn.execution_options(
                isolation_level="REPEATABLE READ", postgresql_readonly=True
            )
        async with conn.begin():
            if conn.dialect.name == "sqlite":
                await _sqlite_begin(conn, "BEGIN")
                await conn.exec_driver_sql("SELECT 1 FROM sqlite_master LIMIT 1")  # the snapshot
            yield conn


@contextlib.asynccontextmanager
async def write_unit(engine: AsyncEngine) -> AsyncIterator[AsyncConnection]:
    """One write transaction; on SQLite it holds the write lock from its first statement."""
    async with engine.connect() as conn:
        if conn.dialect.name == "postgresql":
            await conn.execution_options(isolation_level="READ COMMITTED")
        async with conn.begin():
            if conn.dialect.name == "sqlite":
                await _sqlite_begin(conn, "BEGIN IMMEDIATE")
            yield conn
