"""``GET /api/v1/memos/{memo}/history``: versions rebuilt from events, under the current audience."""

from __future__ import annotations

from typing import Any

from litestar.testing import AsyncTestClient

from tests.conftest import Actor
from tests.related.helpers import make_public
from tests.spaces import conftest as spaces
from tests.spaces.conftest import Team, space_memo

carol, dave, team = spaces.carol, spaces.dave, spaces.team  # the space fixtures, reused here


async def history(actor: Actor | AsyncTestClient[Any], name: str, **params: Any) -> Any:
    return await actor.get(f"/api/v1/{name}/history", params=params)


async def versions(actor: Actor, name: str) -> list[dict[str, Any]]:
    r = await history(actor, name)
    assert r.status_code == 200, r.text
    return list(r.json()["versions"])


async def edit(actor: Actor, name: str, mask: str, **body: Any) -> None:
    r = await actor.patch(f"/api/v1/{name}?updateMask={mask}", json=body)
    assert r.status_code == 200, r.text


async def test_versions_after_edits_archive_and_restore(alice: Actor) -> None:
    m = await alice.memo("one")
    name = m["name"]
    await edit(alice, name, "content", content="two")
    await edit(alice, name, "visibility", visibility="PROTECTED")
    await edit(alice, name, "state", state="ARCHIVED")
    await edit(alice, name, "state", state="NORMAL")
    await edit(alice, name, "content,pinned", content="three", pinned=True)
    got = await versions(alice, name)
    assert [(v["version"], v["kind"]) for v in got] == [
        (6, "UPDATE"),
        (5, "RESTORE"),
        (4, "ARCHIVE"),
        (3, "UPDATE"),
        (2, "UPDATE"),
        (1, "CREATE"),
    ]
    assert [v["content"] for v in got] == ["three", "two", "two", "two", "two", "one"]
    assert [v["visibility"] for v in got] == ["PROTECTED"] * 4 + ["PRIVATE"] * 2
    assert [v["state"] for v in got] == [
        "NORMAL",
        "NORMAL",
        "ARCHIVED",
        "NORMAL",
        "NORMAL",
        "NORMAL",
    ]
    assert [v["pinned"] for v in got] == [True] + [False] * 5
    assert got[-1]["name"] == f"{name}/history/1"
    assert {v["actor"] for v in got} == {"users/alice"}
    assert got[0]["origin"] == {"kind": "access_token"}
    assert all(v["displayTime"] == m["createTime"] for v in got)
    current = (await alice.get(f"/api/v1/{name}")).json()
    assert (got[0]["content"], got[0]["updateTime"]) == (current["content"], current["updateTime"])
    assert "space" not in got[0] and "tree" not in got[0]


async def test_pages_walk_every_version_once(alice: Actor, bob: Actor) -> None:
    m = await alice.memo("v1", visibility="PROTECTED")
    for i in range(2, 8):
        await edit(alice, m["name"], "content", content=f"v{i}")
    seen: list[str] = []
    token = ""
    for _ in range(10):
        r = await history(alice, m["name"], pageSize=3, pageToken=token)
        assert r.status_code == 200, r.text
        seen += [v["content"] for v in r.json()["versions"]]
        token = r.json()["nextPageToken"]
        if not token:
            break
    assert seen == [f"v{i}" for i in range(7, 0, -1)]
    first = (await history(alice, m["name"], pageSize=3)).json()["nextPageToken"]
    assert (await history(alice, m["name"], pageToken=first + "x")).status_code == 400
    assert (await history(bob, m["name"], pageToken=first)).status_code == 400  # another caller's
    other = await alice.memo("other")
    assert (await history(alice, other["name"], pageToken=first)).status_code == 400


async def test_history_follows_the_current_audience(
    alice: Actor, bob: Actor, client: AsyncTestClient[Any]
) -> None:
    """Bob reads the history exactly while he can read the memo, never its PRIVATE drafts."""
    private = await alice.memo("private")
    assert (await history(bob, private["name"])).status_code == 404
    m = await alice.memo("draft")
    await edit(alice, m["name"], "content,visibility", content="public now", visibility="PROTECTED")
    got = await versions(bob, m["name"])
    assert [v["content"] for v in got] == ["public now"]
    assert [v["content"] for v in await versions(alice, m["name"])] == ["public now", "draft"]
    assert (await history(client, m["name"])).status_code == 401  # a user could read it
    await edit(alice, m["name"], "visibility", visibility="PRIVATE")
    r = await history(bob, m["name"])
    assert r.status_code == 404 and "draft" not in r.text
    assert (await history(client, private["name"])).status_code == 404


async def test_archived_and_deleted(alice: Actor, bob: Actor) -> None:
    m = await alice.memo("x", visibility="PROTECTED")
    await edit(alice, m["name"], "state", state="ARCHIVED")
    assert (await history(bob, m["name"])).status_code == 404  # archived: creator only
    assert len(await versions(alice, m["name"])) == 2
    assert (await alice.delete(f"/api/v1/{m['name']}")).status_code == 200
    assert (await history(alice, m["name"])).status_code == 404


async def test_new_memo_never_inherits_a_deleted_ones_events(alice: Actor) -> None:
    """SQLite may hand a deleted memo's id to the next memo; its events must not follow."""
    old = await alice.memo("old secret")
    await edit(alice, old["name"], "content", content="older secret")
    assert (await alice.delete(f"/api/v1/{old['name']}")).status_code == 200
    new = await alice.memo("fresh")
    got = await versions(alice, new["name"])
    assert [(v["version"], v["kind"], v["content"]) for v in got] == [(1, "CREATE", "fresh")]


async def test_public_memo_history_for_anonymous_in_public_mode(
    alice: Actor, client: AsyncTestClient[Any]
) -> None:
    m = await alice.memo("hello", visibility="PUBLIC")
    await make_public(alice)
    r = await history(client, m["name"])
    assert r.status_code == 200 and r.json()["versions"][0]["content"] == "hello"


async def test_batch_replace_shows_in_history(alice: Actor) -> None:
    await alice.post("/api/v1/memos?memoId=imp-1", json={"content": "first import"})
    body = {"memos": [{"memoId": "imp-1", "content": "second import"}], "onConflict": "REPLACE"}
    assert (await alice.post("/api/v1/memos:batchCreate", json=body)).status_code == 200
    got = await versions(alice, "memos/imp-1")
    assert [(v["kind"], v["content"]) for v in got] == [
        ("UPDATE", "second import"),
        ("CREATE", "first import"),
    ]


async def test_space_memo_history_follows_membership(alice: Actor, bob: Actor, team: Team) -> None:
    r = await space_memo(alice, team.name, "share", content="team note")
    assert r.status_code == 200, r.text
    name = r.json()["name"]
    await edit(alice, name, "content", content="team note v2")
    got = await versions(bob, name)
    assert [v["content"] for v in got] == ["team note v2", "team note"]
    assert {(v["space"], v["tree"]) for v in got} == {(team.name, "share")}
    assert (await alice.delete(f"/api/v1/{team.name}/members/bob")).status_code == 200
    r = await history(bob, name)
    assert r.status_code == 404 and "team note" not in r.text


async def test_past_space_location_is_hidden_from_non_members(
    alice: Actor, dave: Actor, team: Team
) -> None:
    """A memo moved out of a space keeps its old versions, but not their space or path,
    for a reader who is not a member there."""
    r = await space_memo(alice, team.name, "~/plans", content="in the space")
    name = r.json()["name"]
    await edit(alice, name, "space,visibility", space="", visibility="PROTECTED")
    got = await versions(dave, name)
    assert [v["visibility"] for v in got] == ["PROTECTED"]  # the SPACE era is alice's (0021)
    assert all("space" not in v and "tree" not in v for v in got)
    assert team.name.split("/")[1] not in str(got) and "plans" not in str(got)
    mine = await versions(alice, name)
    assert (mine[1]["space"], mine[1]["tree"]) == (team.name, "~.plans")


# --- decision 0021: versions written while the memo was less visible are the author's ---


async def test_widening_in_steps_shows_each_reader_only_as_wide_versions(
    alice: Actor, bob: Actor, dave: Actor, team: Team, client: AsyncTestClient[Any]
) -> None:
    m = await alice.memo("private draft")
    name = m["name"]
    await edit(
        alice,
        name,
        "content,visibility,space,tree",
        content="team draft",
        visibility="SPACE",
        space=team.name,
        tree="share",
    )
    await edit(alice, name, "content", content="team draft 2")
    await edit(
        alice, name, "content,visibility,space", content="published", visibility="PUBLIC", space=""
    )
    await edit(alice, name, "content", content="published 2")
    await make_public(alice)
    expected = ["published 2", "published"]
    assert [v["content"] for v in await versions(bob, name)] == expected  # a member, too
    assert [v["content"] for v in await versions(dave, name)] == expected
    r = await history(client, name)
    assert r.status_code == 200, r.text
    assert [v["content"] for v in r.json()["versions"]] == expected
    assert "draft" not in r.text
    assert [v["content"] for v in await versions(alice, name)] == [
        "published 2",
        "published",
        "team draft 2",
        "team draft",
        "private draft",
    ]
    # Narrowing again keeps the wider versions readable to the narrower audience.
    await edit(alice, name, "visibility", visibility="PROTECTED")
    assert [v["content"] for v in await versions(bob, name)] == [
        "published 2",
        "published 2",
        "published",
    ]


async def test_move_from_a_home_path_to_share_keeps_the_home_era_private(
    alice: Actor, bob: Actor, team: Team
) -> None:
    r = await space_memo(alice, team.name, "~", content="at home")
    name = r.json()["name"]
    await edit(alice, name, "tree", tree="share")
    await edit(alice, name, "content", content="shared")
    got = await versions(bob, name)
    # Version 1 (at alice's home) is hers; version 2 is the move itself, already at share.
    assert [(v["version"], v["content"], v["tree"]) for v in got] == [
        (3, "shared", "share"),
        (2, "at home", "share"),
    ]
    assert len(await versions(alice, name)) == 3


async def test_hidden_versions_do_not_shorten_pages(alice: Actor, bob: Actor) -> None:
    m = await alice.memo("d0")
    for i in range(1, 6):
        await edit(alice, m["name"], "content", content=f"d{i}")  # PRIVATE drafts
    await edit(alice, m["name"], "content,visibility", content="p0", visibility="PROTECTED")
    for i in range(1, 5):
        await edit(alice, m["name"], "content", content=f"p{i}")
    pages: list[list[str]] = []
    token = ""
    for _ in range(10):
        r = await history(bob, m["name"], pageSize=2, pageToken=token)
        assert r.status_code == 200, r.text
        pages.append([v["content"] for v in r.json()["versions"]])
        token = r.json()["nextPageToken"]
        if not token:
            break
    assert pages == [["p4", "p3"], ["p2", "p1"], ["p0"]]


async def test_authors_key_sees_only_versions_inside_its_ceiling(alice: Actor, team: Team) -> None:
    from tests.grants.conftest import key

    r = await space_memo(alice, team.name, "~", content="at home")
    name = r.json()["name"]
    await edit(alice, name, "content,tree", content="shared", tree="share")
    agent = await key(
        alice,
        scope="READ",
        personal="NONE",
        spaces=[{"space": team.name, "trees": [{"path": "share", "level": "READ"}]}],
    )
    r = await alice.get(f"/api/v1/{name}/history", headers=agent)
    assert r.status_code == 200, r.text
    assert [v["content"] for v in r.json()["versions"]] == ["shared"]
    assert [v["content"] for v in await versions(alice, name)] == ["shared", "at home"]
