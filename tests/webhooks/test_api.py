"""Memos 0.31's webhook routes: shapes, ownership, secrets, SSRF refusal at create."""

from __future__ import annotations

from typing import Any

from litestar.testing import AsyncTestClient

from tests.conftest import Actor
from tests.webhooks.conftest import Receiver, add_webhook


async def test_crud_in_memos_shape(alice: Actor, receiver: Receiver) -> None:
    r = await alice.post(
        "/api/v1/users/alice/webhooks", json={"url": receiver.url, "displayName": "ci"}
    )
    assert r.status_code == 200, r.text
    hook = r.json()
    assert set(hook) == {
        "name",
        "url",
        "displayName",
        "createTime",
        "updateTime",
        "signingSecret",
        "signingSecretSet",
    }
    assert hook["name"].startswith("users/alice/webhooks/")
    assert (hook["url"], hook["displayName"], hook["signingSecretSet"]) == (
        receiver.url,
        "ci",
        True,
    )
    assert hook["signingSecret"] == ""  # INPUT_ONLY: never answered
    listed = (await alice.get("/api/v1/users/alice/webhooks")).json()
    assert listed == {"webhooks": [hook]}
    secret = (await alice.get(f"/api/v1/{hook['name']}:getSigningSecret")).json()["signingSecret"]
    assert secret.startswith("whsec_")

    # Update with a mask; unknown paths are ignored, as Memos does.
    r = await alice.patch(
        f"/api/v1/{hook['name']}",
        params={"updateMask": "display_name,bogus"},
        json={"displayName": "renamed", "url": "http://10.0.0.1/"},
    )
    assert r.status_code == 200, r.text
    assert (r.json()["displayName"], r.json()["url"]) == ("renamed", receiver.url)
    # A client-supplied secret is accepted (validated); an empty one rotates.
    r = await alice.patch(
        f"/api/v1/{hook['name']}",
        params={"updateMask": "signing_secret"},
        json={"signingSecret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
    )
    assert r.status_code == 200 and "whsec_MfKQ" not in r.text
    got = (await alice.get(f"/api/v1/{hook['name']}:getSigningSecret")).json()
    assert got == {"signingSecret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}
    await alice.patch(f"/api/v1/{hook['name']}", params={"updateMask": "signingSecret"}, json={})
    rotated = (await alice.get(f"/api/v1/{hook['name']}:getSigningSecret")).json()
    assert rotated["signingSecret"].startswith("whsec_") and rotated != got

    assert (await alice.delete(f"/api/v1/{hook['name']}")).status_code == 200
    assert (await alice.delete(f"/api/v1/{hook['name']}")).status_code == 404
    assert (await alice.get("/api/v1/users/alice/webhooks")).json() == {"webhooks": []}


async def test_only_the_owner_manages_and_reads(
    alice: Actor, bob: Actor, receiver: Receiver
) -> None:
    hook, _ = await add_webhook(bob, receiver.url)
    # alice is the instance ADMIN: still not hers (it would receive bob's PRIVATE memos).
    for method, url in (
        ("GET", "/api/v1/users/bob/webhooks"),
        ("POST", "/api/v1/users/bob/webhooks"),
        ("PATCH", f"/api/v1/{hook['name']}"),
        ("DELETE", f"/api/v1/{hook['name']}"),
        ("GET", f"/api/v1/{hook['name']}:getSigningSecret"),
        ("GET", f"/api/v1/{hook['name']}/deliveries"),
    ):
        body: dict[str, Any] = (
            {"json": {"url": receiver.url}} if method in ("POST", "PATCH") else {}
        )
        r = await alice.request(method, url, **body)
        assert r.status_code == 403, (method, url, r.text)
    # The log's page token is bounded (an int64 overflow would be a 500 on PostgreSQL).
    for token in ("9" * 30, "abc", "١٢"):
        r = await bob.get(f"/api/v1/{hook['name']}/deliveries", params={"pageToken": token})
        assert r.status_code == 400, (token, r.text)
    # Naming bob's webhook under alice's own name finds nothing.
    uid = hook["name"].rsplit("/", 1)[1]
    assert (
        await alice.get(f"/api/v1/users/alice/webhooks/{uid}:getSigningSecret")
    ).status_code == 404
    assert (await alice.client.get("/api/v1/users/bob/webhooks")).status_code == 401


async def test_restricted_keys_cannot_manage_webhooks(alice: Actor, receiver: Receiver) -> None:
    r = await alice.post(
        "/api/v1/users/alice/personalAccessTokens",
        json={"description": "agent", "restriction": {"scope": "WRITE", "personal": "OWN"}},
    )
    assert r.status_code == 200, r.text
    key = r.json()["token"]
    r = await alice.client.post(
        "/api/v1/users/alice/webhooks",
        json={"url": receiver.url},
        headers={"Authorization": f"Bearer {key}"},
    )
    assert r.status_code == 403


REFUSED_URLS = (
    "http://10.0.0.1/hook",
    "http://169.254.169.254/latest/meta-data/",
    "http://[::1]:8080/hook",
    "http://127.0.0.2/hook",  # loopback, but not the allowed 127.0.0.1
    "http://[::ffff:192.168.0.1]/",
    "ftp://example.com/hook",
    "http://user:pass@127.0.0.1/hook",
    "http://a..b/hook",  # IDNA refuses it before DNS: a 400, not a 500
    "not a url",
    "",
)


async def test_private_or_bad_urls_are_refused_at_create(alice: Actor) -> None:
    for url in REFUSED_URLS:
        r = await alice.post("/api/v1/users/alice/webhooks", json={"url": url})
        assert r.status_code == 400, (url, r.text)
        assert r.json()["message"].startswith("url:"), url
    assert (await alice.get("/api/v1/users/alice/webhooks")).json() == {"webhooks": []}


async def test_loopback_is_refused_without_the_allow_switch(
    settings: Any, receiver: Receiver
) -> None:
    from dataclasses import replace

    from app.server import create_app
    from tests.conftest import sign_up

    async with AsyncTestClient(app=create_app(replace(settings, webhook_allow_private=""))) as c:
        alice = await sign_up(c, "alice")
        r = await alice.post("/api/v1/users/alice/webhooks", json={"url": receiver.url})
        assert r.status_code == 400 and "private or loopback" in r.json()["message"]
