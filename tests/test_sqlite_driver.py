"""SQLite statements take one thread hop, and none inside a write turn (app.db.driver, decision 0042).

What must hold for the write turn to run on the event loop's thread: its
statements really run there (and reads do not), the turn hops again once its
inline budget is spent, a foreign writer holding the lock never blocks the
loop (the inline ``BEGIN IMMEDIATE`` does not wait; the waiting tries go to
the connection's thread), and an error inside the turn still rolls the whole
write back. SQLite only: PostgreSQL keeps asyncpg.
"""

from __future__ import annotations

import asyncio
import itertools
import pathlib
import sqlite3
import threading
import time
from collections.abc import AsyncIterator

import aiosqlite
import pytest
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.db import driver
from app.db.engine import create_engine
from app.db.transactions import read_transaction, write_transaction


@pytest.fixture
async def engine(tmp_path: pathlib.Path) -> AsyncIterator[AsyncEngine]:
    e = create_engine(f"sqlite:///{tmp_path / 'driver.db'}")
    async with write_transaction(e) as conn:
        await conn.exec_driver_sql("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT UNIQUE)")
    yield e
    await e.dispose()


async def _thread_of_statements(conn: AsyncConnection) -> int:
    """The thread SQLite ran a statement on (a function registered on this connection)."""
    raw = await conn.get_raw_connection()
    holder = raw.dbapi_connection
    assert isinstance(holder, driver.DirectConnection)
    holder.raw.create_function("tid", 0, threading.get_ident)
    return int((await conn.exec_driver_sql("SELECT tid()")).scalar_one())


async def test_a_write_turn_runs_on_the_loop_thread_and_a_read_does_not(
    engine: AsyncEngine,
) -> None:
    loop_thread = threading.get_ident()
    async with write_transaction(engine) as conn:
        await conn.exec_driver_sql("INSERT INTO t (v) VALUES ('a')")
        assert await _thread_of_statements(conn) == loop_thread
    async with read_transaction(engine) as conn:
        assert await _thread_of_statements(conn) != loop_thread
        assert (await conn.exec_driver_sql("SELECT v FROM t")).scalars().all() == ["a"]


async def test_a_long_turn_hops_again_after_its_budget(engine: AsyncEngine) -> None:
    loop_thread = threading.get_ident()
    async with write_transaction(engine) as conn:
        await conn.exec_driver_sql("INSERT INTO t (v) VALUES ('first')")
        assert await _thread_of_statements(conn) == loop_thread
        raw = await conn.get_raw_connection()
        holder = raw.dbapi_connection
        assert isinstance(holder, driver.DirectConnection)
        holder.inline_until = time.perf_counter() - 1  # the budget is spent
        assert await _thread_of_statements(conn) != loop_thread
        await conn.exec_driver_sql("INSERT INTO t (v) VALUES ('second')")  # still in the turn
    async with read_transaction(engine) as conn:
        values = (await conn.exec_driver_sql("SELECT v FROM t ORDER BY id")).scalars().all()
    assert values == ["first", "second"]


async def test_a_foreign_writer_never_blocks_the_loop(
    engine: AsyncEngine, tmp_path: pathlib.Path
) -> None:
    """Another program holds the write lock for 0.6 s: the loop keeps ticking, then the write lands."""
    foreign = sqlite3.connect(tmp_path / "driver.db", isolation_level=None)
    foreign.execute("BEGIN IMMEDIATE")
    ticks: list[float] = []
    stop = asyncio.Event()

    async def ticker() -> None:
        while not stop.is_set():
            ticks.append(time.perf_counter())
            await asyncio.sleep(0.01)

    async def write() -> None:
        async with write_transaction(engine) as conn:
            await conn.exec_driver_sql("INSERT INTO t (v) VALUES ('after')")

    tick = asyncio.ensure_future(ticker())
    writer = asyncio.ensure_future(write())
    await asyncio.sleep(0.6)
    assert not writer.done()  # it waits for the lock...
    foreign.execute("ROLLBACK")
    foreign.close()
    await asyncio.wait_for(writer, 10)
    stop.set()
    await tick
    gaps = [b - a for a, b in itertools.pairwise(ticks)]
    assert len(ticks) > 30 and max(gaps) < 0.3, max(gaps)  # ...without holding the loop
    async with read_transaction(engine) as conn:
        assert (await conn.exec_driver_sql("SELECT v FROM t")).scalars().all() == ["after"]


async def test_an_error_inside_the_turn_rolls_the_whole_write_back(engine: AsyncEngine) -> None:
    async with write_transaction(engine) as conn:
        await conn.exec_driver_sql("INSERT INTO t (v) VALUES ('kept')")
    with pytest.raises(IntegrityError):
        async with write_transaction(engine) as conn:
            await conn.exec_driver_sql("INSERT INTO t (v) VALUES ('lost')")
            await conn.exec_driver_sql("INSERT INTO t (v) VALUES ('kept')")  # UNIQUE
    async with read_transaction(engine) as conn:
        assert (await conn.exec_driver_sql("SELECT v FROM t")).scalars().all() == ["kept"]
        raw = await conn.get_raw_connection()
        holder = raw.dbapi_connection
        assert isinstance(holder, driver.DirectConnection) and not holder.writing


def test_aiosqlite_still_has_what_the_driver_uses() -> None:
    """``Connection._conn`` and ``_execute`` are aiosqlite's private API: a release
    that drops them must fail here, not in production."""
    assert isinstance(aiosqlite.Connection._conn, property)
    assert asyncio.iscoroutinefunction(aiosqlite.Connection._execute)
