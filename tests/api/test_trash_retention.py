"""The retention job (app.memos.trash.purge_expired): on time, files included, claimed in the DB.

Two "processes" (two engines on one database, run concurrently) purge every
expired group exactly once between them; a claim abandoned by a crash is
taken over only after its lease.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import sqlalchemy as sa
from litestar.testing import AsyncTestClient

from app.attachments.storage import store_from_settings
from app.db.engine import create_engine
from app.db.schema import memo, memo_event, memo_trash
from app.memos.trash import CLAIM_LEASE, DAY, claim_expired, purge_expired, purge_until_done
from app.settings import Settings
from tests.conftest import Actor
from tests.related.helpers import comment, upload


async def _trash_some(alice: Actor, n: int) -> list[dict[str, Any]]:
    made = []
    for i in range(n):
        m = await alice.memo(f"old {i}")
        await upload(alice, f"f{i}.txt", f"bytes {i}".encode(), memo=m["name"])
        await comment(alice, m, f"comment {i}")
        assert (await alice.delete(f"/api/v1/{m['name']}")).status_code == 200
        made.append(m)
    return made


async def _count(url: str, stmt: Any) -> int:
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            return int((await conn.execute(stmt)).scalar_one())
    finally:
        await engine.dispose()


async def test_two_purgers_purge_every_expired_group_exactly_once(
    client: AsyncTestClient[Any], alice: Actor, settings: Settings
) -> None:
    r = await alice.patch("/api/v1/instance/settings/TRASH", json={"retentionDays": 1})
    assert r.status_code == 200, r.text
    made = await _trash_some(alice, 6)
    keep = await alice.memo("live")
    files = list((settings.data_dir / "attachments").glob("*"))
    assert len(files) == 6
    store = store_from_settings(settings.resolved())
    url = settings.database_url
    engines = [create_engine(url), create_engine(url)]
    try:
        now = int(time.time())
        # Not yet expired: nothing happens.
        assert (await purge_expired(engines[0], store, now + DAY - 60)).groups == 0
        assert all(f.exists() for f in files)
        runs = await asyncio.gather(
            *(purge_until_done(e, store, now + DAY + 1, limit=2) for e in engines)
        )
    finally:
        for e in engines:
            await e.dispose()
    assert sum(r.groups for r in runs) == 6, runs
    assert sum(r.memos for r in runs) == 12, runs  # each memo with its comment
    assert not any(f.exists() for f in files)
    assert await _count(url, sa.select(sa.func.count()).select_from(memo_trash)) == 0
    deletes = sa.select(sa.func.count()).where(memo_event.c.kind == "DELETE")
    assert await _count(url, deletes) == 12  # one DELETE event per memo, never two
    remaining = sa.select(sa.func.count()).select_from(memo)
    assert await _count(url, remaining) == 1
    assert (await alice.get(f"/api/v1/{keep['name']}")).status_code == 200
    r = await alice.post(f"/api/v1/{made[0]['name']}:undelete", json={})
    assert r.status_code == 404


async def test_a_second_purger_claims_other_rows_while_the_first_claim_is_open(
    alice: Actor, settings: Settings
) -> None:
    """The first claim's transaction still open (its rows locked on PostgreSQL,
    the write lock held on SQLite until it commits): the second purger claims
    the *other* expired groups, not none, so two processes share the work."""
    await alice.patch("/api/v1/instance/settings/TRASH", json={"retentionDays": 1})
    await _trash_some(alice, 4)
    now = int(time.time()) + DAY + 1
    engines = [create_engine(settings.database_url), create_engine(settings.database_url)]
    t = memo_trash.c
    try:
        first = sa.select(t.memo_id).where(t.memo_id == t.root_id).order_by(t.memo_id).limit(2)
        claim = (
            memo_trash.update()
            .where(t.memo_id.in_(first.scalar_subquery()))
            .values(claim_token="first", claimed_ts=now)
        )
        conn = await engines[0].connect()
        try:
            await conn.begin()
            await conn.execute(claim)
            if conn.dialect.name == "sqlite":
                await conn.commit()  # one writer at a time: the second would wait anyway
            second = asyncio.create_task(claim_expired(engines[1], now, limit=2))
            done, _ = await asyncio.wait({second}, timeout=10)
            assert done, "the second purger waited for the first claim's rows"
            _, roots = second.result()
            if conn.in_transaction():
                await conn.commit()
        finally:
            await conn.close()
        async with engines[0].connect() as conn:
            claimed = (
                await conn.execute(sa.select(t.memo_id).where(t.claim_token == "first"))
            ).scalars()
            mine = set(claimed)
    finally:
        for e in engines:
            await e.dispose()
    assert len(roots) == 2 and not set(roots) & mine, (roots, mine)


async def test_an_abandoned_claim_is_taken_over_after_its_lease(
    alice: Actor, settings: Settings
) -> None:
    await alice.patch("/api/v1/instance/settings/TRASH", json={"retentionDays": 1})
    (m,) = await _trash_some(alice, 1)
    store = store_from_settings(settings.resolved())
    engine = create_engine(settings.database_url)
    try:
        now = int(time.time()) + DAY + 1
        token, roots = await claim_expired(engine, now)  # ...and this "process" dies here
        assert token and len(roots) == 1
        # While claimed: neither restored by its owner nor purged by another process.
        r = await alice.post(f"/api/v1/{m['name']}:undelete", json={})
        assert r.status_code == 412, r.text
        assert (await purge_expired(engine, store, now + 10)).groups == 0
        run = await purge_expired(engine, store, now + CLAIM_LEASE + 1)
        assert run.groups == 1 and run.memos == 2 and run.files == 1
    finally:
        await engine.dispose()
    assert list((settings.data_dir / "attachments").glob("*")) == []


async def test_retention_zero_keeps_the_trash(alice: Actor, settings: Settings) -> None:
    await alice.patch("/api/v1/instance/settings/TRASH", json={"retentionDays": 0})
    await _trash_some(alice, 1)
    engine = create_engine(settings.database_url)
    try:
        store = store_from_settings(settings.resolved())
        run = await purge_expired(engine, store, int(time.time()) + 100 * 365 * DAY)
    finally:
        await engine.dispose()
    assert run.groups == 0
    assert len((await alice.get("/api/v1/users/alice/trash")).json()["memos"]) == 1


async def test_the_trash_setting_refuses_another_settings_field_of_the_wrong_type(
    alice: Actor,
) -> None:
    """``instance/settings/{setting}`` takes one body for every setting; at TRASH a
    ``generalSetting`` whose flag is not a boolean is refused as it is elsewhere
    (found by the schemathesis fuzz), and nothing is written."""
    bad = {"retentionDays": 5, "generalSetting": {"disallowUserRegistration": {}}}
    r = await alice.patch("/api/v1/instance/settings/TRASH", json=bad)
    assert r.status_code == 400, r.text
    assert "disallowUserRegistration" in r.text
    r = await alice.get("/api/v1/instance/settings/TRASH")
    assert r.status_code == 200 and r.json()["retentionDays"] != 5, r.text
    r = await alice.patch(
        "/api/v1/instance/settings/TRASH",
        json={"retentionDays": 5, "generalSetting": {"disallowUserRegistration": True}},
    )
    assert r.status_code == 200 and r.json()["retentionDays"] == 5, r.text
