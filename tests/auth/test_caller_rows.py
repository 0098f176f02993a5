"""Kept caller rows (app.auth.caller_rows) never outlive what they were read from.

On SQLite a signed-in request may skip the caller's statement when nothing
was committed since its row was read. Every way a credential stops being
valid must still stop it on the very next request: signing out, revoking a
key, archiving or demoting the user, a write by another process, and the
clock passing the credential's expiry (the one thing not in the database).
On PostgreSQL nothing is kept (the generation is a round trip); the same
behaviour is asserted there.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
import sqlalchemy as sa
from litestar.testing import AsyncTestClient

from app.auth.caller_rows import CallerRows
from app.db.engine import create_engine
from app.db.schema import access_token, auth_session
from tests.conftest import Actor, sign_up


def _rows(client: AsyncTestClient[Any]) -> CallerRows:
    rows = client.app.state.caller_rows
    assert isinstance(rows, CallerRows)
    return rows


async def _write(database_url: str, statement: sa.Executable) -> None:
    """A commit by another writer than the app: a second engine, as another process."""
    engine = create_engine(database_url)
    try:
        async with engine.begin() as conn:
            await conn.execute(statement)
    finally:
        await engine.dispose()


async def test_a_repeated_caller_is_kept_only_where_the_generation_is_local(
    client: AsyncTestClient[Any], alice: Actor, dialect: str
) -> None:
    rows = _rows(client)
    assert (await alice.get("/api/v1/auth/me")).status_code == 200
    hits = rows.hits
    for _ in range(3):
        r = await alice.get("/api/v1/auth/me")
        assert r.status_code == 200 and r.json()["user"]["username"] == "alice"
    assert rows.hits == hits + (3 if dialect == "sqlite" else 0)


async def test_signing_out_ends_a_kept_session(client: AsyncTestClient[Any], alice: Actor) -> None:
    for _ in range(2):
        assert (await alice.get("/api/v1/auth/me")).status_code == 200
    assert (await alice.post("/api/v1/auth/signout")).status_code == 200
    assert (await alice.get("/api/v1/auth/me")).status_code == 401
    assert (await alice.get("/api/v1/memos")).status_code == 401


async def test_a_revoked_key_stops_at_once(client: AsyncTestClient[Any], alice: Actor) -> None:
    r = await alice.post("/api/v1/users/alice/personalAccessTokens", json={})
    assert r.status_code == 200, r.text
    key = {"Authorization": f"Bearer {r.json()['token']}"}
    for _ in range(3):  # the first use writes its last-use time; then it is kept
        assert (await client.get("/api/v1/memos", headers=key)).status_code == 200
    listed = (await alice.get("/api/v1/users/alice/personalAccessTokens")).json()
    (token_id,) = {t["name"].rsplit("/", 1)[-1] for t in listed["personalAccessTokens"]}
    r = await alice.delete(f"/api/v1/users/alice/personalAccessTokens/{token_id}")
    assert r.status_code == 200, r.text
    assert (await client.get("/api/v1/memos", headers=key)).status_code == 401


async def test_archiving_and_demoting_a_user_take_effect_at_once(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor
) -> None:
    carol = await sign_up(client, "carol", admin=alice)
    r = await alice.patch("/api/v1/users/carol?updateMask=role", json={"role": "ADMIN"})
    assert r.status_code == 200, r.text
    stats = "/api/v1/instance/stats"  # the role is the caller's, not read by the handler
    for _ in range(2):
        assert (await carol.get(stats)).status_code == 200
        assert (await bob.get("/api/v1/auth/me")).status_code == 200
    r = await alice.patch("/api/v1/users/carol?updateMask=role", json={"role": "USER"})
    assert r.status_code == 200, r.text
    assert (await carol.get(stats)).status_code == 403
    r = await alice.patch("/api/v1/users/bob?updateMask=state", json={"state": "ARCHIVED"})
    assert r.status_code == 200, r.text
    assert (await bob.get("/api/v1/auth/me")).status_code == 401


@pytest.mark.parametrize("table", ["session", "key"])
async def test_a_credential_ended_by_another_process_stops_at_once(
    client: AsyncTestClient[Any], alice: Actor, database_url: str, table: str
) -> None:
    r = await alice.post("/api/v1/users/alice/personalAccessTokens", json={})
    assert r.status_code == 200, r.text
    key = {"Authorization": f"Bearer {r.json()['token']}"}
    headers = alice.headers if table == "session" else key
    for _ in range(3):
        assert (await client.get("/api/v1/auth/me", headers=headers)).status_code == 200
    target = auth_session if table == "session" else access_token
    await _write(database_url, target.delete())
    assert (await client.get("/api/v1/auth/me", headers=headers)).status_code == 401


@pytest.mark.parametrize("table", ["session", "key"])
async def test_a_kept_credential_expires_with_the_clock(
    client: AsyncTestClient[Any], alice: Actor, database_url: str, table: str, dialect: str
) -> None:
    r = await alice.post("/api/v1/users/alice/personalAccessTokens", json={})
    assert r.status_code == 200, r.text
    key = {"Authorization": f"Bearer {r.json()['token']}"}
    headers = alice.headers if table == "session" else key
    assert (await client.get("/api/v1/auth/me", headers=headers)).status_code == 200
    target = auth_session if table == "session" else access_token
    # Three seconds ahead: at least a whole second of kept answers below, however
    # late in its second the clock was read (with two, the loop could run zero times).
    expires = int(time.time()) + 3
    await _write(database_url, target.update().values(expires_ts=expires))
    rows = _rows(client)
    hits = rows.hits
    # Kept from here on (SQLite): nothing is committed until the clock passes.
    while int(time.time()) < expires - 1:
        assert (await client.get("/api/v1/auth/me", headers=headers)).status_code == 200
        await asyncio.sleep(0.1)
    await asyncio.sleep(max(0.0, expires - time.time()) + 0.01)
    assert (await client.get("/api/v1/auth/me", headers=headers)).status_code == 401
    if dialect == "sqlite":
        assert rows.hits > hits  # it was kept, and still not used past its expiry


def test_the_kept_rows_are_bounded_and_stamped() -> None:
    class Row:
        def __init__(self, expires_ts: int | None) -> None:
            self.expires_ts = expires_ts

    rows = CallerRows(max_rows=2)
    rows.put(("session", "a"), "1", Row(None))
    rows.put(("session", "b"), "1", Row(100))
    assert rows.get(("session", "a"), "1", now=50) is not None  # a is now the most recent
    rows.put(("key", "c"), "1", Row(None))
    assert len(rows) == 2
    assert rows.get(("session", "b"), "1", now=50) is None  # evicted, least recently used
    assert rows.get(("session", "a"), "2", now=50) is None  # another generation
    assert rows.get(("session", "a"), "1", now=50) is None  # and dropped with it
    rows.put(("session", "b"), "1", Row(100))
    assert rows.get(("session", "b"), "1", now=99) is not None
    assert rows.get(("session", "b"), "1", now=100) is None  # expired at its second
