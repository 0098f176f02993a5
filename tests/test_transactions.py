"""Writes are all or nothing and wait their turn; versions are compare-and-swap (issue 12).

Every test runs on SQLite and PostgreSQL, fires its requests concurrently
through one app (asyncio.gather: on PostgreSQL the transactions really
overlap in the server, on SQLite they queue for the write lock) and checks
exact outcomes in the database itself: no 500, no memo row without its tags
and CREATE event, exactly one winner of a compare-and-swap.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest
import sqlalchemy as sa
from litestar.testing import AsyncTestClient
from sqlalchemy.ext.asyncio import AsyncEngine

from app.db import schema
from app.db.engine import create_engine
from app.db.transactions import lazy_write, read_transaction, write_transaction
from app.settings import Settings
from tests.conftest import Actor

TAG = re.compile(r"#(\w+)")


@pytest.fixture
async def engine(settings: Settings) -> AsyncIterator[AsyncEngine]:
    e = create_engine(settings.database_url)
    yield e
    await e.dispose()


async def _memos(engine: AsyncEngine) -> dict[str, dict[str, Any]]:
    """Every memo with its tags and the versions of its events, read in one snapshot."""
    async with read_transaction(engine) as conn:
        rows = (await conn.execute(sa.select(schema.memo))).all()
        tags = (await conn.execute(sa.select(schema.memo_tag))).all()
        events = (await conn.execute(sa.select(schema.memo_event))).all()
    out: dict[str, dict[str, Any]] = {}
    by_id = {r.id: r.uid for r in rows}
    for r in rows:
        out[r.uid] = {"row": r, "tags": set(), "events": []}
    for t in tags:
        out[by_id[t.memo_id]]["tags"].add(t.tag)
    for e in sorted(events, key=lambda e: (e.memo_id, e.version)):
        if e.memo_id in by_id:
            out[by_id[e.memo_id]]["events"].append((e.kind, e.version))
    return out


def _complete(entry: dict[str, Any]) -> bool:
    row = entry["row"]
    return entry["tags"] == set(TAG.findall(row.content)) and entry["events"][:1] == [("CREATE", 1)]


async def test_concurrent_creates_all_succeed_complete(alice: Actor, engine: AsyncEngine) -> None:
    n = 24
    results = await asyncio.gather(
        *(alice.post("/api/v1/memos", json={"content": f"c{i} #t{i % 3} #all"}) for i in range(n))
    )
    assert Counter(r.status_code for r in results) == {200: n}
    memos = await _memos(engine)
    assert len(memos) == n
    assert all(_complete(m) for m in memos.values())


async def test_concurrent_batch_creates_exact(alice: Actor, engine: AsyncEngine) -> None:
    batches, size = 8, 5
    results = await asyncio.gather(
        *(
            alice.post(
                "/api/v1/memos:batchCreate",
                json={"memos": [{"content": f"b{b}-{i} #b{b}"} for i in range(size)]},
            )
            for b in range(batches)
        )
    )
    assert Counter(r.status_code for r in results) == {200: batches}
    memos = await _memos(engine)
    assert len(memos) == batches * size
    assert all(_complete(m) for m in memos.values())


async def test_concurrent_batch_creates_racing_for_one_id(
    alice: Actor, engine: AsyncEngine
) -> None:
    """Batches that all claim one id: one inserts it, the rest answer 409 and leave nothing."""
    n = 6
    results = await asyncio.gather(
        *(
            alice.post(
                "/api/v1/memos:batchCreate",
                json={
                    "memos": [
                        {"content": f"own {i} #x"},
                        {"memoId": "contested", "content": f"claim {i}"},
                    ]
                },
            )
            for i in range(n)
        )
    )
    assert Counter(r.status_code for r in results) == {200: 1, 409: n - 1}
    memos = await _memos(engine)
    assert len(memos) == 2  # the winner's two memos, nothing of the losers
    assert "contested" in memos
    assert all(_complete(m) for m in memos.values())


async def test_failed_batch_create_leaves_nothing(
    alice: Actor, engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fault after the first memos of a batch are written rolls all of it back.

    Before: on SQLite the SAVEPOINT's RELEASE around each memo insert committed
    the earlier memos (and their tags), so a batch failing at its third memo
    left two behind.
    """
    from app.memos import service

    real = service._event
    calls = 0

    async def failing(*args: Any, **kwargs: Any) -> None:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise RuntimeError("injected fault")
        await real(*args, **kwargs)

    monkeypatch.setattr(service, "_event", failing)
    r = await alice.post(
        "/api/v1/memos:batchCreate",
        json={"memos": [{"content": f"m{i} #tag{i}"} for i in range(5)]},
    )
    assert r.status_code == 500
    assert await _memos(engine) == {}
    async with read_transaction(engine) as conn:
        assert (
            await conn.execute(sa.select(sa.func.count()).select_from(schema.memo_tag))
        ).scalar() == 0


async def test_savepoint_release_commits_nothing(engine: AsyncEngine) -> None:
    """A released SAVEPOINT inside a write is undone with the write."""
    with pytest.raises(RuntimeError):
        async with lazy_write(engine) as conn:
            async with conn.begin_nested():
                await conn.execute(
                    schema.instance_setting.insert().values(name="probe", value={"v": 1})
                )
            raise RuntimeError("after the release")
    async with read_transaction(engine) as conn:
        found = (
            await conn.execute(
                sa.select(schema.instance_setting).where(schema.instance_setting.c.name == "probe")
            )
        ).first()
    assert found is None


async def test_read_is_one_snapshot(engine: AsyncEngine) -> None:
    """A write committed during a read transaction is invisible to it (both dialects)."""
    table = schema.instance_setting
    async with read_transaction(engine) as reader:
        before = (await reader.execute(sa.select(sa.func.count()).select_from(table))).scalar()
        async with write_transaction(engine) as writer:
            await writer.execute(table.insert().values(name="snap", value={"v": 1}))
        after = (await reader.execute(sa.select(sa.func.count()).select_from(table))).scalar()
    assert after == before
    async with read_transaction(engine) as fresh:
        now = (await fresh.execute(sa.select(sa.func.count()).select_from(table))).scalar()
    assert now == before + 1


async def test_concurrent_patches_same_if_match_exactly_one_wins(
    alice: Actor, engine: AsyncEngine
) -> None:
    m = await alice.memo("v1")
    r = await alice.get(f"/api/v1/{m['name']}")
    tag = r.headers["etag"]
    n = 10
    results = await asyncio.gather(
        *(
            alice.patch(
                f"/api/v1/{m['name']}?updateMask=content",
                json={"content": f"edit {i}"},
                headers={"If-Match": tag},
            )
            for i in range(n)
        )
    )
    assert Counter(r.status_code for r in results) == {200: 1, 412: n - 1}
    memo = (await _memos(engine))[m["name"].split("/")[1]]
    assert memo["row"].version == 2
    assert memo["events"] == [("CREATE", 1), ("UPDATE", 2)]
    winner = next(r for r in results if r.status_code == 200)
    assert memo["row"].content == winner.json()["content"]


async def test_concurrent_patches_without_if_match_each_get_a_version(
    alice: Actor, engine: AsyncEngine
) -> None:
    m = await alice.memo("v1")
    n = 8
    results = await asyncio.gather(
        *(
            alice.patch(f"/api/v1/{m['name']}?updateMask=content", json={"content": f"e{i}"})
            for i in range(n)
        )
    )
    assert Counter(r.status_code for r in results) == {200: n}
    etags = [r.headers["etag"] for r in results]
    assert len(set(etags)) == n  # each acknowledged PATCH answered its own version
    memo = (await _memos(engine))[m["name"].split("/")[1]]
    assert memo["row"].version == n + 1
    assert memo["events"] == [("CREATE", 1)] + [("UPDATE", v) for v in range(2, n + 2)]


async def test_racing_first_sign_ups_make_exactly_one_admin(
    client: AsyncTestClient[Any], engine: AsyncEngine
) -> None:
    n = 6
    results = await asyncio.gather(
        *(
            client.post("/api/v1/users", json={"username": f"u{i}", "password": "password-1"})
            for i in range(n)
        )
    )
    # Registration is closed by default: the first user is ADMIN, the rest are refused.
    assert Counter(r.status_code for r in results) == {200: 1, 403: n - 1}
    async with read_transaction(engine) as conn:
        roles = (await conn.execute(sa.select(schema.user_account.c.role))).scalars().all()
    assert roles == ["ADMIN"]


async def test_racing_sign_ups_open_registration_one_admin(
    client: AsyncTestClient[Any], engine: AsyncEngine
) -> None:
    from app.instance.store import ACCESS

    async with write_transaction(engine) as conn:  # an empty instance with registration open
        await conn.execute(
            schema.instance_setting.delete().where(schema.instance_setting.c.name == ACCESS)
        )
        await conn.execute(
            schema.instance_setting.insert().values(name=ACCESS, value={"allow_registration": True})
        )
    n = 6
    results = await asyncio.gather(
        *(
            client.post("/api/v1/users", json={"username": f"o{i}", "password": "password-1"})
            for i in range(n)
        )
    )
    assert Counter(r.status_code for r in results) == {200: n}
    assert Counter(r.json()["role"] for r in results) == {"ADMIN": 1, "USER": n - 1}
