"""Rate limits (decision 0029, issue 17): the policy table, 429 with exact
``Retry-After``/``RateLimit``/``RateLimit-Policy`` fields in Memos' error shape,
one budget for several app instances on one database (both dialects), batch
calls costing their item count, the sign-in budgets per client and per
(username, client), and leases that never admit past the quota.

The clock is frozen so windows and resets are exact. Two ``create_app``
instances on one database stand in for two processes: they share nothing
but the database (each has its own engine, writer gate and leases).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from app.limits.policy import DEFAULT_POLICIES, charges, parse_overrides, render
from app.server import create_app
from app.settings import Settings, load_settings
from tests.conftest import Actor, sign_up

NOW = 1_900_000_020 + 15  # 1_900_000_020 is a minute boundary: 45 s left in the window
PROFILE = "/api/v1/instance/profile"
SIGNIN = "/api/v1/auth/signin"


@pytest.fixture(autouse=True)
def frozen_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("time.time", lambda: NOW + 0.5)


def limited(settings: Settings, policies: str, lease: int = 1, **kw: Any) -> Settings:
    return dataclasses.replace(
        settings, rate_limits=True, rate_limit_policies=policies, rate_limit_lease=lease, **kw
    )


class two_apps:  # an async context manager: two app instances on one database
    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    async def __aenter__(self) -> tuple[AsyncTestClient[Any], AsyncTestClient[Any]]:
        self.a = AsyncTestClient(app=create_app(self.settings))
        self.b = AsyncTestClient(app=create_app(self.settings))
        return await self.a.__aenter__(), await self.b.__aenter__()

    async def __aexit__(self, *exc: Any) -> None:
        await self.b.__aexit__(*exc)
        await self.a.__aexit__(*exc)


def as_actor(client: AsyncTestClient[Any], actor: Actor) -> Actor:
    return Actor(client, actor.username, actor.token, actor.user)


# --- the pure rules ------------------------------------------------------------------


def test_policy_table_and_classification() -> None:
    p = DEFAULT_POLICIES
    assert (p["anonymous"].quota, p["anonymous"].window) == (300, 60)
    assert (p["user"].quota, p["write"].quota, p["upload"].quota) == (600, 120, 120)
    assert (p["signup"].quota, p["signup"].window) == (10, 3600)
    assert (p["portability"].quota, p["portability"].window) == (10, 3600)
    assert (p["signin-client"].quota, p["signin-user"].quota, p["signin-user"].window) == (
        30,
        10,
        900,
    )

    def names(method: str, path: str, signed_in: bool, items: int = 0) -> list[tuple[str, int]]:
        got = charges(method, path, signed_in=signed_in, items=items, policies=p)
        return [(c.policy.name, c.cost) for c in got]

    assert names("GET", "/api/v1/memos", False) == [("anonymous", 1)]
    assert names("GET", "/api/v1/memos", True) == [("user", 1)]
    assert names("PATCH", "/api/v1/memos/x", True) == [("user", 1), ("write", 1)]
    assert names("POST", "/api/v1/attachments", True) == [("user", 1), ("upload", 1)]
    assert names("POST", "/api/v1/users", False) == [("anonymous", 1), ("signup", 1)]
    assert names("POST", "/api/v1/users", True) == [("user", 1), ("write", 1)]
    assert names("GET", "/api/v1/users/alice/:exportMemos", True) == [
        ("user", 1),
        ("portability", 1),
    ]
    assert names("POST", "/api/v1/users/alice/:importMemos", True)[1] == ("portability", 1)
    assert names("POST", "/api/v1/memos/:batchCreate", True, 7) == [("user", 7), ("write", 7)]
    assert names("POST", "/api/v1/users/:batchGet", True, 3) == [("user", 3), ("write", 3)]
    assert names("POST", SIGNIN, False) == [("anonymous", 1)]  # the throttle counts sign-in
    assert names("OPTIONS", "/api/v1/memos", False) == []
    assert names("GET", "/healthz", False) == names("GET", "/assets/app.js", False) == []


def test_overrides_are_validated_and_zero_turns_a_policy_off() -> None:
    policies = parse_overrides("write=5/10, upload=0")
    assert (policies["write"].quota, policies["write"].window) == (5, 10)
    assert (
        charges("POST", "/api/v1/attachments", signed_in=True, items=0, policies=policies)[
            -1
        ].policy.name
        == "user"
    )
    for bad in ("nope=3", "write=x", "write=3/0"):
        with pytest.raises(ValueError, match="rate limit policy"):
            parse_overrides(bad)
    assert load_settings({}).rate_limits is True  # on for the CLI
    assert load_settings({"DAYBOOK_RATE_LIMITS": "0"}).rate_limits is False
    assert Settings().rate_limits is False  # off for tests unless they opt in


def test_headers_follow_the_ietf_draft() -> None:
    from app.limits.policy import Outcome

    user, write = DEFAULT_POLICIES["user"], DEFAULT_POLICIES["write"]
    assert render((Outcome(user, True, 599, 45), Outcome(write, False, 0, 45))) == {
        "RateLimit-Policy": '"user";q=600;w=60, "write";q=120;w=60',
        "RateLimit": '"user";r=599;t=45, "write";r=0;t=45',
        "Retry-After": "45",
    }


# --- against the app ---------------------------------------------------------------


async def test_429_with_exact_headers_in_memos_error_shape(settings: Settings) -> None:
    async with AsyncTestClient(app=create_app(limited(settings, "anonymous=3/60"))) as c:
        seen = [await c.get(PROFILE) for _ in range(3)]
        assert [r.status_code for r in seen] == [200, 200, 200]
        assert [r.headers["ratelimit"] for r in seen] == [
            f'"anonymous";r={n};t=45' for n in (2, 1, 0)
        ]
        assert seen[0].headers["ratelimit-policy"] == '"anonymous";q=3;w=60'
        refused = await c.get(PROFILE)
        assert refused.status_code == 429
        assert refused.json() == {
            "code": 8,
            "message": "rate limit exceeded: anonymous allows 3 per 60 s; retry in 45 s",
            "details": [],
        }
        assert refused.headers["retry-after"] == "45"
        assert refused.headers["ratelimit"] == '"anonymous";r=0;t=45'
        assert refused.headers["ratelimit-policy"] == '"anonymous";q=3;w=60'
        assert (await c.get("/healthz")).status_code == 200  # probes are never limited
        # No trusted proxy: a forged X-Forwarded-For is not a new client.
        forged = await c.get(PROFILE, headers={"X-Forwarded-For": "192.0.2.77"})
        assert forged.status_code == 429


async def test_clients_behind_a_trusted_proxy_have_their_own_budgets(settings: Settings) -> None:
    proxied = limited(settings, "anonymous=1/60", trusted_proxies="testclient")
    async with AsyncTestClient(app=create_app(proxied)) as c:
        one, two = ({"X-Forwarded-For": a} for a in ("192.0.2.1", "2001:db8:1:2::1"))
        assert (await c.get(PROFILE, headers=one)).status_code == 200
        assert (await c.get(PROFILE, headers=one)).status_code == 429
        assert (await c.get(PROFILE, headers=two)).status_code == 200
        # IPv6 per /64: another interface id is the same client.
        other = {"X-Forwarded-For": "2001:db8:1:2::2"}
        assert (await c.get(PROFILE, headers=other)).status_code == 429


async def test_limits_off_by_default_send_no_fields(client: AsyncTestClient[Any]) -> None:
    r = await client.get(PROFILE)
    assert r.status_code == 200 and "ratelimit" not in r.headers


async def test_two_instances_share_one_budget(settings: Settings) -> None:
    async with two_apps(limited(settings, "user=5/60,write=2/60")) as (a, b):
        alice = await sign_up(a, "alice")
        on_a, on_b = alice, as_actor(b, alice)
        codes = [(await on_a.get("/api/v1/memos")).status_code for _ in range(2)]
        codes += [(await on_b.get("/api/v1/memos")).status_code for _ in range(2)]
        assert codes == [200] * 4
        # One left of five: a write on B spends it (user and write budgets).
        assert (await on_b.post("/api/v1/memos", json={"content": "x"})).status_code == 200
        assert (await on_a.get("/api/v1/memos")).status_code == 429
        assert (await on_b.get("/api/v1/memos")).status_code == 429


async def test_write_budget_is_shared_and_a_refusal_costs_nothing(settings: Settings) -> None:
    async with two_apps(limited(settings, "write=2/60")) as (a, b):
        alice = await sign_up(a, "alice")
        on_a, on_b = alice, as_actor(b, alice)
        assert (await on_a.post("/api/v1/memos", json={"content": "1"})).status_code == 200
        assert (await on_b.post("/api/v1/memos", json={"content": "2"})).status_code == 200
        third = await on_a.post("/api/v1/memos", json={"content": "3"})
        assert third.status_code == 429
        assert third.headers["ratelimit"] == '"user";r=597;t=45, "write";r=0;t=45'
        # The refused write did not spend the user budget either (back in A's lease).
        listed = await on_a.get("/api/v1/memos")
        assert listed.status_code == 200 and listed.headers["ratelimit"] == '"user";r=597;t=45'
        assert len(listed.json()["memos"]) == 2


async def test_batch_calls_cost_their_item_count(settings: Settings) -> None:
    async with AsyncTestClient(app=create_app(limited(settings, "write=5/60"))) as c:
        alice = await sign_up(c, "alice")
        batch = "/api/v1/memos:batchCreate"
        four = {"memos": [{"content": f"m{i}"} for i in range(4)]}
        r = await alice.post(batch, json=four)
        assert r.status_code == 200, r.text
        assert r.headers["ratelimit"] == '"user";r=596;t=45, "write";r=1;t=45'
        two = {"memos": [{"content": f"n{i}"} for i in range(2)]}
        r = await alice.post(batch, json=two)
        assert r.status_code == 429 and r.headers["ratelimit"].endswith('"write";r=1;t=45')
        # The refused batch cost nothing: one single write still fits.
        assert (await alice.post("/api/v1/memos", json={"content": "one"})).status_code == 200


async def test_leased_reads_never_pass_the_quota_across_instances(settings: Settings) -> None:
    async with two_apps(limited(settings, "anonymous=10/60", lease=4)) as (a, b):
        codes = []
        for _ in range(10):
            codes += [(await a.get(PROFILE)).status_code, (await b.get(PROFILE)).status_code]
        # A leases 4, B 4, A the last 2; B's next lease does not fit. Exactly the quota.
        assert codes.count(200) == 10 and codes.count(429) == 10


async def test_signup_budget_per_client(settings: Settings) -> None:
    async with AsyncTestClient(app=create_app(limited(settings, "signup=2/3600"))) as c:
        first = await c.post("/api/v1/users", json={"username": "u1", "password": "password-1"})
        assert first.status_code == 200
        second = await c.post("/api/v1/users", json={"username": "u2", "password": "password-1"})
        assert second.status_code != 429
        third = await c.post("/api/v1/users", json={"username": "u3", "password": "password-1"})
        assert third.status_code == 429
        assert third.headers["ratelimit-policy"].endswith('"signup";q=2;w=3600')
        assert third.headers["retry-after"] == str(3600 - NOW % 3600)


def creds(username: str, password: str) -> dict[str, Any]:
    return {"passwordCredentials": {"username": username, "password": password}}


async def test_sign_in_budgets_per_username_and_per_client(settings: Settings) -> None:
    """The table's sign-in rows, served by the throttle (decision 0022's keys)."""
    proxied = dataclasses.replace(settings, trusted_proxies="testclient")
    async with two_apps(proxied) as (a, b):
        await sign_up(a, "alice")

        async def attempt(c: AsyncTestClient[Any], address: str, user: str, pw: str) -> Any:
            r = await c.post(SIGNIN, json=creds(user, pw), headers={"X-Forwarded-For": address})
            c.cookies.clear()
            return r

        # Ten guesses at alice from one client, spread over both instances...
        for i in range(10):
            assert (await attempt((a, b)[i % 2], "203.0.113.5", "alice", "x")).status_code == 401
        r = await attempt(b, "203.0.113.5", "alice", "password-1")
        assert r.status_code == 429 and r.json()["code"] == 8
        assert r.headers["ratelimit-policy"] == '"signin-user";q=10;w=900'
        assert r.headers["ratelimit"] == f'"signin-user";r=0;t={r.headers["retry-after"]}'
        # ...do not lock alice out from her own client, nor others from this one.
        assert (await attempt(a, "198.51.100.9", "alice", "password-1")).status_code == 200
        assert (await attempt(a, "203.0.113.5", "bob", "x")).status_code == 401
        # Thirty attempts per client across usernames (11 so far, one refused).
        codes = [
            (await attempt((a, b)[i % 2], "203.0.113.5", f"u{i}", "x")).status_code
            for i in range(20)
        ]
        assert codes == [401] * 19 + [429]
        r = await attempt(a, "203.0.113.5", "u99", "x")
        assert r.headers["ratelimit-policy"] == '"signin-client";q=30;w=900'


async def test_concurrent_writes_on_two_instances_admit_exactly_the_quota(
    settings: Settings,
) -> None:
    import asyncio

    async with two_apps(limited(settings, "write=10/60")) as (a, b):
        alice = await sign_up(a, "alice")
        on_a, on_b = alice, as_actor(b, alice)
        results = await asyncio.gather(
            *(
                (on_a, on_b)[i % 2].post("/api/v1/memos", json={"content": f"c{i}"})
                for i in range(24)
            )
        )
        codes = sorted(r.status_code for r in results)
        assert codes.count(200) == 10 and codes.count(429) == 14, codes
        assert len((await on_a.get("/api/v1/memos?pageSize=50")).json()["memos"]) == 10


async def test_a_burst_in_one_process_loses_no_leased_hit(settings: Settings) -> None:
    """Concurrent reads that all miss the lease each lease from the row; what
    they got is merged, so over the window exactly the quota is admitted."""
    import asyncio

    async with AsyncTestClient(app=create_app(limited(settings, "anonymous=10/60", lease=4))) as c:
        burst = await asyncio.gather(*(c.get(PROFILE) for _ in range(20)))
        later = [await c.get(PROFILE) for _ in range(10)]
        admitted = [r.status_code for r in (*burst, *later)].count(200)
        assert admitted == 10


async def test_housekeeping_deletes_only_long_ended_windows(database_url: str) -> None:
    import time

    import sqlalchemy as sa

    from app.db.engine import create_engine
    from app.db.schema import rate_limit
    from app.db.transactions import write_transaction
    from app.limits.policy import Charge
    from app.limits.store import Limiter, Subject

    engine = create_engine(database_url)
    try:
        async with write_transaction(engine) as conn:
            await conn.execute(
                rate_limit.insert(),
                [
                    {"key": "a" * 64, "window_start": NOW - 3 * 3600, "hits": 1},
                    {"key": "b" * 64, "window_start": NOW - 3600, "hits": 1},
                ],
            )
        limiter = Limiter(engine, 1)
        limiter._pruned = time.monotonic() - 3600  # due
        charge = Charge(DEFAULT_POLICIES["portability"], 1)  # a one-hour window: keep 2 h
        assert (await limiter.admit((charge,), Subject("c", 1), NOW))[0].allowed
        async with engine.connect() as conn:
            keys = set((await conn.execute(sa.select(rate_limit.c.key))).scalars())
        assert keys == {"b" * 64, limiter.key(charge, Subject("c", 1))}
    finally:
        await engine.dispose()
