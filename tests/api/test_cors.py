"""CORS for bearer-token browser clients (decision 0029, issue 17): preflights
answered, allowed and denied origins, never ``Access-Control-Allow-Credentials``,
and the session cookie never usable from another origin (it would turn CORS
into a CSRF hole)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from app.api.cors import parse_origins, preflight
from app.server import create_app
from app.settings import Settings
from tests.conftest import Actor

APP = "https://app.example"
EVIL = "https://evil.example"
SIGNIN = "/api/v1/auth/signin"


def asks(origin: str, method: str = "POST", headers: str = "authorization, content-type") -> Any:
    return {
        "Origin": origin,
        "Access-Control-Request-Method": method,
        "Access-Control-Request-Headers": headers,
    }


def no_credentials(response: Any) -> None:
    assert "access-control-allow-credentials" not in response.headers


async def test_wildcard_default_answers_preflight_without_credentials(
    client: AsyncTestClient[Any], alice: Actor
) -> None:
    r = await client.options("/api/v1/memos", headers=asks(APP))
    assert r.status_code == 204
    assert r.headers["access-control-allow-origin"] == "*"
    assert "POST" in r.headers["access-control-allow-methods"]
    assert r.headers["access-control-allow-headers"] == "authorization, content-type"
    no_credentials(r)
    # The custom-method form is preflighted too (rewritten before routing).
    assert (await client.options("/api/v1/memos:batchCreate", headers=asks(APP))).status_code == 204
    # The actual call with a bearer token: readable, with the rate-limit fields exposed.
    got = await alice.get("/api/v1/memos", headers={"Origin": EVIL})
    assert got.status_code == 200 and got.headers["access-control-allow-origin"] == "*"
    assert "RateLimit" in got.headers["access-control-expose-headers"]
    no_credentials(got)
    # No Origin (curl, scripts): no CORS fields at all.
    assert "access-control-allow-origin" not in (await alice.get("/api/v1/memos")).headers
    # The web client's pages are not part of the API's CORS surface.
    assert (
        "access-control-allow-origin"
        not in (await client.get("/", headers={"Origin": APP})).headers
    )


async def test_csrf_header_is_never_granted_cross_origin(client: AsyncTestClient[Any]) -> None:
    r = await client.options(
        "/api/v1/memos", headers=asks(APP, headers="x-csrf-token, authorization")
    )
    assert r.status_code == 204 and r.headers["access-control-allow-headers"] == "authorization"


@pytest.fixture
async def listed(settings: Settings) -> Any:
    app = create_app(dataclasses.replace(settings, cors_origins=f"{APP}, https://other.example"))
    async with AsyncTestClient(app=app) as c:
        yield c


async def test_listed_origins_are_echoed_and_others_refused(listed: AsyncTestClient[Any]) -> None:
    ok = await listed.options("/api/v1/memos", headers=asks(APP))
    assert ok.status_code == 204 and ok.headers["access-control-allow-origin"] == APP
    assert ok.headers["vary"] == "Origin"
    no_credentials(ok)
    for origin in (EVIL, "null", "https://app.example.evil.example", "http://app.example"):
        denied = await listed.options("/api/v1/memos", headers=asks(origin))
        assert denied.status_code == 403, origin
        assert denied.json()["code"] == 7
        assert "access-control-allow-origin" not in denied.headers
        no_credentials(denied)
    got = await listed.get("/api/v1/instance/profile", headers={"Origin": APP})
    assert got.headers["access-control-allow-origin"] == APP and "Origin" in got.headers["vary"]
    other = await listed.get("/api/v1/instance/profile", headers={"Origin": EVIL})
    assert other.status_code == 200 and "access-control-allow-origin" not in other.headers


async def test_cors_off(settings: Settings) -> None:
    async with AsyncTestClient(app=create_app(dataclasses.replace(settings, cors_origins=""))) as c:
        r = await c.options("/api/v1/memos", headers=asks(APP))
        assert "access-control-allow-origin" not in r.headers  # Litestar's plain OPTIONS answer


def test_origins_setting_is_validated_and_preflight_rule_is_pure() -> None:
    for bad in ("app.example", "https://app.example/path", "ftp://x.example"):
        with pytest.raises(ValueError, match="CORS origin"):
            parse_origins(bad)
    policy = parse_origins("*")
    status, headers = preflight(policy, EVIL, "TRACE", "")
    assert status == 403 and headers == []
    status, headers = preflight(policy, EVIL, "DELETE", "")
    assert status == 204 and ("Access-Control-Allow-Origin", "*") in headers
    assert all(name.lower() != "access-control-allow-credentials" for name, _ in headers)


async def test_session_cookie_is_not_usable_cross_origin(
    client: AsyncTestClient[Any], alice: Actor
) -> None:
    r = await client.post(
        SIGNIN, json={"passwordCredentials": {"username": "alice", "password": "password-1"}}
    )
    assert r.status_code == 200
    csrf = r.json()["csrfToken"]
    own = "http://testserver.local"
    assert (await client.get("/api/v1/auth/me", headers={"Origin": own})).status_code == 200
    # A fetch from another origin (credentials: "include") carries the cookie: anonymous.
    assert (await client.get("/api/v1/auth/me", headers={"Origin": EVIL})).status_code == 401
    sibling = {"Sec-Fetch-Mode": "cors", "Sec-Fetch-Site": "same-site"}
    assert (await client.get("/api/v1/auth/me", headers=sibling)).status_code == 401
    # Even with the CSRF token (leaked, say), a cross-origin write does not run.
    wrote = await client.post(
        "/api/v1/memos", json={"content": "x"}, headers={"Origin": EVIL, "X-CSRF-Token": csrf}
    )
    assert wrote.status_code == 401
    assert (await alice.get("/api/v1/memos")).json()["memos"] == []
    # A top-level navigation (a link followed from another site) keeps the session.
    nav = {"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Site": "cross-site"}
    assert (await client.get("/api/v1/auth/me", headers=nav)).status_code == 200
    # The same-origin write still works.
    ok = await client.post(
        "/api/v1/memos", json={"content": "x"}, headers={"Origin": own, "X-CSRF-Token": csrf}
    )
    assert ok.status_code == 200
