"""Credentials (decision 0022): keys never change credentials, admins never hold a
user's password, one-time reset links, and an audit trail of both.

Issue 13, items 6 and 7. Each test fails on the code before the decision.
"""

from __future__ import annotations

import asyncio
from typing import Any

import sqlalchemy as sa
from click.testing import CliRunner
from litestar.testing import AsyncTestClient

from app.cli import main
from app.db.engine import create_engine
from app.db.schema import password_reset
from app.settings import Settings
from tests.conftest import Actor

SIGNIN = "/api/v1/auth/signin"
RESET = "/api/v1/auth/passwordReset"


def creds(username: str, password: str) -> dict[str, Any]:
    return {"passwordCredentials": {"username": username, "password": password}}


async def signs_in(client: AsyncTestClient[Any], username: str, password: str) -> bool:
    r = await client.post(SIGNIN, json=creds(username, password))
    client.cookies.clear()
    assert r.status_code in (200, 401), r.text
    return r.status_code == 200


async def pat_of(actor: Actor) -> dict[str, str]:
    r = await actor.post(
        f"/api/v1/users/{actor.username}/personalAccessTokens", json={"description": "agent"}
    )
    assert r.status_code == 200, r.text
    return {"Authorization": f"Bearer {r.json()['token']}"}


# ------------------------------------------------------------------ item 6: keys


async def test_an_unrestricted_pat_cannot_change_any_credential(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor
) -> None:
    key = await pat_of(bob)
    attempts = [
        ("password", {"password": "taken-over-1", "currentPassword": "password-1"}),
        ("password", {"password": "taken-over-1"}),
        ("username", {"username": "bobby"}),
    ]
    for mask, body in attempts:
        r = await client.patch(f"/api/v1/users/bob?updateMask={mask}", json=body, headers=key)
        assert r.status_code == 403, (mask, r.text)
        assert "personal access tokens" in r.json()["message"]
    # Keys never mint keys, nor issue reset links (alice's admin key either).
    r = await client.post(
        "/api/v1/users/bob/personalAccessTokens", json={"description": "x"}, headers=key
    )
    assert r.status_code == 403
    admin_key = await pat_of(alice)
    r = await client.post("/api/v1/users/bob/passwordResets", headers=admin_key)
    assert r.status_code == 403
    # Nothing changed: bob keeps his name and password, the key still works.
    assert await signs_in(client, "bob", "password-1")
    assert not await signs_in(client, "bob", "taken-over-1")
    assert (await client.get("/api/v1/auth/me", headers=key)).json()["user"]["username"] == "bob"


async def test_a_password_change_needs_the_current_password(
    client: AsyncTestClient[Any], bob: Actor
) -> None:
    r = await bob.patch("/api/v1/users/bob?updateMask=password", json={"password": "new-pass-1"})
    assert r.status_code == 400 and "currentPassword" in r.json()["message"]
    r = await bob.patch(
        "/api/v1/users/bob?updateMask=password",
        json={"password": "new-pass-1", "currentPassword": "not-my-password"},
    )
    assert r.status_code == 403 and "currentPassword" in r.json()["message"]
    assert await signs_in(client, "bob", "password-1")
    r = await bob.patch(
        "/api/v1/users/bob?updateMask=password",
        json={"password": "new-pass-1", "currentPassword": "password-1"},
    )
    assert r.status_code == 200, r.text
    assert await signs_in(client, "bob", "new-pass-1")
    assert not await signs_in(client, "bob", "password-1")


async def test_a_session_may_still_change_its_profile_and_a_pat_too(
    client: AsyncTestClient[Any], bob: Actor
) -> None:
    """Non-credential fields stay editable by a key (Memos clients rely on it)."""
    key = await pat_of(bob)
    r = await client.patch(
        "/api/v1/users/bob?updateMask=nickname", json={"nickname": "Bob"}, headers=key
    )
    assert r.status_code == 200 and r.json()["nickname"] == "Bob"


# ------------------------------------------------------------ item 7: admins


async def test_an_admin_cannot_set_a_users_password(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor
) -> None:
    secret = await bob.memo("bob's diary", visibility="PRIVATE")
    for body in (
        {"password": "admin-chosen-1"},
        {"password": "admin-chosen-1", "currentPassword": "password-1"},
    ):
        r = await alice.patch("/api/v1/users/bob?updateMask=password", json=body)
        assert r.status_code == 403 and "reset link" in r.json()["message"]
    assert not await signs_in(client, "bob", "admin-chosen-1")
    assert await signs_in(client, "bob", "password-1")
    assert (await alice.get(f"/api/v1/{secret['name']}")).status_code == 404


async def test_reset_link_lets_the_user_set_its_own_password_once(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor
) -> None:
    r = await alice.post("/api/v1/users/bob/passwordResets")
    assert r.status_code == 200, r.text
    link = r.json()
    token = link["token"]
    assert link["resetUrl"].endswith(f"/reset-password#token={token}")
    # Issuing changes nothing yet: bob's password and sessions still work.
    assert await signs_in(client, "bob", "password-1")
    assert (await bob.get("/api/v1/auth/me")).status_code == 200

    r = await client.post(RESET, json={"token": token, "newPassword": "bobs-own-pass"})
    assert r.status_code == 200, r.text
    assert r.json()["username"] == "bob" and "set-cookie" not in r.headers
    assert (await bob.get("/api/v1/auth/me")).status_code == 401  # sessions ended
    assert not await signs_in(client, "bob", "password-1")
    assert await signs_in(client, "bob", "bobs-own-pass")
    # Single use.
    again = await client.post(RESET, json={"token": token, "newPassword": "someone-else-1"})
    assert again.status_code == 400
    assert await signs_in(client, "bob", "bobs-own-pass")


async def test_reset_links_expire_are_replaced_and_fail_alike(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor, settings: Settings
) -> None:
    first = (await alice.post("/api/v1/users/bob/passwordResets")).json()["token"]
    second = (await alice.post("/api/v1/users/bob/passwordResets")).json()["token"]
    replaced = await client.post(RESET, json={"token": first, "newPassword": "new-pass-11"})
    unknown = await client.post(
        RESET, json={"token": "dbk_reset_" + "A" * 43, "newPassword": "new-pass-11"}
    )
    engine = create_engine(settings.database_url)
    try:
        async with engine.begin() as conn:
            await conn.execute(password_reset.update().values(expires_ts=1))
    finally:
        await engine.dispose()
    expired = await client.post(RESET, json={"token": second, "newPassword": "new-pass-11"})
    bodies = {r.status_code: r.json()["message"] for r in (replaced, unknown, expired)}
    assert list(bodies) == [400] and "invalid, expired or already used" in bodies[400]
    assert await signs_in(client, "bob", "password-1")
    too_short = (await alice.post("/api/v1/users/bob/passwordResets")).json()["token"]
    r = await client.post(RESET, json={"token": too_short, "newPassword": "short"})
    assert r.status_code == 400 and "newPassword" in r.json()["message"]


async def test_only_an_admin_issues_links_and_the_user_sees_the_audit_trail(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor
) -> None:
    assert (await bob.post("/api/v1/users/alice/passwordResets")).status_code == 403
    token = (await alice.post("/api/v1/users/bob/passwordResets")).json()["token"]
    r = await client.post(RESET, json={"token": token, "newPassword": "bobs-own-pass"})
    assert r.status_code == 200
    await bob_signs_in_again(client, bob, "bobs-own-pass")
    r = await bob.get("/api/v1/users/bob/auditEvents")
    assert r.status_code == 200, r.text
    events = [(e["action"], e["actor"]) for e in r.json()["events"]]
    assert events == [
        ("PASSWORD_RESET_USED", "reset-link"),
        ("PASSWORD_RESET_ISSUED", "users/alice"),
    ]
    assert r.json()["events"][0]["detail"] == {"issued_by": "users/alice"}
    # Another ordinary user cannot read them.
    carol = await _carol(client, alice)
    assert (await carol.get("/api/v1/users/bob/auditEvents")).status_code == 403


async def test_concurrent_redemptions_set_one_password(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor
) -> None:
    token = (await alice.post("/api/v1/users/bob/passwordResets")).json()["token"]
    results = await asyncio.gather(
        *(
            client.post(RESET, json={"token": token, "newPassword": f"racer-pass-{i}"})
            for i in range(4)
        )
    )
    codes = sorted(r.status_code for r in results)
    assert codes == [200, 400, 400, 400], [r.text for r in results]
    winner = next(i for i, r in enumerate(results) if r.status_code == 200)
    assert await signs_in(client, "bob", f"racer-pass-{winner}")


async def test_cli_reset_password_prints_a_working_link(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor, settings: Settings
) -> None:
    args = [
        "reset-password",
        "bob",
        "--database-url",
        settings.database_url,
        "--data",
        str(settings.data_dir),
        "--public-url",
        "https://notes.example.com",
    ]
    result = await asyncio.to_thread(CliRunner().invoke, main, args)
    assert result.exit_code == 0, result.output
    assert "https://notes.example.com/reset-password#token=dbk_reset_" in result.output
    token = result.output.split("token: ", 1)[1].strip()
    r = await client.post(RESET, json={"token": token, "newPassword": "from-the-cli-1"})
    assert r.status_code == 200, r.text
    assert await signs_in(client, "bob", "from-the-cli-1")
    events = (await alice.get("/api/v1/users/bob/auditEvents")).json()["events"]
    assert [e["actor"] for e in events] == ["reset-link", "cli"]
    missing = await asyncio.to_thread(
        CliRunner().invoke,
        main,
        ["reset-password", "nobody", "--database-url", settings.database_url],
    )
    assert missing.exit_code != 0 and "no active user" in missing.output


async def bob_signs_in_again(client: AsyncTestClient[Any], bob: Actor, password: str) -> None:
    r = await client.post(SIGNIN, json=creds("bob", password))
    assert r.status_code == 200
    client.cookies.clear()
    bob.token = r.json()["accessToken"]


async def _carol(client: AsyncTestClient[Any], alice: Actor) -> Actor:
    from tests.conftest import sign_up

    return await sign_up(client, "carol", admin=alice)


async def _count_resets(settings: Settings) -> int:
    engine = create_engine(settings.database_url)
    try:
        async with engine.connect() as conn:
            return int(
                (
                    await conn.execute(sa.select(sa.func.count()).select_from(password_reset))
                ).scalar_one()
            )
    finally:
        await engine.dispose()


async def test_reset_links_are_stored_hashed(alice: Actor, bob: Actor, settings: Settings) -> None:
    token = (await alice.post("/api/v1/users/bob/passwordResets")).json()["token"]
    engine = create_engine(settings.database_url)
    try:
        async with engine.connect() as conn:
            stored = (await conn.execute(sa.select(password_reset.c.token_hash))).scalars().all()
    finally:
        await engine.dispose()
    assert len(stored) == 1 and token not in stored[0] and len(stored[0]) == 64
    assert await _count_resets(settings) == 1


async def test_current_password_guesses_are_throttled(
    client: AsyncTestClient[Any], bob: Actor, monkeypatch: Any
) -> None:
    """A stolen session cannot brute-force the current password to take the account."""
    monkeypatch.setattr("time.time", lambda: 1_900_000_000.5)
    await bob_signs_in_again(client, bob, "password-1")  # a session under the frozen clock
    for i in range(10):
        r = await bob.patch(
            "/api/v1/users/bob?updateMask=password",
            json={"password": "taken-over-1", "currentPassword": f"guess-{i}"},
        )
        assert r.status_code == 403
    r = await bob.patch(
        "/api/v1/users/bob?updateMask=password",
        json={"password": "taken-over-1", "currentPassword": "password-1"},
    )
    assert r.status_code == 429
