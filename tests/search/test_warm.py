"""The vectors and the query model load at startup, in the background, and the cache
then stays in step with other processes' writes through the database.

Two apps on one database stand for two Daybook processes behind a load
balancer: the second starts after the first has embedded memos, warms up
without any request, and must then see writes made through the first (the
vector of a new memo, an edit that drops a vector) at its next search.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from app.db.engine import create_engine
from app.db.schema import memo
from app.search import cache_sync, semantic
from app.search.embedder import HashingEmbedder
from app.search.runtime import SearchRuntime
from app.search.semantic import warm_cache
from app.search.vectors import VectorCache
from app.server import create_app
from app.settings import Settings
from tests.conftest import Actor, sign_up
from tests.search.conftest import embed_all, search


def conn_is_synced(client: AsyncTestClient[Any]) -> bool:
    """SQLite: the cache mirrors the database through the log (elsewhere it is keyed
    by content hash and may keep rows no search uses any more)."""
    return bool(client.app.state.engine.dialect.name == "sqlite")


async def _warm(runtime: SearchRuntime) -> None:
    for _ in range(400):  # bounded: at most ~20 s
        if runtime.warm_status in ("warm", "failed"):
            break
        await asyncio.sleep(0.05)
    assert runtime.warm_status == "warm"


async def test_a_second_process_starts_warm(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with AsyncTestClient(app=create_app(settings)) as first:
        alice = await sign_up(first, "alice")
        for i in range(5):
            await alice.memo(f"lighthouse keeper log {i}")
        await embed_all(first)
        async with AsyncTestClient(app=create_app(settings)) as second:
            runtime: SearchRuntime = second.app.state.search
            await _warm(runtime)
            embedder = runtime.embedder
            cache = runtime.vector_cache(embedder.name, embedder.dim)
            expected = 0 if runtime.pgvector else 5  # pgvector: the vectors stay in PostgreSQL
            assert len(cache) == expected
            # The first search after the warm-up loads nothing in full again.
            full_loads: list[Any] = []
            load = cache_sync._load

            async def counting(conn: Any, c: Any, model: str, dim: int, ids: Any) -> None:
                if ids is None:
                    full_loads.append(ids)
                await load(conn, c, model, dim, ids)

            monkeypatch.setattr(cache_sync, "_load", counting)
            there = Actor(second, "alice", alice.token, alice.user)
            body = await search(there, "lighthouse", mode="semantic")
            assert (len(body["results"]), body["pendingEmbeddings"]) == (5, 0)
            assert full_loads == []
            # Writes through the first process: a new memo (then its vector) and an
            # edit (its vector dropped by the trigger). The second sees each at once.
            await alice.memo("lighthouse lamp oil order")
            body = await search(there, "lighthouse", mode="semantic")
            assert (len(body["results"]), body["pendingEmbeddings"]) == (5, 1)
            await embed_all(first)
            body = await search(there, "lighthouse", mode="semantic")
            assert (len(body["results"]), body["pendingEmbeddings"]) == (6, 0)
            name = body["results"][0]["memo"]["name"]
            r = await alice.patch(
                f"/api/v1/{name}", json={"content": "changed"}, params={"updateMask": "content"}
            )
            assert r.status_code == 200, r.text
            body = await search(there, "lighthouse", mode="semantic")
            assert name not in {h["memo"]["name"] for h in body["results"]}
            assert (len(body["results"]), body["pendingEmbeddings"]) == (5, 1)
            assert full_loads == []
            if conn_is_synced(second):
                assert len(cache) == 5  # the edited memo's vector is gone from memory too


async def test_an_empty_database_stays_cold(client: AsyncTestClient[Any]) -> None:
    """Nothing to search yet (a new instance, and every test): no model load at startup."""
    runtime: SearchRuntime = client.app.state.search
    await _warm(runtime)
    assert runtime._embedder is None


async def test_a_search_during_the_warm_up_waits_for_it(
    settings: Settings, dialect: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite: the warm-up holds the cache lock while it loads; a search arriving
    meanwhile waits and then uses that load (one full load, not two)."""
    if dialect != "sqlite":
        pytest.skip("the in-process matrix kept in step through the log is SQLite's")
    async with AsyncTestClient(app=create_app(settings)) as first:
        alice = await sign_up(first, "alice")
        for i in range(3):
            await alice.memo(f"harbor crane {i}")
        await embed_all(first)
    gate, loading = asyncio.Event(), asyncio.Event()
    full_loads: list[None] = []
    load = cache_sync._load

    async def gated(conn: Any, c: Any, model: str, dim: int, ids: Any) -> None:
        if ids is None:
            full_loads.append(None)
            loading.set()
            await gate.wait()
        await load(conn, c, model, dim, ids)

    monkeypatch.setattr(cache_sync, "_load", gated)
    embedder = HashingEmbedder(64, "hash-64")
    cache = VectorCache(embedder.dim)
    engine = create_engine(settings.database_url)
    try:
        warming = asyncio.create_task(warm_cache(engine, cache, embedder.name, embedder.dim))
        await asyncio.wait_for(loading.wait(), 10)

        async def arm() -> semantic.SemanticArm:
            async with engine.connect() as conn:
                return await semantic.semantic_arm(
                    conn,
                    cache,
                    embedder.name,
                    embedder.dim,
                    False,
                    embedder.embed_query("harbor"),
                    [memo.c.state == "NORMAL"],
                    10,
                )

        searching = asyncio.create_task(arm())
        await asyncio.sleep(0.2)
        assert not searching.done()  # waiting for the warm-up's load, not loading itself
        gate.set()
        assert await warming == 3
        found = await searching
        assert (len(found.ranking), found.pending) == (3, 0)
        assert full_loads == [None]
    finally:
        await engine.dispose()
