"""Daybook keeps the planner's statistics itself (issue 15, ``app.db.statistics``).

A fresh install has none; after an import (the archive import, the route and
the CLI share it) the database has statistics for ``memo`` on both dialects,
and the periodic check analyses a database whose ``memo`` grew past its
recorded count, without a benchmark or an operator running ``ANALYZE``.
"""

from __future__ import annotations

import asyncio
import pathlib
import shutil
from typing import Any

import pytest
import sqlalchemy as sa

from app.db import statistics
from app.db.engine import create_engine
from app.db.schema import memo, user_account
from tests.conftest import Actor, Templates
from tests.portability.archives import archive, record


async def _memo_stats(url: str) -> Any:
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            if conn.dialect.name == "sqlite":
                found = await conn.exec_driver_sql(
                    "SELECT 1 FROM sqlite_master WHERE name = 'sqlite_stat1'"
                )
                if found.first() is None:
                    return None
                return (
                    await conn.exec_driver_sql(
                        "SELECT stat FROM sqlite_stat1 WHERE tbl = 'memo' LIMIT 1"
                    )
                ).scalar()
            return (
                await conn.exec_driver_sql(
                    "SELECT last_analyze FROM pg_stat_user_tables WHERE relname = 'memo'"
                )
            ).scalar()
    finally:
        await engine.dispose()


async def test_an_import_leaves_statistics(alice: Actor, database_url: str) -> None:
    assert await _memo_stats(database_url) is None  # as installed
    memos = {
        f"imp{i:03d}": (record(f"imp{i:03d}", creator="alice"), f"imported {i} #t{i % 3}".encode())
        for i in range(30)
    }
    r = await alice.post("/api/v1/users/alice:importMemos", content=archive(memos))
    assert r.status_code == 200, r.text
    assert r.json()["inserted"] == 30
    for _ in range(50):  # PostgreSQL's statistics collector reports asynchronously
        stats = await _memo_stats(database_url)
        if stats is not None:
            break
        await asyncio.sleep(0.1)
    assert stats is not None
    if isinstance(stats, str):  # SQLite: the imported rows are counted
        assert statistics.recorded_rows(stats) == 30


async def test_a_validate_only_import_analyses_nothing(alice: Actor, database_url: str) -> None:
    data = archive({"v1": (record("v1", creator="alice"), b"x")})
    r = await alice.post("/api/v1/users/alice:importMemos?validateOnly=true", content=data)
    assert r.status_code == 200, r.text
    await asyncio.sleep(0.2)
    assert await _memo_stats(database_url) is None


@pytest.mark.parametrize(
    ("recorded", "current", "stale"),
    [(None, 0, False), (None, 1, True), (100, 150, False), (100, 201, True), (1000, 400, True)],
)
def test_staleness(recorded: int | None, current: int, stale: bool) -> None:
    assert statistics.is_stale(recorded, current) is stale


def test_recorded_rows() -> None:
    assert statistics.recorded_rows("3000 2 1") == 3000
    assert statistics.recorded_rows(None) is None
    assert statistics.recorded_rows("") is None


def test_periodic_check_analyses_a_grown_sqlite_database(
    templates: Templates, tmp_path: pathlib.Path
) -> None:
    target = tmp_path / "grown.db"
    shutil.copyfile(templates.sqlite_file, target)
    url = f"sqlite:///{target}"

    async def go() -> tuple[bool, bool, bool, Any]:
        engine = create_engine(url)
        try:
            first = await statistics.keep(engine)  # empty: nothing to analyse
            async with engine.begin() as conn:
                await conn.execute(
                    sa.insert(user_account),
                    [
                        {
                            "id": 1,
                            "username": "u",
                            "role": "USER",
                            "state": "NORMAL",
                            "password_hash": "x",
                            "created_ts": 0,
                            "updated_ts": 0,
                        }
                    ],
                )
                await conn.execute(
                    sa.insert(memo),
                    [
                        {
                            "uid": f"m{i}",
                            "creator_id": 1,
                            "content": "x",
                            "visibility": "PRIVATE",
                            "state": "NORMAL",
                            "created_ts": i,
                            "updated_ts": i,
                            "origin": {},
                        }
                        for i in range(300)
                    ],
                )
            second = await statistics.keep(engine)  # grown from nothing: analysed
            third = await statistics.keep(engine)  # unchanged since: PRAGMA optimize only
        finally:
            await engine.dispose()
        return first, second, third, await _memo_stats(url)

    first, second, third, stats = asyncio.run(go())
    assert (first, second, third) == (False, True, False)
    assert statistics.recorded_rows(stats) == 300


async def test_periodic_check_analyses_a_grown_postgresql_database(
    dialect: str, database_url: str
) -> None:
    """PostgreSQL too: a table bulk-loaded since the last ANALYZE (``reltuples`` still
    -1) is analysed at the next check, not when autovacuum gets to it."""
    if dialect != "postgresql":
        pytest.skip("the SQLite keeper is checked above")
    engine = create_engine(database_url)
    try:
        assert await statistics.keep(engine) is False  # empty: nothing to analyse
        async with engine.begin() as conn:
            await conn.execute(
                sa.insert(user_account),
                [
                    {
                        "id": 1,
                        "username": "u",
                        "role": "USER",
                        "state": "NORMAL",
                        "password_hash": "x",
                        "created_ts": 0,
                        "updated_ts": 0,
                    }
                ],
            )
            await conn.execute(
                sa.insert(memo),
                [
                    {
                        "uid": f"m{i}",
                        "creator_id": 1,
                        "content": "x",
                        "visibility": "PRIVATE",
                        "state": "NORMAL",
                        "created_ts": i,
                        "updated_ts": i,
                        "origin": {},
                    }
                    for i in range(300)
                ],
            )
        async with engine.connect() as conn:
            assert (await statistics.memo_statistics(conn))[0] is None
        assert await statistics.keep(engine) is True  # grown from nothing: analysed
        async with engine.connect() as conn:
            assert await statistics.memo_statistics(conn) == (300, 300)
        assert await statistics.keep(engine) is False  # unchanged since
    finally:
        await engine.dispose()
