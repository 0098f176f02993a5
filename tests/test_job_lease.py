"""Job leases (app.jobs.lease): one holder per job, on both dialects.

Two holders race for one lease: exactly one wins, every time; the holder
renews, the other cannot take it until it runs out; a released lease is
free at once. ``run_leased`` runs the job only while holding the lease and
stops it when the lease is taken away.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from app.db.engine import create_engine
from app.db.schema import job_lease
from app.db.transactions import write_transaction
from app.jobs.lease import release, run_leased, take


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    eng = create_engine(database_url)
    yield eng
    await eng.dispose()


async def test_one_holder_at_a_time(engine: AsyncEngine) -> None:
    for round_ in range(5):  # concurrent takers: exactly one wins each round
        name = f"job{round_}"
        won = await asyncio.gather(*(take(engine, name, f"h{i}", 60_000) for i in range(6)))
        assert won.count(True) == 1
    assert await take(engine, "a", "one", 60_000)
    assert await take(engine, "a", "one", 60_000)  # renewal
    assert not await take(engine, "a", "two", 60_000)  # held, not expired
    await release(engine, "a", "two")  # not the holder: nothing happens
    assert not await take(engine, "a", "two", 60_000)
    await release(engine, "a", "one")
    assert await take(engine, "a", "two", 60_000)  # released: free at once
    await take(engine, "c", "x", -1)  # taken already expired
    assert await take(engine, "c", "y", 60_000)  # an expired lease is anyone's


async def test_run_leased_stops_the_job_when_the_lease_is_lost(engine: AsyncEngine) -> None:
    running = asyncio.Event()
    stopped = asyncio.Event()

    async def job() -> None:
        running.set()
        try:
            await asyncio.sleep(3600)
        finally:
            stopped.set()

    task = asyncio.create_task(run_leased(engine, "j", job, holder="me", ttl_ms=600))
    try:
        await asyncio.wait_for(running.wait(), 10)
        async with write_transaction(engine) as conn:  # taken by another (after a stall)
            await conn.execute(
                job_lease.update().where(job_lease.c.name == "j").values(holder="other")
            )
        await asyncio.wait_for(stopped.wait(), 10)
        async with engine.connect() as conn:
            holder = (
                await conn.execute(sa.select(job_lease.c.holder).where(job_lease.c.name == "j"))
            ).scalar_one()
        assert holder == "other"
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
