"""Sign-in (decision 0022, issue 13 item 10): throttling an anonymous attacker cannot
turn into a lockout, a password size cap before hashing, JSON-only same-origin
sign-in (login CSRF), forwarded headers trusted only from configured proxies.

Clients are told apart through ``X-Forwarded-For`` from the test client's peer
(``testclient``), which these tests configure as the one trusted proxy.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from app.auth import throttle
from app.cli import uvicorn_options
from app.server import create_app
from app.settings import Settings
from tests.conftest import sign_up

SIGNIN = "/api/v1/auth/signin"
ATTACKER, VICTIM_HOME = "203.0.113.66", "198.51.100.7"


def creds(username: str, password: str) -> dict[str, Any]:
    return {"passwordCredentials": {"username": username, "password": password}}


def from_(address: str) -> dict[str, str]:
    return {"X-Forwarded-For": address}


@pytest.fixture(autouse=True)
def frozen_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Back-off is in seconds: a frozen clock keeps the outcomes exact on a slow machine."""
    monkeypatch.setattr("time.time", lambda: 1_900_000_000.5)


@pytest.fixture
def proxied(settings: Settings) -> Settings:
    return dataclasses.replace(settings, trusted_proxies="testclient")


@pytest.fixture
async def pclient(proxied: Settings) -> AsyncIterator[AsyncTestClient[Any]]:
    async with AsyncTestClient(app=create_app(proxied)) as c:
        yield c


async def attempt(client: AsyncTestClient[Any], address: str, username: str, password: str) -> Any:
    r = await client.post(SIGNIN, json=creds(username, password), headers=from_(address))
    client.cookies.clear()
    return r


async def test_an_attacker_cannot_lock_the_real_user_out(pclient: AsyncTestClient[Any]) -> None:
    await sign_up(pclient, "alice")
    codes = [(await attempt(pclient, ATTACKER, "alice", "guess")).status_code for _ in range(30)]
    assert codes[:10] == [401] * 10 and set(codes[10:]) == {429}
    # The attacker is throttled even with the right password...
    assert (await attempt(pclient, ATTACKER, "alice", "password-1")).status_code == 429
    # ...and the real user, from its own client, is not.
    assert (await attempt(pclient, VICTIM_HOME, "alice", "password-1")).status_code == 200


async def test_backoff_after_the_free_attempts_says_when_to_retry(
    pclient: AsyncTestClient[Any],
) -> None:
    await sign_up(pclient, "alice")
    for _ in range(10):
        assert (await attempt(pclient, ATTACKER, "alice", "guess")).status_code == 401
    r = await attempt(pclient, ATTACKER, "alice", "guess")
    assert r.status_code == 429 and r.json()["code"] == 8
    assert int(r.headers["retry-after"]) >= 1


async def test_spraying_usernames_from_one_client_is_throttled(
    pclient: AsyncTestClient[Any],
) -> None:
    await sign_up(pclient, "alice")
    # signin_client_limit: 30 per client per 15 minutes (decision 0029's table).
    codes = [(await attempt(pclient, ATTACKER, f"user{i}", "guess")).status_code for i in range(32)]
    assert codes[:30] == [401] * 30 and codes[30:] == [429, 429]
    # IPv6 clients count per /64: rotating the interface id does not help.
    six = [
        (await attempt(pclient, f"2001:db8:1:2::{i:x}", f"v{i}", "guess")).status_code
        for i in range(31)
    ]
    assert six[:30] == [401] * 30 and six[30] == 429


async def test_concurrent_guesses_cannot_overrun_the_allowance(
    pclient: AsyncTestClient[Any],
) -> None:
    await sign_up(pclient, "alice")
    results = await asyncio.gather(
        *(
            pclient.post(SIGNIN, json=creds("alice", f"guess-{i}"), headers=from_(ATTACKER))
            for i in range(16)
        )
    )
    codes = sorted(r.status_code for r in results)
    assert codes.count(401) == 10 and codes.count(429) == 6, codes


async def test_processes_on_one_database_share_the_throttle(
    pclient: AsyncTestClient[Any], proxied: Settings
) -> None:
    await sign_up(pclient, "alice")
    for _ in range(5):
        assert (await attempt(pclient, ATTACKER, "alice", "guess")).status_code == 401
    async with AsyncTestClient(app=create_app(proxied)) as other:
        for _ in range(5):
            assert (await attempt(other, ATTACKER, "alice", "guess")).status_code == 401
        assert (await attempt(other, ATTACKER, "alice", "guess")).status_code == 429
    assert (await attempt(pclient, ATTACKER, "alice", "guess")).status_code == 429


async def test_forwarded_for_is_ignored_unless_the_peer_is_a_trusted_proxy(
    client: AsyncTestClient[Any],
) -> None:
    """Default settings trust no proxy: rotating X-Forwarded-For changes nothing."""
    await sign_up(client, "alice")
    codes = [
        (await attempt(client, f"192.0.2.{i}", f"user{i}", "guess")).status_code for i in range(31)
    ]
    assert codes[-1] == 429
    # uvicorn's own proxy handling (which trusts loopback by default) is off.
    options = uvicorn_options(Settings())
    assert options["proxy_headers"] is False


async def test_password_size_is_capped_in_bytes_before_hashing(
    client: AsyncTestClient[Any],
) -> None:
    await sign_up(client, "alice")
    big = "é" * 600  # 600 characters, 1200 bytes of UTF-8
    for username in ("alice", "nobody"):
        r = await client.post(SIGNIN, json=creds(username, big))
        assert r.status_code == 400 and "1024 bytes" in r.json()["message"], r.text
    r = await client.post("/api/v1/users", json={"username": "eve", "password": big})
    assert r.status_code == 400
    surrogate = '{"passwordCredentials": {"username": "alice", "password": "\\ud800\\ud800pass"}}'
    r = await client.post(SIGNIN, content=surrogate, headers={"Content-Type": "application/json"})
    assert r.status_code in (400, 401), r.text
    assert (await client.post(SIGNIN, json=creds("alice", "é" * 512))).status_code == 401


async def test_cross_site_sign_in_sets_no_cookie(client: AsyncTestClient[Any]) -> None:
    await sign_up(client, "alice")
    body = '{"passwordCredentials": {"username": "alice", "password": "password-1"}}'
    cases = [
        {"Content-Type": "text/plain"},
        {"Content-Type": "application/x-www-form-urlencoded"},
        {"Content-Type": "application/json", "Origin": "https://evil.example"},
        {"Content-Type": "application/json", "Origin": "null"},
        {"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"},
        {"Content-Type": "application/json", "Sec-Fetch-Site": "same-site"},
    ]
    for headers in cases:
        r = await client.post(SIGNIN, content=body, headers=headers)
        assert r.status_code in (400, 403), (headers, r.status_code)
        assert "set-cookie" not in r.headers, headers
        assert "daybook_session" not in client.cookies
    same = {
        "Content-Type": "application/json; charset=utf-8",
        "Origin": "http://testserver.local",
        "Sec-Fetch-Site": "same-origin",
    }
    r = await client.post(SIGNIN, content=body, headers=same)
    assert r.status_code == 200 and "daybook_session" in r.headers["set-cookie"]


def test_throttle_rule_is_a_pure_function() -> None:
    policy = throttle.Policy(free=3, cap=8, quiet=100)
    state = None
    waits = []
    now = 1000
    for _ in range(7):
        verdict = throttle.decide(state, now, policy)
        assert verdict.allowed
        state = verdict.state
        waits.append(state.blocked_until - now)
        refused = throttle.decide(state, now, policy) if waits[-1] else None
        if refused is not None:
            assert not refused.allowed and refused.retry_after == waits[-1]
        now = state.blocked_until
    assert waits == [0, 0, 1, 2, 4, 8, 8]
    assert throttle.decide(state, now + 100, policy).state.attempts == 1  # forgotten when quiet
    assert throttle.client_of("2001:db8::1") == throttle.client_of("2001:db8::ffff:1")
    assert throttle.client_of("::ffff:192.0.2.1") == "192.0.2.1"


async def test_idle_keys_are_pruned_on_a_successful_sign_in(
    client: AsyncTestClient[Any], settings: Settings
) -> None:
    import sqlalchemy as sa

    from app.db.engine import create_engine
    from app.db.schema import throttle as table

    await sign_up(client, "alice")
    now = 1_900_000_000
    engine = create_engine(settings.database_url)
    try:
        async with engine.begin() as conn:
            await conn.execute(
                table.insert(),
                [
                    {
                        "key": "old" + "0" * 61,
                        "attempts": 9,
                        "last_ts": now - 90_000,
                        "blocked_until": 0,
                    },
                    {
                        "key": "new" + "0" * 61,
                        "attempts": 9,
                        "last_ts": now - 60,
                        "blocked_until": 0,
                    },
                ],
            )
        assert (await client.post(SIGNIN, json=creds("alice", "password-1"))).status_code == 200
        async with engine.connect() as conn:
            keys = set((await conn.execute(sa.select(table.c.key))).scalars())
    finally:
        await engine.dispose()
    assert "new" + "0" * 61 in keys and "old" + "0" * 61 not in keys
