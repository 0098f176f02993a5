"""Liveness and readiness probes.

``/healthz`` says the process runs. ``/readyz`` says it can serve: the
database answers, its migrations are at head, it *accepts a write* (a
committed upsert of one ``instance_setting`` row, so a full disk or a
read-only volume shows here rather than on the next user's write), and it
passes a quick integrity check (SQLite ``PRAGMA quick_check``, bounded by a
progress-handler budget and re-run at most every :data:`INTEGRITY_EVERY`
seconds; PostgreSQL keeps its own checksums, so a read of the core tables).
Everything is bounded by :data:`READY_BUDGET`: a database busy past it is
"not ready", never a hanging probe.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa
import structlog
from litestar import Response, get
from litestar.datastructures import State
from sqlalchemy.ext.asyncio import AsyncEngine

from app.db import schema
from app.db.faults import classify
from app.db.revision import HEAD, database_revision
from app.db.transactions import read_transaction, write_transaction
from app.settings import Settings

log = structlog.get_logger("daybook.health")

READY_BUDGET = 3.0  # seconds for the whole probe
INTEGRITY_EVERY = 300.0  # seconds between two integrity checks of one engine
INTEGRITY_STEPS = 2_000_000  # SQLite VM steps the quick_check may take (about a second)
PROBE = "READINESS"  # the instance_setting row the write probe upserts
MIN_FREE_BYTES = 8 * 1024 * 1024  # below this on the database's or attachments' disk: not ready


@dataclass
class _Integrity:
    checked_at: float = -INTEGRITY_EVERY
    problem: str | None = None


@get("/healthz", operation_id="Health_Live", exclude_from_auth=True, include_in_schema=False)
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


async def _write_probe(engine: AsyncEngine) -> None:
    table = schema.instance_setting
    now = int(time.time())
    async with write_transaction(engine) as conn:
        done = await conn.execute(
            table.update().where(table.c.name == PROBE).values(value={"ts": now})
        )
        if done.rowcount == 0:
            await conn.execute(table.insert().values(name=PROBE, value={"ts": now}))


async def _sqlite_quick_check(engine: AsyncEngine) -> str | None:
    async with read_transaction(engine) as conn:
        raw = await conn.get_raw_connection()
        driver: Any = raw.driver_connection
        steps = 0

        def budget() -> int:
            nonlocal steps
            steps += 1
            return 1 if steps * 1000 > INTEGRITY_STEPS else 0

        await driver.set_progress_handler(budget, 1000)
        try:
            rows = (await conn.exec_driver_sql("PRAGMA quick_check(5)")).scalars().all()
        except sa.exc.OperationalError as exc:
            if "interrupted" in str(exc.orig):
                log.info("integrity check skipped: over its budget (large database)")
                return None
            raise
        finally:
            await driver.set_progress_handler(None, 1000)
    return None if list(rows) == ["ok"] else "; ".join(str(r) for r in rows)[:500]


async def _pg_check(engine: AsyncEngine) -> str | None:
    async with read_transaction(engine) as conn:
        for table in (schema.memo, schema.user_account, schema.memo_event):
            await conn.execute(sa.select(sa.literal(1)).select_from(table).limit(1))
    return None


async def _integrity_problem(engine: AsyncEngine) -> str | None:
    state = getattr(engine.sync_engine, "_daybook_integrity", None)
    if not isinstance(state, _Integrity):
        state = _Integrity()
        setattr(engine.sync_engine, "_daybook_integrity", state)  # noqa: B010
    if time.monotonic() - state.checked_at < INTEGRITY_EVERY and state.problem is None:
        return None
    try:
        if engine.dialect.name == "sqlite":
            state.problem = await _sqlite_quick_check(engine)
        else:
            state.problem = await _pg_check(engine)
    except sa.exc.DatabaseError as exc:  # "file is not a database", "malformed"
        if classify(exc) is not None:
            raise
        state.problem = str(exc.orig)[:500]
    state.checked_at = time.monotonic()
    return state.problem


def _disk_problem(engine: AsyncEngine, settings: Settings) -> str | None:
    """Too little free space where this process writes (a write that fails
    for space can leave room for the probe's own small write)."""
    places = []
    if engine.dialect.name == "sqlite" and engine.url.database:
        places.append(Path(engine.url.database).resolve().parent)
    if settings.storage == "local":
        places.append(Path(settings.storage_dir) if settings.storage_dir else settings.data_dir)
    for place in places:
        with contextlib.suppress(OSError):
            stat = os.statvfs(place)
            free = stat.f_bavail * stat.f_frsize
            if free < MIN_FREE_BYTES:
                return f"disk nearly full: {free // 1024} KiB free under {place}"
    return None


async def _ready(engine: AsyncEngine, settings: Settings) -> Response[dict[str, str]]:
    full = _disk_problem(engine, settings)
    if full is not None:
        return Response({"status": full}, status_code=503)
    async with read_transaction(engine) as conn:
        revision = await database_revision(conn)
    if revision != HEAD:
        return Response({"status": f"migrations pending (at {revision})"}, status_code=503)
    problem = await _integrity_problem(engine)
    if problem is not None:
        log.error("database integrity check failed", problem=problem)
        return Response({"status": f"database integrity check failed: {problem}"}, status_code=503)
    await _write_probe(engine)
    return Response({"status": "ready"})


@get("/readyz", operation_id="Health_Ready", exclude_from_auth=True, include_in_schema=False)
async def readyz(state: State) -> Response[dict[str, str]]:
    try:
        async with asyncio.timeout(READY_BUDGET):
            return await _ready(state.engine, state.settings)
    except TimeoutError:
        return Response({"status": "database busy"}, status_code=503)
    except Exception as exc:  # any failure means "not ready", never a 500
        fault = classify(exc)
        if fault is not None and fault.status == 507:
            return Response({"status": fault.message}, status_code=503)
        detail = fault.message if fault is not None else "database unreachable or unusable"
        if fault is None:
            log.warning("not ready", error=type(exc).__name__)
        return Response({"status": detail}, status_code=503)
