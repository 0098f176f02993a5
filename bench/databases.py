"""Fresh, migrated databases for a benchmark run: a SQLite temp file or embedded PostgreSQL."""

from __future__ import annotations

import contextlib
import os
import pathlib
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace

import sqlalchemy as sa

from app.db.engine import create_engine
from app.db.migrate import upgrade
from tests.support import start_embedded_postgres

DATABASE = "daybook_bench"


@dataclass(frozen=True, slots=True)
class BenchDatabase:
    dialect: str
    url: str  # the application's URL form
    workdir: pathlib.Path
    sqlite_path: pathlib.Path | None = None
    server_version: str = ""


@contextlib.asynccontextmanager
async def fresh_database(dialect: str, workdir: pathlib.Path) -> AsyncIterator[BenchDatabase]:
    """A new, migrated database, removed afterwards."""
    if dialect == "sqlite":
        path = workdir / "daybook.db"
        db = BenchDatabase(dialect, f"sqlite:///{path}", workdir, sqlite_path=path)
        await migrate(db.url)
        yield replace(db, server_version=await server_version(db.url))
        return
    os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="xdg-", dir=workdir)
    server, host = start_embedded_postgres(workdir / "pg")
    try:
        root = f"postgresql://postgres@/postgres?host={host}"
        await _autocommit(root, f"CREATE DATABASE {DATABASE}")
        url = f"postgresql://postgres@/{DATABASE}?host={host}"
        await migrate(url)
        yield BenchDatabase(dialect, url, workdir, server_version=await server_version(url))
    finally:
        server.cleanup()


async def migrate(url: str) -> None:
    engine = create_engine(url)
    try:
        await upgrade(engine)
    finally:
        await engine.dispose()


async def server_version(url: str) -> str:
    engine = create_engine(url)
    query = "SELECT sqlite_version()" if url.startswith("sqlite") else "SHOW server_version"
    try:
        async with engine.connect() as conn:
            return str((await conn.execute(sa.text(query))).scalar_one())
    finally:
        await engine.dispose()


async def _autocommit(url: str, statement: str) -> None:
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
            await conn.execute(sa.text(statement))
    finally:
        await engine.dispose()
