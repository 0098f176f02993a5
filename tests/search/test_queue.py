"""The embedding queue: what the worker reads and what the pending count joins.

Through the API on both dialects: a new memo is queued and counted pending;
storing its vector takes it off the queue; an edit queues it again (and
drops the stale vector); deleting the memo removes it. The worker's poll and
the pending count read the queue, never every memo: checked with the plan.
A model change is picked up by the sweep, not by the queue triggers.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from litestar.testing import AsyncTestClient

from app.db.engine import create_engine
from app.db.schema import memo
from app.search.embedder import HashingEmbedder
from app.search.semantic import queued_statement
from app.search.tables import memo_embedding, memo_embedding_queue
from app.search.worker import embed_pending, next_batch, next_batch_statement, sweep_queue
from tests.conftest import Actor
from tests.search.conftest import embed_all, search


async def _queued(client: AsyncTestClient[Any]) -> list[int]:
    engine = create_engine(client.app.state.settings.database_url)
    try:
        async with engine.connect() as conn:
            q = memo_embedding_queue
            return list(
                (await conn.execute(sa.select(q.c.memo_id).order_by(q.c.memo_id))).scalars()
            )
    finally:
        await engine.dispose()


async def _memo_id(client: AsyncTestClient[Any], name: str) -> int:
    engine = create_engine(client.app.state.settings.database_url)
    try:
        async with engine.connect() as conn:
            uid = name.removeprefix("memos/")
            return int(
                (await conn.execute(sa.select(memo.c.id).where(memo.c.uid == uid))).scalar_one()
            )
    finally:
        await engine.dispose()


async def test_writes_keep_the_queue(client: AsyncTestClient[Any], alice: Actor) -> None:
    r = await alice.post("/api/v1/memos", json={"content": "lantern by the harbour"})
    assert r.status_code == 200, r.text
    name = r.json()["name"]
    memo_id = await _memo_id(client, name)
    assert await _queued(client) == [memo_id]
    assert (await search(alice, "lantern"))["pendingEmbeddings"] == 1

    assert await embed_all(client) == 1
    assert await _queued(client) == []
    assert (await search(alice, "lantern"))["pendingEmbeddings"] == 0

    r = await alice.patch(
        f"/api/v1/{name}", params={"updateMask": "content"}, json={"content": "lantern, moved"}
    )
    assert r.status_code == 200, r.text
    assert await _queued(client) == [memo_id]
    assert (await search(alice, "lantern"))["pendingEmbeddings"] == 1

    r = await alice.patch(f"/api/v1/{name}", params={"updateMask": "pinned"}, json={"pinned": True})
    assert r.status_code == 200, r.text
    assert await embed_all(client) == 1
    assert await _queued(client) == []  # pinning does not touch the content

    r = await alice.delete(f"/api/v1/{name}")
    assert r.status_code == 200, r.text
    assert await _queued(client) == []


async def test_pending_counts_only_what_the_caller_sees(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor
) -> None:
    for i in range(3):
        r = await alice.post(
            "/api/v1/memos", json={"content": f"private lantern {i}", "visibility": "PRIVATE"}
        )
        assert r.status_code == 200, r.text
    assert (await search(alice, "lantern"))["pendingEmbeddings"] == 3
    assert (await search(bob, "lantern"))["pendingEmbeddings"] == 0


async def test_model_change_is_swept_into_the_queue(
    client: AsyncTestClient[Any], alice: Actor
) -> None:
    for i in range(4):
        r = await alice.post("/api/v1/memos", json={"content": f"note {i}"})
        assert r.status_code == 200, r.text
    assert await embed_all(client) == 4
    engine = create_engine(client.app.state.settings.database_url)
    other = HashingEmbedder(32, "hash-32")
    try:
        async with engine.connect() as conn:
            assert await next_batch(conn, 10) == []  # the triggers know no models
        assert await sweep_queue(engine, other, chunk=3) == 4
        assert await embed_pending(engine, other, False, sweep=False) == 4
        async with engine.connect() as conn:
            models = (await conn.execute(sa.select(memo_embedding.c.model).distinct())).scalars()
            assert list(models) == [other.name]
            assert await next_batch(conn, 10) == []
    finally:
        await engine.dispose()


async def test_poll_and_count_read_the_queue(client: AsyncTestClient[Any], alice: Actor) -> None:
    """5,000 memos all embedded, the queue empty: both statements start from the queue."""
    engine = create_engine(client.app.state.settings.database_url)
    try:
        async with engine.begin() as conn:
            await conn.execute(
                memo.insert(),
                [
                    {
                        "uid": f"bulk{i}",
                        "creator_id": 1,  # alice, the first user
                        "content": f"note {i}",
                        "visibility": "PUBLIC",
                        "state": "NORMAL",
                        "created_ts": i,
                        "updated_ts": i,
                        "origin": {"kind": "session"},
                    }
                    for i in range(5000)
                ],
            )
            await conn.execute(memo_embedding_queue.delete())
        async with engine.connect() as conn:
            await conn.exec_driver_sql("ANALYZE")
            for stmt in (next_batch_statement(32), queued_statement([memo.c.state == "NORMAL"])):
                sql = str(
                    stmt.compile(dialect=conn.dialect, compile_kwargs={"literal_binds": True})
                )
                if conn.dialect.name == "sqlite":
                    rows = await conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}")
                    plan = "\n".join(str(r[-1]) for r in rows)
                    assert "memo_embedding_queue" in plan, plan
                    assert "SEARCH memo USING INTEGER PRIMARY KEY" in plan, plan
                    assert "SCAN memo\n" not in plan + "\n", plan
                else:
                    rows = await conn.exec_driver_sql(f"EXPLAIN {sql}")
                    plan = "\n".join(str(r[0]) for r in rows)
                    assert "memo_embedding_queue" in plan, plan
                    assert "Seq Scan on memo " not in plan + " ", plan
    finally:
        await engine.dispose()
