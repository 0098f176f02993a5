"""A restricted key sees exactly the memos inside its ceiling, through every read path.

alice owns the root of ``team`` (the explicit self-grant) and writes memos
all over its tree; her key is clamped to ``share.a`` (READ) and ``proj.x``
(WRITE). Most memos are outside, so a first page that is full proves the
predicate sits in the statement before LIMIT rather than after it.
"""

from __future__ import annotations

from typing import Any

from litestar.testing import AsyncTestClient

from tests.conftest import Actor
from tests.grants.conftest import grant, key
from tests.spaces.conftest import Team, space_memo

INSIDE = ("share.a", "share.a.deep", "proj.x")
OUTSIDE = ("", "share", "share.ab", "proj", "proj.x_y", "noise", "noise.more")


async def _names(client: AsyncTestClient[Any], headers: dict[str, str], url: str) -> list[str]:
    names: list[str] = []
    token = ""
    while True:
        sep = "&" if "?" in url else "?"
        r = await client.get(f"{url}{sep}pageSize=5&pageToken={token}", headers=headers)
        assert r.status_code == 200, r.text
        page = r.json()["memos"]
        if r.json()["nextPageToken"]:
            assert len(page) == 5  # full pages, however selective the ceiling
        names += [m["name"] for m in page]
        token = r.json()["nextPageToken"]
        if not token:
            return names


async def test_key_sees_exactly_its_ceiling(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor, team: Team
) -> None:
    await grant(alice, team.name, "users/alice", "", "OWNER")
    inside: set[str] = set()
    outside: set[str] = set()
    for round_ in range(3):
        for path in OUTSIDE:
            for _ in range(3):
                m = await space_memo(alice, team.name, path, content=f"secret {path} #t{round_}")
                outside.add(m.json()["name"])
        for path in INSIDE:
            m = await space_memo(alice, team.name, path, content=f"visible {path} #t{round_}")
            inside.add(m.json()["name"])
    agent = await key(
        alice,
        scope="WRITE",
        personal="NONE",
        spaces=[
            {
                "space": team.name,
                "trees": [
                    {"path": "share.a", "level": "READ"},
                    {"path": "proj.x", "level": "WRITE"},
                ],
            }
        ],
    )
    assert set(await _names(client, agent, "/api/v1/memos")) == inside
    filtered = await _names(client, agent, '/api/v1/memos?filter=content.contains("e")')
    assert set(filtered) == inside
    tagged = await _names(client, agent, '/api/v1/memos?filter="t1" in tags')
    assert len(tagged) == len(INSIDE) and set(tagged) <= inside
    for name in inside:
        assert (await client.get(f"/api/v1/{name}", headers=agent)).status_code == 200
        assert (await client.get(f"/api/v1/{name}/history", headers=agent)).status_code == 200
    for name in outside:
        r = await client.get(f"/api/v1/{name}", headers=agent)
        assert r.status_code == 404 and "secret" not in r.text
        for sub in ("comments", "relations", "history", "reactions", "attachments"):
            r = await client.get(f"/api/v1/{name}/{sub}", headers=agent)
            assert r.status_code == 404 and "secret" not in r.text, (sub, r.text)
    # Relations: an inside memo referencing an outside one shows no link to the key.
    src, hidden = sorted(inside)[0], sorted(outside)[0]
    r = await alice.patch(
        f"/api/v1/{src}/relations",
        json={"relations": [{"relatedMemo": {"name": hidden}, "type": "REFERENCE"}]},
    )
    assert r.status_code == 200, r.text
    assert len((await alice.get(f"/api/v1/{src}/relations")).json()["relations"]) == 1
    r = await client.get(f"/api/v1/{src}/relations", headers=agent)
    assert r.status_code == 200 and r.json()["relations"] == [] and hidden not in r.text
    # Writes: only under the WRITE ceiling; the batch is all or nothing.
    before = set(await _names(client, agent, "/api/v1/memos"))
    r = await client.post(
        "/api/v1/memos:batchCreate",
        json={
            "memos": [
                {"content": "ok", "space": team.name, "tree": "proj.x.new"},
                {"content": "no", "space": team.name, "tree": "share.a"},
            ]
        },
        headers=agent,
    )
    assert r.status_code == 403, r.text
    assert set(await _names(client, agent, "/api/v1/memos")) == before
    r = await client.post(
        "/api/v1/memos:batchCreate",
        json={"memos": [{"content": "ok", "space": team.name, "tree": "proj.x.new"}]},
        headers=agent,
    )
    assert r.status_code == 200, r.text
    # Comments take their parent's path: on share.a (READ) refused, on proj.x allowed.
    trees = {n: (await alice.get(f"/api/v1/{n}")).json()["tree"] for n in inside}
    on_read = next(n for n, t in trees.items() if t.startswith("share.a"))
    r = await client.post(f"/api/v1/{on_read}/comments", json={"content": "c"}, headers=agent)
    assert r.status_code == 403
    on_write = next(n for n, t in trees.items() if t == "proj.x")
    r = await client.post(f"/api/v1/{on_write}/comments", json={"content": "c"}, headers=agent)
    assert r.status_code == 200, r.text
    assert (r.json()["visibility"], r.json()["space"], r.json()["tree"]) == (
        "SPACE",
        team.name,
        "proj.x",
    )
    comments = (await client.get(f"/api/v1/{on_write}/comments", headers=agent)).json()["memos"]
    assert [c["name"] for c in comments] == [r.json()["name"]]
    # bob cannot read proj.x, so he does not see the comment either.
    assert (await bob.get(f"/api/v1/{r.json()['name']}")).status_code == 404


async def test_comment_rules_for_members(alice: Actor, bob: Actor, team: Team) -> None:
    await grant(alice, team.name, "users/bob", "notes", "READ")
    await grant(alice, team.name, "users/alice", "notes", "WRITE")
    parent = (await space_memo(alice, team.name, "notes")).json()
    r = await bob.post(f"/api/v1/{parent['name']}/comments", json={"content": "c"})
    assert r.status_code == 403
    shared = (await space_memo(alice, team.name, "share")).json()
    for body in (
        {"content": "c", "visibility": "PUBLIC"},
        {"content": "c", "tree": "elsewhere"},
        {"content": "c", "space": "spaces/other"},
    ):
        r = await bob.post(f"/api/v1/{shared['name']}/comments", json=body)
        assert r.status_code == 400, (body, r.text)
    r = await bob.post(f"/api/v1/{shared['name']}/comments", json={"content": "c"})
    assert r.status_code == 200 and r.json()["tree"] == "share"
