"""Reactions follow their memo; only the reacting user removes a reaction."""

from __future__ import annotations

from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from tests.conftest import Actor
from tests.related.helpers import make_public, restricted_key


async def test_upsert_memos_shape_and_bare_shape(alice: Actor, bob: Actor) -> None:
    m = await alice.memo("m", visibility="PROTECTED")
    url = f"/api/v1/{m['name']}/reactions"
    r = await bob.post(
        url, json={"name": m["name"], "reaction": {"contentId": m["name"], "reactionType": "👍"}}
    )
    assert r.status_code == 200, r.text
    first = r.json()
    assert first["creator"] == "users/bob" and first["contentId"] == m["name"]
    assert first["name"].startswith(f"{m['name']}/reactions/")
    again = await bob.post(url, json={"reactionType": "👍"})
    assert again.json()["name"] == first["name"]  # upsert: same row
    await alice.post(url, json={"reactionType": "🎉"})
    listed = (await bob.get(url)).json()
    assert [x["reactionType"] for x in listed["reactions"]] == ["👍", "🎉"]
    assert listed["totalSize"] == 2
    assert [
        x["reactionType"] for x in (await alice.get(f"/api/v1/{m['name']}")).json()["reactions"]
    ] == ["👍", "🎉"]
    # Own reaction deleted.
    assert (await bob.delete(f"/api/v1/{first['name']}")).status_code == 200
    assert [x["reactionType"] for x in (await bob.get(url)).json()["reactions"]] == ["🎉"]


@pytest.mark.parametrize("bad", ["", "x" * 33, "a\u0000b", "\u202eevil", "a\nb"])
async def test_reaction_type_validated(alice: Actor, bad: str) -> None:
    m = await alice.memo("m")
    r = await alice.post(f"/api/v1/{m['name']}/reactions", json={"reactionType": bad})
    assert r.status_code == 400
    assert (await alice.get(f"/api/v1/{m['name']}/reactions")).json()["reactions"] == []


async def test_content_id_must_match_path(alice: Actor) -> None:
    m = await alice.memo("m")
    other = await alice.memo("o")
    r = await alice.post(
        f"/api/v1/{m['name']}/reactions",
        json={"reaction": {"contentId": other["name"], "reactionType": "👍"}},
    )
    assert r.status_code == 400


async def test_reactions_need_a_readable_memo(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor
) -> None:
    hidden = await alice.memo("h", visibility="PRIVATE")
    await alice.post(f"/api/v1/{hidden['name']}/reactions", json={"reactionType": "🔒"})
    r = await bob.get(f"/api/v1/{hidden['name']}/reactions")
    assert r.status_code == 404 and "🔒" not in r.text
    assert (
        await bob.post(f"/api/v1/{hidden['name']}/reactions", json={"reactionType": "x"})
    ).status_code == 404
    await make_public(alice)
    assert (await client.get(f"/api/v1/{hidden['name']}/reactions")).status_code == 404
    assert (
        await client.post(f"/api/v1/{hidden['name']}/reactions", json={"reactionType": "x"})
    ).status_code == 401
    pub = await alice.memo("p", visibility="PUBLIC")
    await bob.post(f"/api/v1/{pub['name']}/reactions", json={"reactionType": "👀"})
    assert len((await client.get(f"/api/v1/{pub['name']}/reactions")).json()["reactions"]) == 1


async def test_read_key_cannot_react(client: AsyncTestClient[Any], alice: Actor) -> None:
    key = await restricted_key(alice, scope="READ", personal="OWN")
    m = await alice.memo("m")
    r = await client.post(
        f"/api/v1/{m['name']}/reactions", json={"reactionType": "👍"}, headers=key
    )
    assert r.status_code == 403
    assert (await client.get(f"/api/v1/{m['name']}/reactions", headers=key)).status_code == 200


async def test_bad_reaction_id(alice: Actor) -> None:
    m = await alice.memo("m")
    for rid in ("abc", "0", "²", "99999999999"):
        assert (await alice.delete(f"/api/v1/{m['name']}/reactions/{rid}")).status_code == 400
    assert (await alice.delete(f"/api/v1/{m['name']}/reactions/12345")).status_code == 404
