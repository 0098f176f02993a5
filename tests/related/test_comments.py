"""Comments: each comment has its own audience; the parent is only the door."""

from __future__ import annotations

from typing import Any

from litestar.testing import AsyncTestClient

from tests.conftest import Actor
from tests.related.helpers import comment, make_public, names_of


async def test_comment_defaults_to_private_and_links_parent(alice: Actor, bob: Actor) -> None:
    parent = await alice.memo("parent", visibility="PROTECTED")
    r = await comment(bob, parent, "bob's note")
    assert r.status_code == 200, r.text
    c = r.json()
    assert c["visibility"] == "PRIVATE" and c["parent"] == parent["name"]
    assert c["creator"] == "users/bob"
    # The comment is bob's own: alice (the parent's author) does not see it.
    assert await names_of(alice, f"/api/v1/{parent['name']}/comments") == []
    assert await names_of(bob, f"/api/v1/{parent['name']}/comments") == [c["name"]]
    # Comments never appear in the top-level list.
    assert c["name"] not in await names_of(bob, "/api/v1/memos")
    # The COMMENT relation shows on the parent for bob, who reads both ends.
    rels = (await bob.get(f"/api/v1/{parent['name']}/relations")).json()["relations"]
    assert [(x["memo"]["name"], x["type"]) for x in rels] == [(c["name"], "COMMENT")]
    assert (await alice.get(f"/api/v1/{parent['name']}/relations")).json()["relations"] == []


async def test_listing_needs_a_readable_parent(alice: Actor, bob: Actor) -> None:
    secret = await alice.memo("secret", visibility="PRIVATE")
    own = await comment(alice, secret, "public comment on a private memo", visibility="PUBLIC")
    assert own.status_code == 200
    r = await bob.get(f"/api/v1/{secret['name']}/comments")
    assert r.status_code == 404 and "public comment" not in r.text
    assert (await comment(bob, secret, "x")).status_code == 404
    # A readable comment on an unreadable parent: direct read works, the parent stays hidden.
    direct = await bob.get(f"/api/v1/{own.json()['name']}")
    assert direct.status_code == 200
    assert "parent" not in direct.json() and secret["name"] not in direct.text
    assert direct.json()["relations"] == []


async def test_comments_paging_filter_and_total(alice: Actor, bob: Actor) -> None:
    parent = await alice.memo("parent", visibility="PUBLIC")
    shown = []
    for i in range(7):
        shown.append(
            (await comment(alice, parent, f"c{i} #t{i % 2}", visibility="PROTECTED")).json()["name"]
        )
        await comment(alice, parent, f"hidden {i}", visibility="PRIVATE")
    seen: list[str] = []
    token = ""
    while True:
        r = (
            await bob.get(f"/api/v1/{parent['name']}/comments?pageSize=2&pageToken={token}")
        ).json()
        assert r["totalSize"] == 7
        seen += [m["name"] for m in r["memos"]]
        token = r["nextPageToken"]
        if not token:
            break
    assert seen == shown  # oldest first
    filtered = await names_of(bob, f"/api/v1/{parent['name']}/comments?filter=" + '"t1" in tags')
    assert filtered == shown[1::2]
    bad = await bob.get(f"/api/v1/{parent['name']}/comments?filter=nope")
    assert bad.status_code == 400


async def test_archived_parent_refuses_comments(alice: Actor) -> None:
    parent = await alice.memo("old", visibility="PUBLIC", state="ARCHIVED")
    r = await comment(alice, parent, "late")
    assert r.status_code == 409
    assert await names_of(alice, f"/api/v1/{parent['name']}/comments") == []


async def test_comments_do_not_nest_and_anonymous_cannot_comment(
    client: AsyncTestClient[Any], alice: Actor
) -> None:
    await make_public(alice)
    parent = await alice.memo("p", visibility="PUBLIC")
    c = (await comment(alice, parent, "c", visibility="PUBLIC")).json()
    assert (await comment(alice, c, "nested")).status_code == 400
    r = await client.post(f"/api/v1/{parent['name']}/comments", json={"content": "anon"})
    assert r.status_code == 401
    assert await names_of(client, f"/api/v1/{parent['name']}/comments") == [c["name"]]


async def test_read_key_cannot_comment(client: AsyncTestClient[Any], alice: Actor) -> None:
    from tests.related.helpers import restricted_key

    key = await restricted_key(alice, scope="READ", personal="AUDIENCE")
    parent = await alice.memo("p")
    r = await client.post(f"/api/v1/{parent['name']}/comments", json={"content": "x"}, headers=key)
    assert r.status_code == 403
    assert await names_of(alice, f"/api/v1/{parent['name']}/comments") == []


async def test_deleting_parent_deletes_comments(alice: Actor) -> None:
    parent = await alice.memo("p")
    c = (await comment(alice, parent, "c")).json()
    assert (await alice.delete(f"/api/v1/{parent['name']}")).status_code == 200
    assert (await alice.get(f"/api/v1/{c['name']}")).status_code == 404
