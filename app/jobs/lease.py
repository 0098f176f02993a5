"""Database leases: exactly one process runs each background job.

``daybook serve --workers N`` (or several servers on one database) starts
the same lifespan in every process. The background jobs (the embedding
worker, webhook delivery, the trash retention purge) are safe to run twice,
but running them N times costs N model loads and N pollers; so each runs
under a lease, a ``job_lease`` row (migration 0016) naming its holder and
when the lease runs out. A process takes the row when it is free or expired
(one ``INSERT ... ON CONFLICT DO UPDATE ... WHERE`` on both dialects, so two
takers cannot both win), renews it every third of its duration while the
job runs, and cancels the job when a renewal fails (another process took an
expired lease: this one was stalled or cut off). A process killed outright
leaves a lease that runs out after :data:`TTL_MS`; another process then takes
over. State lives in the database, not in the process, so a takeover needs
no hand-off.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import structlog
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncEngine

from app.db.schema import job_lease
from app.db.transactions import write_transaction

__all__ = ["TTL_MS", "holder_id", "leased", "release", "run_leased", "take"]

log = structlog.get_logger("daybook.jobs")

TTL_MS = 15_000


def holder_id() -> str:
    """This process, as a lease holder: host, pid and a random tag (pids are reused)."""
    return f"{socket.gethostname()[:64]}:{os.getpid()}:{secrets.token_hex(4)}"


def _now_ms() -> int:
    return int(time.time() * 1000)


async def take(engine: AsyncEngine, name: str, holder: str, ttl_ms: int = TTL_MS) -> bool:
    """Take or renew ``name`` for ``holder``: True when ``holder`` holds it now."""
    now = _now_ms()
    insert = (postgresql.insert if engine.dialect.name == "postgresql" else sqlite.insert)(
        job_lease
    )
    stmt = (
        insert.values(name=name, holder=holder, expires_ms=now + ttl_ms)
        .on_conflict_do_update(
            index_elements=[job_lease.c.name],
            set_={"holder": insert.excluded.holder, "expires_ms": insert.excluded.expires_ms},
            where=(job_lease.c.holder == holder) | (job_lease.c.expires_ms < now),
        )
        .returning(job_lease.c.holder)
    )
    async with write_transaction(engine) as conn:
        return (await conn.execute(stmt)).first() is not None


async def release(engine: AsyncEngine, name: str, holder: str) -> None:
    async with write_transaction(engine) as conn:
        await conn.execute(
            job_lease.delete().where(job_lease.c.name == name, job_lease.c.holder == holder)
        )


async def run_leased(
    engine: AsyncEngine,
    name: str,
    job: Callable[[], Awaitable[Any]],
    *,
    holder: str | None = None,
    ttl_ms: int = TTL_MS,
) -> None:
    """Run ``job`` whenever this process holds the lease ``name``; forever, until cancelled."""
    holder = holder or holder_id()
    renew = ttl_ms / 3000
    while True:
        try:
            got = await take(engine, name, holder, ttl_ms)
        except Exception as exc:  # the database may be briefly unavailable
            log.warning("lease.take_failed", job=name, error=f"{type(exc).__name__}: {exc}")
            got = False
        if not got:
            await asyncio.sleep(renew)
            continue
        log.info("lease.taken", job=name, holder=holder)
        task = asyncio.ensure_future(job())
        try:
            while not task.done():
                await asyncio.wait({task}, timeout=renew)
                if task.done():
                    break
                try:
                    held = await take(engine, name, holder, ttl_ms)
                except Exception as exc:
                    log.warning(
                        "lease.renew_failed", job=name, error=f"{type(exc).__name__}: {exc}"
                    )
                    held = True  # keep going until the lease would have run out
                if not held:
                    log.warning("lease.lost", job=name, holder=holder)
                    break
        finally:
            if not task.done():
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if task.done() and not task.cancelled() and task.exception() is not None:
            log.error("lease.job_failed", job=name, error=repr(task.exception()))
        await asyncio.sleep(renew)


@contextlib.asynccontextmanager
async def leased(
    engine: AsyncEngine,
    name: str,
    job: Callable[[], Awaitable[Any]],
    *,
    holder: str | None = None,
    ttl_ms: int = TTL_MS,
) -> AsyncIterator[None]:
    """A lifespan: :func:`run_leased` in the background, the lease released at exit."""
    holder = holder or holder_id()
    task = asyncio.create_task(run_leased(engine, name, job, holder=holder, ttl_ms=ttl_ms))
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        with contextlib.suppress(Exception):
            await release(engine, name, holder)
