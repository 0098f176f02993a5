"""The write turn between processes on one SQLite file (decision 0028).

Each :class:`ProcessTurn` opens its own descriptor, so two of them in one
process exclude each other exactly as two workers do.
"""

from __future__ import annotations

import asyncio
import pathlib
import time
from typing import Any

import pytest
import sqlalchemy as sa

from app.db.engine import create_engine
from app.db.transactions import (
    BATCH,
    DatabaseBusy,
    ProcessTurn,
    WriterGate,
    turn_file,
    write_transaction,
)


def test_turn_file_only_for_files() -> None:
    assert turn_file("/data/daybook.db") == "/data/daybook.db-writer.lock"
    assert turn_file(":memory:") is None
    assert turn_file(None) is None
    assert turn_file("file:x?mode=memory&cache=shared") is None


async def test_one_turn_at_a_time_and_handed_over_at_once(tmp_path: pathlib.Path) -> None:
    path = str(tmp_path / "db-writer.lock")
    first, second = ProcessTurn(path), ProcessTurn(path)
    await first.acquire(1)
    with pytest.raises(DatabaseBusy):
        await second.acquire(0.05)
    waiting = asyncio.create_task(second.acquire(5))
    await asyncio.sleep(0.05)
    assert not waiting.done()
    released = time.monotonic()
    first.release()
    await waiting
    assert time.monotonic() - released < 0.5  # polled, not slept on
    second.release()


async def test_a_cancelled_waiter_leaves_no_lock_behind(tmp_path: pathlib.Path) -> None:
    path = str(tmp_path / "db-writer.lock")
    holder, gone, later = ProcessTurn(path), ProcessTurn(path), ProcessTurn(path)
    await holder.acquire(1)
    waiting = asyncio.create_task(gone.acquire(5))
    await asyncio.sleep(0.05)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    holder.release()
    await later.acquire(0.5)  # nobody kept it
    later.release()


async def test_two_engines_on_one_file_write_without_busy(tmp_path: pathlib.Path) -> None:
    """Two 'workers' (engines, each with its own gate and turn): 40 writes, none refused."""
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    engines = [create_engine(url) for _ in range(2)]
    async with write_transaction(engines[0]) as conn:
        await conn.exec_driver_sql("CREATE TABLE t (n INTEGER)")

    async def write(engine_index: int, n: int) -> None:
        async with write_transaction(engines[engine_index]) as conn:
            await conn.execute(sa.text("INSERT INTO t (n) VALUES (:n)"), {"n": n})
            await asyncio.sleep(0.002)  # a turn that spans event-loop round trips

    try:
        await asyncio.gather(*(write(i % 2, i) for i in range(40)))
        async with engines[1].connect() as conn:
            count = (await conn.execute(sa.text("SELECT count(*) FROM t"))).scalar_one()
        assert count == 40
        assert (tmp_path / "shared.db-writer.lock").exists()  # the turn was taken
    finally:
        for engine in engines:
            await engine.dispose()


class CountingTurn(ProcessTurn):
    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.taken = 0

    async def acquire(self, wait: float) -> None:
        await super().acquire(wait)
        self.taken += 1


class Holder:
    """What the gate needs of a connection (app.db.driver.DirectConnection)."""

    begun = 0.0

    def end_turn(self) -> None:
        return None


async def _writers(gate: WriterGate, n: int, hold: float) -> None:
    async def one() -> None:
        holder: Any = Holder()
        await gate.acquire(holder, 5)
        if hold:
            time.sleep(hold)  # noqa: ASYNC251 - a turn on the loop thread, as in decision 0042
        gate.release(holder)

    first: Any = Holder()
    await gate.acquire(first, 5)  # the others queue behind this one
    tasks = [asyncio.create_task(one()) for _ in range(n)]
    for _ in range(3):
        await asyncio.sleep(0)
    gate.release(first)
    await asyncio.gather(*tasks)


async def test_queued_writers_share_one_process_turn_then_give_it_back(
    tmp_path: pathlib.Path,
) -> None:
    """Decision 0043: writers queued behind the gate run within one process turn,
    and the turn goes back to the other processes as soon as none is left."""
    path = str(tmp_path / "db-writer.lock")
    turn = CountingTurn(path)
    gate = WriterGate(turn)
    await _writers(gate, 8, 0.0)
    assert turn.taken == 1  # the first writer's, kept for the seven behind it
    await asyncio.sleep(0)  # the idle check runs after the woken writers
    other = ProcessTurn(path)
    await other.acquire(0.05)  # free again: another process may write
    other.release()


async def test_a_process_turn_is_kept_no_longer_than_the_batch(tmp_path: pathlib.Path) -> None:
    path = str(tmp_path / "db-writer.lock")
    turn = CountingTurn(path)
    gate = WriterGate(turn)
    await _writers(gate, 4, BATCH * 1.2)  # every turn outlasts the batch
    assert turn.taken == 4  # kept once (the first turn was short), then taken again by each
    await asyncio.sleep(0)
    other = ProcessTurn(path)
    await other.acquire(0.05)
    other.release()
