"""The read and write rules for PRIVATE, PROTECTED and PUBLIC memos (negative tests first)."""

from __future__ import annotations

from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from tests.conftest import Actor
from tests.support import make_public, restricted_key


async def names(actor: Actor | AsyncTestClient[Any], url: str = "/api/v1/memos") -> set[str]:
    r = await actor.get(url)
    assert r.status_code == 200, r.text
    return {m["name"] for m in r.json()["memos"]}


async def test_other_users_private_memo_is_invisible(alice: Actor, bob: Actor) -> None:
    private = await alice.memo("alice secret", visibility="PRIVATE")
    protected = await alice.memo("alice team", visibility="PROTECTED")
    public = await alice.memo("alice world", visibility="PUBLIC")
    assert await names(bob) == {protected["name"], public["name"]}
    r = await bob.get(f"/api/v1/{private['name']}")
    assert r.status_code == 404 and "not found" in r.json()["message"]
    assert "alice secret" not in r.text


@pytest.mark.parametrize(
    ("method", "mask", "body"),
    [
        ("PATCH", "content", {"content": "pwned"}),
        ("PATCH", "state", {"state": "ARCHIVED"}),
        ("PATCH", "pinned", {"pinned": True}),
        ("PATCH", "visibility", {"visibility": "PUBLIC"}),
        ("DELETE", "", None),
    ],
)
async def test_cannot_change_someone_elses_memo(
    alice: Actor, bob: Actor, method: str, mask: str, body: dict[str, Any] | None
) -> None:
    for visibility in ("PROTECTED", "PRIVATE"):
        target = await alice.memo("original", visibility=visibility)
        url = f"/api/v1/{target['name']}" + (f"?updateMask={mask}" if mask else "")
        r = await bob.request(method, url, json=body)
        assert r.status_code in (403, 404), r.text
        after = (await alice.get(f"/api/v1/{target['name']}")).json()
        assert after["content"] == "original" and after["state"] == "NORMAL"
        assert after["pinned"] is False and after["visibility"] == visibility
        assert after["etag"] == target["etag"]


async def test_archived_memo_visible_only_to_creator(alice: Actor, bob: Actor) -> None:
    m = await alice.memo("archived team note", visibility="PROTECTED", state="ARCHIVED")
    assert (await bob.get(f"/api/v1/{m['name']}")).status_code == 404
    assert await names(bob, "/api/v1/memos?state=ARCHIVED") == set()
    assert await names(alice, "/api/v1/memos?state=ARCHIVED") == {m["name"]}


async def test_admin_has_no_implicit_read(alice: Actor, bob: Actor) -> None:
    private = await bob.memo("bob diary", visibility="PRIVATE")
    assert (await alice.get(f"/api/v1/{private['name']}")).status_code == 404
    assert private["name"] not in await names(alice)
    r = await alice.patch(
        f"/api/v1/{private['name']}?updateMask=content", json={"content": "admin edit"}
    )
    assert r.status_code == 404


async def test_anonymous_on_private_instance(client: AsyncTestClient[Any], alice: Actor) -> None:
    public = await alice.memo("hello world", visibility="PUBLIC")
    assert (await client.get("/api/v1/memos")).status_code == 401
    # A memo a signed-in user could read: 401 (sign in), not 404.
    assert (await client.get(f"/api/v1/{public['name']}")).status_code == 401
    private = await alice.memo("hidden", visibility="PRIVATE")
    assert (await client.get(f"/api/v1/{private['name']}")).status_code == 404
    assert (await client.get("/api/v1/users/alice:getStats")).status_code == 401


async def test_anonymous_on_public_instance_sees_public_only(
    client: AsyncTestClient[Any], alice: Actor
) -> None:
    await make_public(alice)
    public = await alice.memo("hello world #pub", visibility="PUBLIC")
    await alice.memo("team #team", visibility="PROTECTED")
    await alice.memo("mine #mine", visibility="PRIVATE")
    assert await names(client) == {public["name"]}
    stats = (await client.get("/api/v1/users/alice:getStats")).json()
    assert stats["totalMemoCount"] == 1 and stats["tagCount"] == {"pub": 1}
    assert (await client.post("/api/v1/memos", json={"content": "x"})).status_code == 401


async def test_stats_count_only_what_the_caller_reads(alice: Actor, bob: Actor) -> None:
    await alice.memo("#private-tag secret", visibility="PRIVATE")
    await alice.memo("#shared hi", visibility="PROTECTED", pinned=True)
    bobs_view = (await bob.get("/api/v1/users/alice:getStats")).json()
    assert bobs_view["tagCount"] == {"shared": 1}
    assert bobs_view["totalMemoCount"] == 1 and len(bobs_view["pinnedMemos"]) == 1
    alices_view = (await alice.get("/api/v1/users/alice:getStats")).json()
    assert alices_view["tagCount"] == {"private-tag": 1, "shared": 1}


async def test_disallow_public_visibility_on_create_and_update(alice: Actor) -> None:
    await alice.patch("/api/v1/instance/settings/ACCESS", json={"disallowPublicVisibility": True})
    r = await alice.post("/api/v1/memos", json={"content": "x", "visibility": "PUBLIC"})
    assert r.status_code == 403
    m = await alice.memo("x", visibility="PRIVATE")
    r = await alice.patch(
        f"/api/v1/{m['name']}?updateMask=visibility", json={"visibility": "PUBLIC"}
    )
    assert r.status_code == 403
    assert (await alice.get(f"/api/v1/{m['name']}")).json()["visibility"] == "PRIVATE"


async def test_pagination_with_hidden_memos_interleaved(alice: Actor, bob: Actor) -> None:
    visible = set()
    for i in range(30):
        hidden = await alice.memo(f"hidden {i}", visibility="PRIVATE")
        assert hidden
        if i % 3 == 0:
            visible.add((await alice.memo(f"shown {i}", visibility="PROTECTED"))["name"])
    seen: list[str] = []
    token = ""
    while True:
        r = (await bob.get(f"/api/v1/memos?pageSize=3&pageToken={token}")).json()
        seen += [m["name"] for m in r["memos"]]
        token = r["nextPageToken"]
        if not token:
            break
        assert len(r["memos"]) == 3
    assert len(seen) == len(set(seen)) and set(seen) == visible


async def test_read_key_never_writes(client: AsyncTestClient[Any], alice: Actor) -> None:
    key = await restricted_key(alice, scope="READ", personal="OWN")
    mine = await alice.memo("mine")
    assert (
        await client.post("/api/v1/memos", json={"content": "x"}, headers=key)
    ).status_code == 403
    r = await client.patch(
        f"/api/v1/{mine['name']}?updateMask=content", json={"content": "y"}, headers=key
    )
    assert r.status_code == 403
    assert (await client.delete(f"/api/v1/{mine['name']}", headers=key)).status_code == 403
    assert (await client.get(f"/api/v1/{mine['name']}", headers=key)).status_code == 200


async def test_personal_reach_of_restricted_keys(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor
) -> None:
    own = await alice.memo("mine", visibility="PRIVATE")
    theirs = await bob.memo("bob public", visibility="PUBLIC")
    none_key = await restricted_key(alice, scope="READ", personal="NONE")
    own_key = await restricted_key(alice, scope="READ", personal="OWN")
    audience_key = await restricted_key(alice, scope="READ", personal="AUDIENCE")
    assert await names_with(client, none_key) == set()
    assert (await client.get(f"/api/v1/{theirs['name']}", headers=none_key)).status_code == 404
    assert await names_with(client, own_key) == {own["name"]}
    assert await names_with(client, audience_key) == {own["name"], theirs["name"]}


async def names_with(client: AsyncTestClient[Any], headers: dict[str, str]) -> set[str]:
    r = await client.get("/api/v1/memos", headers=headers)
    assert r.status_code == 200, r.text
    return {m["name"] for m in r.json()["memos"]}


async def test_restricted_key_barred_from_management(
    client: AsyncTestClient[Any], alice: Actor
) -> None:
    key = await restricted_key(alice, scope="WRITE", personal="AUDIENCE")
    assert (
        await client.get("/api/v1/users/alice/personalAccessTokens", headers=key)
    ).status_code == 403
    assert (await client.get("/api/v1/instance/settings/ACCESS", headers=key)).status_code == 403
    r = await client.patch(
        "/api/v1/users/alice?updateMask=nickname", json={"nickname": "x"}, headers=key
    )
    assert r.status_code == 403


async def test_restriction_declaring_a_space_is_refused(alice: Actor) -> None:
    r = await alice.post(
        "/api/v1/users/alice/personalAccessTokens",
        json={"restriction": {"scope": "READ", "spaces": [{"space": "spaces/x"}]}},
    )
    assert r.status_code == 400
