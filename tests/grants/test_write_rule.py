"""The write rule on every write path, over HTTP (issue 13, items 3, 4, 5 and 8).

``team``: alice is space ADMIN with OWNER at ``share``; bob is a member with
WRITE at ``share``; dave is in no space. Each test is a write the rule
refuses, checked for its status and for leaving nothing changed, next to the
allowed write that proves the refusal is about the rule and not the request.
"""

from __future__ import annotations

from typing import Any

from tests.conftest import Actor
from tests.grants.conftest import key
from tests.spaces.conftest import Team, space_memo


async def _memo(actor: Actor, name: str, headers: dict[str, str] | None = None) -> Any:
    return await actor.get(f"/api/v1/{name}", headers=headers or {})


async def _bob_space_memo(bob: Actor, team: Team, tree: str = "share") -> dict[str, Any]:
    r = await space_memo(bob, team.name, tree, content="bob's team note")
    assert r.status_code == 200, r.text
    return dict(r.json())


# --- 13.3: an OWNER who is not the creator cannot move a memo out of its space ----


async def test_owner_cannot_make_another_members_space_memo_protected_or_public(
    alice: Actor, bob: Actor, dave: Actor, team: Team
) -> None:
    m = await _bob_space_memo(bob, team)
    for visibility in ("PROTECTED", "PUBLIC", "PRIVATE"):
        for mask, body in (
            ("visibility", {"visibility": visibility}),
            ("visibility,space", {"visibility": visibility, "space": ""}),
        ):
            if (mask, visibility) == ("visibility", "PRIVATE"):
                continue  # narrowing in place is an edit (tests/spaces/test_placement.py)
            r = await alice.patch(f"/api/v1/{m['name']}?updateMask={mask}", json=body)
            assert r.status_code == 403, (mask, visibility, r.text)
    now = (await _memo(bob, m["name"])).json()
    assert (now["visibility"], now["space"], now["tree"]) == ("SPACE", team.name, "share")
    assert (await _memo(dave, m["name"])).status_code == 404
    # The OWNER still edits it in place, and moves it inside the space.
    r = await alice.patch(f"/api/v1/{m['name']}?updateMask=content", json={"content": "edited"})
    assert r.status_code == 200, r.text
    r = await alice.patch(f"/api/v1/{m['name']}?updateMask=tree", json={"tree": "share.moved"})
    assert r.status_code == 200, r.text
    # Its creator may take it out.
    r = await bob.patch(
        f"/api/v1/{m['name']}?updateMask=visibility,space",
        json={"visibility": "PROTECTED", "space": ""},
    )
    assert r.status_code == 200, r.text
    assert (await _memo(dave, m["name"])).json()["visibility"] == "PROTECTED"


async def test_owner_cannot_move_it_out_through_batch_replace(
    alice: Actor, bob: Actor, dave: Actor, team: Team
) -> None:
    m = await _bob_space_memo(bob, team)
    uid = m["name"].split("/")[1]
    for fields in ({"visibility": "PUBLIC"}, {"visibility": "PROTECTED"}, {}):
        r = await alice.post(
            "/api/v1/memos:batchCreate",
            json={
                "memos": [{"memoId": uid, "content": "taken", **fields}],
                "onConflict": "REPLACE",
            },
        )
        assert r.status_code == 403, (fields, r.text)
    now = (await _memo(bob, m["name"])).json()
    assert (now["visibility"], now["space"], now["content"]) == ("SPACE", team.name, m["content"])
    assert (await _memo(dave, m["name"])).status_code == 404
    # REPLACE that keeps it where it is works for the OWNER.
    r = await alice.post(
        "/api/v1/memos:batchCreate",
        json={
            "memos": [{"memoId": uid, "content": "kept", "space": team.name, "tree": "share"}],
            "onConflict": "REPLACE",
        },
    )
    assert r.status_code == 200, r.text
    assert (await _memo(bob, m["name"])).json()["content"] == "kept"


# --- 13.4: a key's personal reach bounds its writes too ---------------------------


async def _via(actor: Actor, headers: dict[str, str], space: str, tree: str) -> Any:
    body = {"content": "via key", "space": space, "tree": tree}
    return await actor.post("/api/v1/memos", json=body, headers=headers)


async def test_write_key_without_personal_reach_writes_only_inside_its_subtree(
    bob: Actor, dave: Actor, team: Team
) -> None:
    agent = await key(
        bob,
        scope="WRITE",
        personal="NONE",
        spaces=[{"space": team.name, "trees": [{"path": "share.a", "level": "WRITE"}]}],
    )
    for visibility in ("PUBLIC", "PROTECTED", "PRIVATE"):
        r = await bob.post(
            "/api/v1/memos", json={"content": "x", "visibility": visibility}, headers=agent
        )
        assert r.status_code == 403, (visibility, r.text)
    r = await bob.post(
        "/api/v1/memos:batchCreate",
        json={"memos": [{"content": "x", "visibility": "PUBLIC"}]},
        headers=agent,
    )
    assert r.status_code == 403, r.text
    r = await _via(bob, agent, team.name, "share")
    assert r.status_code == 403, r.text  # outside its subtree
    r = await _via(bob, agent, team.name, "share.a")
    assert r.status_code == 200, r.text
    inside = r.json()
    for mask, body in (
        ("visibility", {"visibility": "PUBLIC"}),
        ("visibility,space", {"visibility": "PRIVATE", "space": ""}),
        ("tree", {"tree": "share"}),
    ):
        r = await bob.patch(f"/api/v1/{inside['name']}?updateMask={mask}", json=body, headers=agent)
        assert r.status_code == 403, (mask, r.text)
    now = (await _memo(bob, inside["name"])).json()
    assert (now["visibility"], now["tree"]) == ("SPACE", "share.a")
    assert (await _memo(dave, inside["name"])).status_code == 404
    assert (await bob.get("/api/v1/memos?filter=visibility%20%3D%3D%20%22PUBLIC%22")).json()[
        "memos"
    ] == []
    # Its holder, with a session, may do what the key may not.
    r = await bob.patch(
        f"/api/v1/{inside['name']}?updateMask=visibility,space",
        json={"visibility": "PRIVATE", "space": ""},
    )
    assert r.status_code == 200, r.text


async def test_comments_through_keys_are_creates_at_the_parents_place(
    bob: Actor, team: Team
) -> None:
    own = await bob.memo("mine", visibility="PRIVATE")
    agent = await key(bob, scope="WRITE", personal="OWN", spaces=[])
    none = await key(bob, scope="WRITE", personal="NONE", spaces=[{"space": team.name}])
    r = await bob.post(f"/api/v1/{own['name']}/comments", json={"content": "c"}, headers=agent)
    assert r.status_code == 200, r.text
    m = await _bob_space_memo(bob, team)
    r = await bob.post(f"/api/v1/{m['name']}/comments", json={"content": "c"}, headers=none)
    assert r.status_code == 200, r.text  # a comment on a space memo stays in the space
    assert r.json()["visibility"] == "SPACE"


# --- 13.5: a writer who is not the author keeps the author's hidden links ---------


async def _relations(actor: Actor, name: str) -> set[str]:
    r = await actor.get(f"/api/v1/{name}/relations")
    assert r.status_code == 200, r.text
    return {rel["relatedMemo"]["name"] for rel in r.json()["relations"]}


async def test_writer_cannot_delete_links_to_memos_it_cannot_see(
    alice: Actor, bob: Actor, team: Team
) -> None:
    m = await _bob_space_memo(bob, team)
    hidden = await bob.memo("bob's private", visibility="PRIVATE")
    seen = await bob.memo("bob's protected", visibility="PROTECTED")
    r = await bob.patch(
        f"/api/v1/{m['name']}/relations",
        json={"relations": [{"relatedMemo": {"name": n}} for n in (hidden["name"], seen["name"])]},
    )
    assert r.status_code == 200, r.text
    assert await _relations(alice, m["name"]) == {seen["name"]}
    mine = await alice.memo("alice's protected", visibility="PROTECTED")
    # alice (OWNER at share, not the author) replaces the list she sees.
    r = await alice.patch(
        f"/api/v1/{m['name']}/relations",
        json={"relations": [{"relatedMemo": {"name": mine["name"]}}]},
    )
    assert r.status_code == 200, r.text
    assert {rel["relatedMemo"]["name"] for rel in r.json()["relations"]} == {mine["name"]}
    assert await _relations(bob, m["name"]) == {hidden["name"], mine["name"]}
    r = await alice.patch(f"/api/v1/{m['name']}/relations", json={"relations": []})
    assert r.status_code == 200, r.text
    assert r.json()["relations"] == []
    assert await _relations(bob, m["name"]) == {hidden["name"]}
    # The author replaces the whole list, its hidden-from-others links included.
    r = await bob.patch(f"/api/v1/{m['name']}/relations", json={"relations": []})
    assert r.status_code == 200, r.text
    assert await _relations(bob, m["name"]) == set()


# --- 13.8: a declaration's ``admin: false`` is enforced ----------------------------


async def _grant_principals(actor: Actor, space: str, headers: dict[str, str]) -> set[str]:
    r = await actor.get(f"/api/v1/{space}/grants", headers=headers)
    assert r.status_code == 200, r.text
    return {g["principal"] for g in r.json()["grants"]}


async def test_space_admin_key_without_admin_flag_is_a_plain_member(
    alice: Actor, bob: Actor, team: Team
) -> None:
    assert "users/bob" in await _grant_principals(alice, team.name, {})
    narrow = await key(
        alice,
        scope="READ",
        personal="NONE",
        spaces=[{"space": team.name, "trees": [{"path": "share", "level": "READ"}]}],
    )
    assert await _grant_principals(alice, team.name, narrow) == {"users/alice"}
    r = await alice.get(f"/api/v1/{team.name}", headers=narrow)
    assert r.status_code == 200, r.text
    assert r.json()["membership"]["role"] == "USER"
    listed = (await alice.get("/api/v1/spaces", headers=narrow)).json()["spaces"]
    assert [s["membership"]["role"] for s in listed] == ["USER"]
    kept = await key(
        alice, scope="READ", personal="NONE", spaces=[{"space": team.name, "admin": True}]
    )
    assert "users/bob" in await _grant_principals(alice, team.name, kept)
    assert (await alice.get(f"/api/v1/{team.name}", headers=kept)).json()["membership"][
        "role"
    ] == "ADMIN"
    # The flag preserves, never grants: bob's key with admin: true is still a USER.
    bobs = await key(
        bob, scope="READ", personal="NONE", spaces=[{"space": team.name, "admin": True}]
    )
    assert await _grant_principals(bob, team.name, bobs) == {"users/bob"}


async def test_key_without_personal_reach_uploads_only_onto_a_memo(bob: Actor, team: Team) -> None:
    import base64

    agent = await key(bob, scope="WRITE", personal="NONE", spaces=[{"space": team.name}])
    body = {"filename": "a.txt", "type": "text/plain", "content": base64.b64encode(b"hi").decode()}
    r = await bob.post("/api/v1/attachments", json=body, headers=agent)
    assert r.status_code == 403, r.text  # an unbound attachment is a personal object
    assert (await bob.get("/api/v1/attachments")).json()["attachments"] == []
    m = await _bob_space_memo(bob, team)
    r = await bob.post("/api/v1/attachments", json={**body, "memo": m["name"]}, headers=agent)
    assert r.status_code == 200, r.text
    own = await key(bob, scope="WRITE", personal="OWN", spaces=[])
    assert (await bob.post("/api/v1/attachments", json=body, headers=own)).status_code == 200
