"""Placement independent of visibility (issue 17, decision 0030), over HTTP.

``team``: alice is space ADMIN (OWNER at her home and ``share``), bob an
ACTIVE member (OWNER at his home, WRITE at ``share``), carol only INVITED,
dave in no space. Each test fails on the code before 0030, where a PRIVATE,
PROTECTED or PUBLIC memo could not be placed at all (400) and a move into a
space made a memo SPACE.
"""

from __future__ import annotations

import urllib.parse
from typing import Any

from litestar.testing import AsyncTestClient

from tests.conftest import Actor
from tests.grants.conftest import key
from tests.related.helpers import comment, make_public
from tests.spaces.conftest import Team, space_memo


async def _placed(actor: Actor, team: Team, visibility: str, tree: str = "share") -> dict[str, Any]:
    r = await space_memo(
        actor,
        team.name,
        tree,
        content=f"{actor.username} {visibility} placed",
        visibility=visibility,
    )
    assert r.status_code == 200, r.text
    body = dict(r.json())
    assert (body["visibility"], body["space"]) == (visibility, team.name)
    return body


async def _names(who: Actor | AsyncTestClient[Any], text: str = "", **kw: Any) -> set[str]:
    params = {"filter": text} if text else {}
    r = await who.get("/api/v1/memos", params=params, **kw)
    assert r.status_code == 200, r.text
    return {m["name"] for m in r.json()["memos"]}


async def test_placed_memos_are_read_by_their_visibility(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor, dave: Actor, team: Team
) -> None:
    private = await _placed(bob, team, "PRIVATE")
    protected = await _placed(bob, team, "PROTECTED", "~")
    public = await _placed(bob, team, "PUBLIC")
    space_only = await _placed(bob, team, "SPACE")
    in_team = f'space == "{team.name}"'
    # PRIVATE, even placed: bob only. alice owns `share` and still does not see it.
    assert (await alice.get(f"/api/v1/{private['name']}")).status_code == 404
    # The PROTECTED memo at bob's home reads for alice, but she has no grant there:
    # to her it is not in the space (it shows no place), so the filter skips it.
    assert await _names(alice, in_team) == {public["name"], space_only["name"]}
    assert await _names(bob, in_team) == {
        private["name"],
        protected["name"],
        public["name"],
        space_only["name"],
    }
    # PROTECTED and PUBLIC: any signed-in user, a non-member included, who does not
    # learn where they live (no space, no path, and a filter cannot ask).
    for m in (protected, public):
        seen = (await dave.get(f"/api/v1/{m['name']}")).json()
        assert seen["content"] == m["content"] and "space" not in seen and "tree" not in seen
    assert await _names(dave) == {protected["name"], public["name"]}
    assert await _names(dave, in_team) == set()
    assert await _names(dave, 'tree.startsWith("s")') == set()
    assert await _names(dave, "space == null") == {protected["name"], public["name"]}
    # alice has no grant at bob's home: the PROTECTED memo reads, its path does not show.
    seen = (await alice.get(f"/api/v1/{protected['name']}")).json()
    assert "tree" not in seen and "space" not in seen
    assert await _names(alice, 'tree.startsWith("home")') == set()
    # PUBLIC: anonymous only on a PUBLIC instance (401 before: a user could read it).
    assert (await client.get(f"/api/v1/{public['name']}")).status_code == 401
    assert (await client.get("/api/v1/memos")).status_code == 401
    await make_public(alice)
    anon = (await client.get(f"/api/v1/{public['name']}")).json()
    assert anon["visibility"] == "PUBLIC" and "space" not in anon
    assert await _names(client) == {public["name"]}
    assert public["content"] in (await client.get("/explore/rss.xml")).text
    assert (await client.get(f"/api/v1/{protected['name']}")).status_code == 401
    # Search answers under the same rule.
    q = urllib.parse.quote("placed")
    r = await dave.get(f"/api/v1/memos:search?query={q}&mode=lexical")
    assert r.status_code == 200, r.text
    assert {hit["memo"]["name"] for hit in r.json()["results"]} == {
        protected["name"],
        public["name"],
    }
    # Anyone who reads it may comment (a personal memo of the commenter, as on Memos).
    r = await comment(dave, public, "dave's comment", visibility="PROTECTED")
    assert r.status_code == 200, r.text
    assert "space" not in r.json()
    # A placed memo cannot be shared: its path's owners write it too.
    r = await bob.post(f"/api/v1/{public['name']}/shares", json={})
    assert r.status_code == 409
    # Said as it is (it used to call a placed PUBLIC memo "a SPACE memo").
    assert "is placed in a space: only memos outside spaces can be shared" in r.json()["message"]


async def test_restricted_keys_reach_placed_memos_only_inside_their_ceiling(
    alice: Actor, bob: Actor, team: Team
) -> None:
    public = await _placed(alice, team, "PUBLIC")
    own_home = await _placed(alice, team, "PROTECTED", "~")
    private = await _placed(alice, team, "PRIVATE")
    personal = await alice.memo("alice personal", visibility="PUBLIC")
    # bob's key with the widest personal reach, but no space declared: no placed memo.
    wide = await key(bob, scope="READ", personal="AUDIENCE", spaces=[])
    assert await _names(bob, headers=wide) == {personal["name"]}
    assert (await bob.get(f"/api/v1/{public['name']}", headers=wide)).status_code == 404
    # Declared at `share`, personal NONE: the placed PUBLIC memo at share; not alice's
    # home (outside the ceiling, though bob's session reads it), not her PRIVATE memo.
    narrow = await key(
        bob,
        scope="READ",
        personal="NONE",
        spaces=[{"space": team.name, "trees": [{"path": "share", "level": "READ"}]}],
    )
    assert await _names(bob, headers=narrow) == {public["name"]}
    assert (await bob.get(f"/api/v1/{own_home['name']}", headers=narrow)).status_code == 404
    assert (await bob.get(f"/api/v1/{own_home['name']}")).status_code == 200
    assert (await bob.get(f"/api/v1/{private['name']}", headers=narrow)).status_code == 404
    # A WRITE key without personal reach writes inside its ceiling, but nothing read
    # outside the space: no placed PUBLIC memo, no widening to PROTECTED.
    writer = await key(
        bob,
        scope="WRITE",
        personal="NONE",
        spaces=[{"space": team.name, "trees": [{"path": "share", "level": "WRITE"}]}],
    )
    body = {"content": "via key", "space": team.name, "tree": "share"}
    r = await bob.post("/api/v1/memos", json={**body, "visibility": "PUBLIC"}, headers=writer)
    assert r.status_code == 403, r.text
    r = await bob.post("/api/v1/memos", json={**body, "visibility": "PRIVATE"}, headers=writer)
    assert r.status_code == 200, r.text
    mine = r.json()
    r = await bob.patch(
        f"/api/v1/{mine['name']}?updateMask=visibility",
        json={"visibility": "PROTECTED"},
        headers=writer,
    )
    assert r.status_code == 403, r.text
    assert (await bob.get(f"/api/v1/{mine['name']}")).json()["visibility"] == "PRIVATE"


async def test_only_the_creator_widens_and_a_move_keeps_the_audience(
    alice: Actor, bob: Actor, dave: Actor, team: Team
) -> None:
    placed = await _placed(bob, team, "SPACE")
    url = f"/api/v1/{placed['name']}"
    # alice owns `share` but did not write it: no widening, in place or by batch REPLACE.
    for visibility in ("PROTECTED", "PUBLIC"):
        r = await alice.patch(f"{url}?updateMask=visibility", json={"visibility": visibility})
        assert r.status_code == 403 and "only its creator can widen" in r.text, r.text
        r = await alice.post(
            "/api/v1/memos:batchCreate",
            json={
                "memos": [
                    {
                        "memoId": placed["name"].split("/")[1],
                        "content": "taken",
                        "visibility": visibility,
                        "space": team.name,
                        "tree": "share",
                    }
                ],
                "onConflict": "REPLACE",
            },
        )
        assert r.status_code == 403, r.text
    assert (await dave.get(url)).status_code == 404
    # The creator widens it in place: it stays in the space, and dave reads it.
    r = await bob.patch(f"{url}?updateMask=visibility", json={"visibility": "PUBLIC"})
    assert r.status_code == 200, r.text
    assert (r.json()["visibility"], r.json()["space"], r.json()["tree"]) == (
        "PUBLIC",
        team.name,
        "share",
    )
    assert (await dave.get(url)).json()["content"] == placed["content"]
    # alice may still edit it (placement governs writes), and narrow it: an edit.
    r = await alice.patch(f"{url}?updateMask=content", json={"content": "edited by alice"})
    assert r.status_code == 200, r.text
    r = await alice.patch(f"{url}?updateMask=visibility", json={"visibility": "PRIVATE"})
    assert r.status_code == 200, r.text
    assert (await alice.get(url)).status_code == 404
    assert (await dave.get(url)).status_code == 404
    # Moving a PUBLIC memo into a space keeps its audience: dave still reads it.
    mine = await bob.memo("bob public", visibility="PUBLIC")
    r = await bob.patch(
        f"/api/v1/{mine['name']}?updateMask=space,tree", json={"space": team.name, "tree": "~"}
    )
    assert r.status_code == 200, r.text
    assert (r.json()["visibility"], r.json()["space"]) == ("PUBLIC", team.name)
    assert (await dave.get(f"/api/v1/{mine['name']}")).status_code == 200
    # ...and only its creator could move it: alice cannot take it out of the space.
    r = await alice.patch(f"/api/v1/{mine['name']}?updateMask=space", json={"space": ""})
    assert r.status_code in (403, 404), r.text
    assert (await bob.get(f"/api/v1/{mine['name']}")).json()["space"] == team.name
