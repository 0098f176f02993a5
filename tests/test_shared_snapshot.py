"""A second connection in the request's snapshot (``app.db.shared_snapshot``, decision 0052).

A hybrid search on PostgreSQL runs its semantic arm on a second connection,
beside the lexical arm. The promise that makes that safe: the second
connection sees exactly the rows of the request's snapshot, not a later one;
a memo committed after the snapshot is invisible to both arms and to the
pending count. Outside a read transaction, on SQLite and past the bound
there is no second connection and the arm runs on the request's own.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
import sqlalchemy as sa
from litestar.testing import AsyncTestClient
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.access.audience import AccessMode
from app.access.caller import Caller, Credential
from app.db import shared_snapshot as shared
from app.db.engine import create_engine
from app.db.schema import memo, user_account
from app.db.transactions import lazy_write, read_transaction
from app.search import service
from app.search.service import SearchQuery, rank_arms
from app.search.terms import parse_terms
from app.settings import Settings
from tests.conftest import Actor


@pytest.fixture
async def engine(settings: Settings) -> AsyncIterator[AsyncEngine]:
    e = create_engine(settings.database_url)
    yield e
    await e.dispose()


async def _count(conn: AsyncConnection) -> int:
    return int((await conn.execute(sa.select(sa.func.count()).select_from(memo))).scalar_one())


async def test_the_second_connection_reads_the_request_snapshot(
    client: AsyncTestClient[Any], alice: Actor, engine: AsyncEngine, dialect: str
) -> None:
    await alice.memo("before the snapshot")
    async with read_transaction(engine) as conn:
        seen = await _count(conn)
        await alice.memo("after the snapshot")  # committed by the server meanwhile
        async with shared.shared_snapshot(conn) as sibling:
            if dialect == "sqlite":
                assert sibling is None
                return
            assert sibling is not None
            assert await _count(sibling) == seen
            assert sibling.sync_connection is not conn.sync_connection
        assert await _count(conn) == seen
    async with read_transaction(engine) as fresh:
        assert await _count(fresh) == seen + 1


async def test_no_second_connection_without_one_snapshot(
    client: AsyncTestClient[Any], engine: AsyncEngine
) -> None:
    """A write (READ COMMITTED) and a bare connection have no single snapshot to share."""
    async with lazy_write(engine) as conn, shared.shared_snapshot(conn) as sibling:
        assert sibling is None
    async with engine.connect() as conn, shared.shared_snapshot(conn) as sibling:
        assert sibling is None


async def test_second_connections_are_bounded(
    client: AsyncTestClient[Any], engine: AsyncEngine, dialect: str
) -> None:
    if dialect == "sqlite":
        pytest.skip("SQLite never opens a second connection (the test above)")
    async with contextlib.AsyncExitStack() as stack:
        conns = [
            await stack.enter_async_context(read_transaction(engine))
            for _ in range(shared.MAX_SHARED + 1)
        ]
        siblings = [await stack.enter_async_context(shared.shared_snapshot(c)) for c in conns]
        assert all(s is not None for s in siblings[:-1])
        assert siblings[-1] is None  # past the bound: the caller runs on its own
    async with read_transaction(engine) as conn, shared.shared_snapshot(conn) as sibling:
        assert sibling is not None  # released on exit


async def test_hybrid_arms_and_pending_count_share_the_request_snapshot(
    client: AsyncTestClient[Any],
    alice: Actor,
    engine: AsyncEngine,
    dialect: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Memos committed after the request's snapshot are in neither arm nor the pending
    count, though the semantic arm ran on another connection (PostgreSQL)."""
    for i in range(3):
        await alice.memo(f"garden bed {i}")  # never embedded: pending, found lexically
    used: list[bool] = []

    @contextlib.asynccontextmanager
    async def recorded(conn: AsyncConnection) -> AsyncIterator[AsyncConnection | None]:
        async with shared.shared_snapshot(conn) as sibling:
            used.append(sibling is not None)
            yield sibling

    monkeypatch.setattr(service, "shared_snapshot", recorded)
    runtime = client.app.state.search
    async with read_transaction(engine) as conn:
        uid = (
            await conn.execute(
                sa.select(user_account.c.id).where(user_account.c.username == "alice")
            )
        ).scalar()
        caller = Caller(user_id=uid, username="alice", role="USER", credential=Credential.SESSION)
        q = SearchQuery(caller=caller, access_mode=AccessMode.PRIVATE, text="garden")
        for i in range(2):
            await alice.memo(f"garden path {i}")  # committed after the snapshot
        arms = await rank_arms(conn, runtime, q, parse_terms(q.text))
    assert used == [dialect == "postgresql"]
    assert arms.pending == 3
    assert len(arms.lexical) == 3
    async with read_transaction(engine) as conn:
        later = await rank_arms(conn, runtime, q, parse_terms(q.text))
    assert (later.pending, len(later.lexical)) == (5, 5)
