"""Fixtures for the filter compiler's database tests: one SQLite file and one
embedded PostgreSQL database per test module, schema plus migration 0002.

The tests are synchronous (hypothesis drives them); database work runs on a
private event loop in a background thread, so these fixtures never touch the
loop pytest-asyncio manages for the rest of the suite.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import pathlib
import threading
from collections.abc import Coroutine, Iterator, Sequence
from typing import Any, TypeVar

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from app.db import sqlite_functions
from app.db.schema import metadata
from app.filter import content_index_ddl

T = TypeVar("T")
FILTER_DIALECTS = ("sqlite", "postgresql")
_db_counter = itertools.count()


class LoopThread:
    """An event loop on its own thread; ``run`` blocks until a coroutine finishes."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()


class Db:
    """One test database: run statements synchronously from test code."""

    def __init__(self, engine: AsyncEngine, runner: LoopThread) -> None:
        self.engine = engine
        self.runner = runner
        self.dialect_name = engine.dialect.name

    def execute(self, *statements: Any) -> list[Sequence[Any]]:
        async def go() -> list[Sequence[Any]]:
            out: list[Sequence[Any]] = []
            async with self.engine.begin() as conn:
                for statement in statements:
                    if isinstance(statement, tuple):
                        result = await conn.execute(*statement)
                    elif isinstance(statement, str):
                        result = await conn.exec_driver_sql(statement)
                    else:
                        result = await conn.execute(statement)
                    out.append(result.fetchall() if result.returns_rows else [])
            return out

        return self.runner.run(go())

    def maintenance(self, statement: str) -> None:
        """Run a statement outside a transaction (``VACUUM`` refuses to run inside one)."""

        async def go() -> None:
            async with self.engine.connect() as conn:
                conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
                await conn.exec_driver_sql(statement)

        self.runner.run(go())

    def scalars(self, statement: Any) -> list[Any]:
        return [row[0] for row in self.execute(statement)[0]]


@pytest.fixture(scope="session")
def loop_thread() -> Iterator[LoopThread]:
    runner = LoopThread()
    yield runner
    runner.close()


@pytest.fixture(scope="session")
def filter_pg_host(pg_root: str) -> str:
    """Socket directory of the session's embedded PostgreSQL server (tests/conftest.py)."""
    return pg_root.split("host=", 1)[1]


async def _create_schema(engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            # The audience predicate's tree test (plan tests AND it in) uses ltree.
            await conn.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS ltree")
        await conn.run_sync(metadata.create_all)
        for statement in content_index_ddl(engine.dialect.name):
            await conn.exec_driver_sql(statement)


def _sqlite_engine(path: pathlib.Path) -> AsyncEngine:
    engine = create_async_engine(f"sqlite+aiosqlite:///{path}")

    @sa.event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=OFF")  # throwaway test data: skip fsyncs
        cursor.close()
        sqlite_functions.register(dbapi_connection)

    return engine


@pytest.fixture(scope="module", params=FILTER_DIALECTS)
def filter_db(
    request: pytest.FixtureRequest,
    loop_thread: LoopThread,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Db]:
    """A fresh database with the schema and the content index, per module and dialect."""
    if request.param == "sqlite":
        engine = _sqlite_engine(tmp_path_factory.mktemp("filter") / "filter.db")
    else:
        host = request.getfixturevalue("filter_pg_host")
        name = f"filter_{os.getpid()}_{next(_db_counter)}"
        admin = create_async_engine(
            f"postgresql+asyncpg://postgres@/postgres?host={host}", isolation_level="AUTOCOMMIT"
        )

        async def create() -> None:
            async with admin.connect() as conn:
                await conn.exec_driver_sql(f'CREATE DATABASE "{name}" TEMPLATE template0')
            await admin.dispose()

        loop_thread.run(create())
        engine = create_async_engine(
            f"postgresql+asyncpg://postgres@/{name}?host={host}",
            connect_args={"server_settings": {"synchronous_commit": "off"}},
        )
    loop_thread.run(_create_schema(engine))
    yield Db(engine, loop_thread)
    loop_thread.run(engine.dispose())
