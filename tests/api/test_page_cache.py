"""Kept answers (app.api.page_cache) are only ever what the handler would answer now.

A hit must be byte-for-byte the answer its own caller would get, never
another caller's (two users, a restricted key, anonymous), and any commit,
whichever process or tool made it, must end every kept answer before the
next request: a memo hidden by an acknowledged PATCH is never listed again,
however many reads race the PATCH.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from litestar.testing import AsyncTestClient

from app.api.page_cache import MAX_ENTRY, Page, PageCache
from app.db.engine import create_engine
from app.db.generation import open_generation
from app.db.schema import instance_setting, memo
from app.settings import Settings
from tests.conftest import Actor
from tests.support import make_public, restricted_key, serving


def _cache(client: AsyncTestClient[Any]) -> PageCache:
    cache = client.app.state.page_cache
    assert isinstance(cache, PageCache)
    return cache


def _contents(body: dict[str, Any]) -> set[str]:
    return {m["content"] for m in body["memos"]}


async def test_a_repeated_list_is_the_same_bytes_from_the_cache(
    client: AsyncTestClient[Any], alice: Actor
) -> None:
    await alice.memo("one #work")
    await alice.memo("two")
    cache = _cache(client)
    first = await alice.get("/api/v1/memos", params={"pageSize": 1})
    hits = cache.hits
    again = await alice.get("/api/v1/memos", params={"pageSize": 1})
    assert cache.hits == hits + 1
    assert again.status_code == first.status_code == 200
    assert again.content == first.content
    assert again.headers["content-type"] == first.headers["content-type"]
    token = first.json()["nextPageToken"]
    r = await alice.get("/api/v1/memos", params={"pageSize": 1, "pageToken": token})
    assert _contents(r.json()) == {"one #work"}  # a page token still pages
    r = await alice.get("/api/v1/memos", params={"filter": '"work" in tags'})
    assert _contents(r.json()) == {"one #work"}  # a different query is a different entry


async def test_no_caller_is_answered_with_another_callers_page(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor
) -> None:
    await make_public(alice)
    await alice.memo("alice private", visibility="PRIVATE")
    await alice.memo("alice protected", visibility="PROTECTED")
    await alice.memo("alice public", visibility="PUBLIC")
    await bob.memo("bob private", visibility="PRIVATE")
    key = await restricted_key(alice, personal="NONE", spaces=[])
    expected = {
        "alice": {"alice private", "alice protected", "alice public"},
        "bob": {"alice protected", "alice public", "bob private"},
        "key": set(),
        "anonymous": {"alice public"},
    }
    headers = {"alice": alice.headers, "bob": bob.headers, "key": key, "anonymous": {}}
    cache = _cache(client)
    for _ in range(3):
        # The key's first use writes its last-use time, a commit: the first
        # round's answers go stale; from the second round on all four are kept.
        hits = cache.hits
        for who, sent in headers.items():
            r = await client.get("/api/v1/memos", headers=sent)
            assert r.status_code == 200, r.text
            assert _contents(r.json()) == expected[who], who
    assert cache.hits == hits + 4


async def _straight_update(database_url: str, **values: Any) -> None:
    """A commit by another writer than the app: a second engine, as another process."""
    engine = create_engine(database_url)
    try:
        async with engine.begin() as conn:
            await conn.execute(memo.update().values(**values))
    finally:
        await engine.dispose()


@pytest.mark.parametrize("writer", ["api", "another engine", "a setting"])
async def test_any_commit_ends_every_kept_answer(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor, database_url: str, writer: str
) -> None:
    m = await alice.memo("shared", visibility="PROTECTED")
    url = f"/api/v1/{m['name']}"
    for _ in range(2):  # kept
        assert _contents((await bob.get("/api/v1/memos")).json()) == {"shared"}
        assert (await bob.get(url)).status_code == 200
    if writer == "api":
        r = await alice.patch(url, json={"visibility": "PRIVATE"})
        assert r.status_code == 200, r.text
    elif writer == "another engine":
        await _straight_update(database_url, visibility="PRIVATE")
    else:
        # Not the memo: the instance turns PRIVATE; a kept anonymous answer goes.
        await make_public(alice)
        anonymous = await client.get("/api/v1/memos")
        assert anonymous.status_code == 200
        assert (await client.get("/api/v1/memos")).status_code == 200
        r = await alice.patch("/api/v1/instance/settings/ACCESS", json={"accessMode": "PRIVATE"})
        assert r.status_code == 200, r.text
        assert (await client.get("/api/v1/memos")).status_code == 401
        return
    assert _contents((await bob.get("/api/v1/memos")).json()) == set()
    assert (await bob.get(url)).status_code in (403, 404)


async def test_a_hidden_memo_is_never_listed_after_the_write_is_acknowledged(
    settings: Settings,
) -> None:
    """Readers race the writer: every list that starts after an acknowledged
    PATCH to PRIVATE must miss the memo, and after the PATCH back, show it."""
    async with serving(settings) as http:

        async def user(name: str, admin: str | None = None) -> dict[str, str]:
            headers = {"Authorization": f"Bearer {admin}"} if admin else {}
            r = await http.post(
                "/api/v1/users", json={"username": name, "password": "password-1"}, headers=headers
            )
            assert r.status_code == 200, r.text
            r = await http.post(
                "/api/v1/auth/signin",
                json={"passwordCredentials": {"username": name, "password": "password-1"}},
            )
            http.cookies.clear()
            return {"Authorization": f"Bearer {r.json()['accessToken']}"}

        alice = await user("alice")
        bob = await user("bob", alice["Authorization"].split()[1])
        r = await http.post(
            "/api/v1/memos", json={"content": "flip", "visibility": "PROTECTED"}, headers=alice
        )
        name = r.json()["name"]
        stop = asyncio.Event()
        reads = 0

        async def reader() -> None:
            nonlocal reads
            while not stop.is_set():
                r = await http.get("/api/v1/memos", headers=bob)
                assert r.status_code == 200
                reads += 1
                await asyncio.sleep(0)

        readers = [asyncio.create_task(reader()) for _ in range(6)]
        try:
            for i in range(15):
                hidden = i % 2 == 0
                r = await http.patch(
                    f"/api/v1/{name}",
                    json={"visibility": "PRIVATE" if hidden else "PROTECTED"},
                    headers=alice,
                )
                assert r.status_code == 200, r.text
                for _ in range(3):
                    listed = _contents((await http.get("/api/v1/memos", headers=bob)).json())
                    assert listed == (set() if hidden else {"flip"}), (i, listed)
                    got = await http.get(f"/api/v1/{name}", headers=bob)
                    assert (got.status_code == 200) is not hidden, (i, got.status_code)
        finally:
            stop.set()
            await asyncio.gather(*readers)
        assert reads > 30  # the readers did race the writes


async def test_the_generation_changes_with_every_commit_and_only_then(database_url: str) -> None:
    engine = create_engine(database_url)
    generation = open_generation(engine)
    try:
        first = await generation.read()
        assert first is not None
        assert await generation.read() == first  # nothing committed
        async with engine.connect() as conn:  # a read commits nothing
            await conn.execute(sa.select(memo.c.id).limit(1))
        assert await generation.read() == first
        seen = [first]
        for i in range(3):
            async with engine.begin() as conn:
                await conn.execute(instance_setting.insert().values(name=f"probe-{i}", value="{}"))
            token = await generation.read()
            assert token is not None
            assert token not in seen  # every commit is a new generation
            seen.append(token)
            assert await generation.read() == token
    finally:
        generation.close()
        await engine.dispose()


async def test_a_cache_turned_off_keeps_nothing(settings: Settings) -> None:
    off = dataclasses.replace(settings, page_cache_bytes=0)
    async with serving(off) as http:
        assert isinstance(http._transport, httpx.ASGITransport)
        state = http._transport.app.state  # type: ignore[attr-defined]
        assert state.page_cache is None
        r = await http.post("/api/v1/users", json={"username": "a", "password": "password-1"})
        assert r.status_code == 200


def test_the_cache_is_bounded_in_bytes_and_keeps_the_recently_used() -> None:
    cache = PageCache(max_bytes=10_000)
    body = b"x" * 3_000

    def page(gen: str = "g") -> Page:
        return Page(gen, 200, ((b"content-type", b"application/json"),), body)

    for i in range(3):
        cache.put((i,), page())
    assert cache.get((0,), "g") is not None  # 0 is now the most recent
    cache.put((3,), page())
    assert cache.size <= 10_000
    assert cache.get((1,), "g") is None  # the least recently used went
    assert cache.get((0,), "g") is not None
    assert cache.get((0,), "other") is None  # another generation: stale
    cache.put(("big",), Page("g", 200, (), b"x" * (MAX_ENTRY + 1)))
    assert cache.get(("big",), "g") is None
