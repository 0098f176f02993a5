"""SpaceService: spaces, invitations and the roster (negative tests first).

Strangers and invitees must learn nothing about a space: every endpoint in
it answers 404 "not found", except the invitee's own accept/decline.
"""

from __future__ import annotations

from typing import Any

from litestar.testing import AsyncTestClient

from tests.conftest import Actor
from tests.spaces.conftest import (
    Team,
    create_space,
    invite,
    join,
    own_root,
    space_memo,
)
from tests.support import mint_key


def _everything_in(space: str, other: str) -> list[tuple[str, str, dict[str, Any] | None]]:
    return [
        ("GET", f"/api/v1/{space}", None),
        ("PATCH", f"/api/v1/{space}?updateMask=title", {"title": "mine now"}),
        ("DELETE", f"/api/v1/{space}", None),
        ("GET", f"/api/v1/{space}/members", None),
        ("PATCH", f"/api/v1/{space}/members/{other}", {"role": "ADMIN"}),
        ("DELETE", f"/api/v1/{space}/members/{other}", None),
        ("POST", f"/api/v1/{space}/invitations", {"invitee": "users/dave", "role": "ADMIN"}),
        ("DELETE", f"/api/v1/{space}/invitations/{other}", None),
    ]


async def test_strangers_and_invitees_get_not_found_everywhere(
    alice: Actor, carol: Actor, dave: Actor, team: Team
) -> None:
    for outsider in (dave, carol):
        for method, url, body in _everything_in(team.name, "alice"):
            r = await outsider.request(method, url, json=body)
            assert r.status_code == 404, (outsider.username, method, url, r.text)
            assert "not found" in r.json()["message"]
            assert "Team" not in r.text
        spaces = (await outsider.get("/api/v1/spaces")).json()["spaces"]
        assert spaces == []
    # Nothing changed behind the 404s.
    got = (await alice.get(f"/api/v1/{team.name}")).json()
    assert got["title"] == "Team"
    members = (await alice.get(f"/api/v1/{team.name}/members")).json()["members"]
    assert {(m["user"], m["role"], m["state"]) for m in members} == {
        ("users/alice", "ADMIN", "ACTIVE"),
        ("users/bob", "USER", "ACTIVE"),
        ("users/carol", "USER", "INVITED"),
    }


async def test_unknown_space_is_not_found(alice: Actor) -> None:
    assert (await alice.get("/api/v1/spaces/nope")).status_code == 404
    assert (await alice.get("/api/v1/spaces/bad_uid!")).status_code == 400


async def test_custom_method_with_a_newline_in_the_path_names_the_problem(alice: Actor) -> None:
    """Found by schemathesis: a decoded ``\n`` in a segment must not stop the
    ``x:verb`` rewrite (it answered 405 Method Not Allowed, not the 400 that
    names the bad space)."""
    r = await alice.post("/api/v1/spaces/a%0Ab/invitations/someone:accept")
    assert r.status_code == 400, r.text
    assert "is not a spaces name" in r.json()["message"]


async def test_only_the_invitee_accepts_or_declines(
    alice: Actor, bob: Actor, carol: Actor, dave: Actor, team: Team
) -> None:
    for actor, who in ((dave, "carol"), (bob, "carol"), (alice, "carol"), (dave, "dave")):
        for verb in ("accept", "decline"):
            r = await actor.post(f"/api/v1/{team.name}/invitations/{who}:{verb}")
            assert r.status_code == 404, (actor.username, who, verb, r.text)
    # Nobody else's move changed carol's invitation.
    invited = (await carol.get("/api/v1/spaces?state=INVITED")).json()["spaces"]
    assert [s["name"] for s in invited] == [team.name]
    assert invited[0]["membership"] == {"role": "USER", "state": "INVITED"}
    r = await carol.post(f"/api/v1/{team.name}/invitations/carol:accept")
    assert r.status_code == 200, r.text
    assert r.json()["state"] == "ACTIVE" and r.json()["inviter"] == "users/alice"
    assert (await carol.get(f"/api/v1/{team.name}")).status_code == 200
    assert [s["name"] for s in (await carol.get("/api/v1/spaces")).json()["spaces"]] == [team.name]
    # An accepted invitation cannot be accepted again.
    r = await carol.post(f"/api/v1/{team.name}/invitations/carol:accept")
    assert r.status_code == 404


async def test_decline_and_reinvite(alice: Actor, carol: Actor, team: Team) -> None:
    r = await carol.post(f"/api/v1/{team.name}/invitations/users/carol:decline")
    assert r.status_code in (400, 404)  # a name with a slash is not a username segment
    r = await carol.post(f"/api/v1/{team.name}/invitations/carol:decline")
    assert r.status_code == 200, r.text
    assert (await carol.get("/api/v1/spaces?state=INVITED")).json()["spaces"] == []
    assert (await invite(alice, team.name, carol, "ADMIN")).status_code == 200
    r = await carol.post(f"/api/v1/{team.name}/invitations/carol:accept")
    assert r.json()["role"] == "ADMIN"


async def test_plain_members_cannot_manage(bob: Actor, dave: Actor, team: Team) -> None:
    for method, url, body in _everything_in(team.name, "alice"):
        if method == "GET":
            assert (await bob.request(method, url)).status_code == 200
            continue
        r = await bob.request(method, url, json=body)
        assert r.status_code == 403, (method, url, r.text)
    assert (await invite(bob, team.name, dave)).status_code == 403


async def test_invitation_errors(alice: Actor, bob: Actor, carol: Actor, team: Team) -> None:
    assert (await invite(alice, team.name, bob)).status_code == 409  # already ACTIVE
    assert (await invite(alice, team.name, carol)).status_code == 409  # already INVITED
    r = await alice.post(f"/api/v1/{team.name}/invitations", json={"invitee": "users/nobody"})
    assert r.status_code == 404
    r = await alice.post(
        f"/api/v1/{team.name}/invitations", json={"invitee": "users/carol", "role": "OWNER"}
    )
    assert r.status_code == 400
    r = await alice.post(f"/api/v1/{team.name}/invitations", json={"role": "USER"})
    assert r.status_code == 400


async def test_revoke_invitation(alice: Actor, bob: Actor, carol: Actor, team: Team) -> None:
    assert (await alice.delete(f"/api/v1/{team.name}/invitations/bob")).status_code == 404
    assert (await alice.delete(f"/api/v1/{team.name}/invitations/carol")).status_code == 200
    r = await carol.post(f"/api/v1/{team.name}/invitations/carol:accept")
    assert r.status_code == 404
    assert (await carol.get("/api/v1/spaces?state=INVITED")).json()["spaces"] == []


async def test_last_active_admin_cannot_leave_be_demoted_or_removed(
    alice: Actor, bob: Actor, team: Team
) -> None:
    r = await alice.delete(f"/api/v1/{team.name}/members/alice")
    assert r.status_code == 409 and r.json()["code"] == 9
    assert "last active ADMIN" in r.json()["message"]
    r = await alice.patch(f"/api/v1/{team.name}/members/alice", json={"role": "USER"})
    assert r.status_code == 409
    assert (await alice.get(f"/api/v1/{team.name}")).json()["membership"]["role"] == "ADMIN"
    # With a second ADMIN, the first may go; then the second is the last.
    r = await alice.patch(f"/api/v1/{team.name}/members/bob", json={"role": "ADMIN"})
    assert r.status_code == 200 and r.json()["role"] == "ADMIN"
    assert (await alice.delete(f"/api/v1/{team.name}/members/alice")).status_code == 200
    assert (await alice.get(f"/api/v1/{team.name}")).status_code == 404
    assert (await bob.delete(f"/api/v1/{team.name}/members/bob")).status_code == 409
    assert (
        await bob.patch(f"/api/v1/{team.name}/members/bob", json={"role": "USER"})
    ).status_code == 409


async def test_member_leaves_and_admin_removes(
    alice: Actor, bob: Actor, carol: Actor, team: Team
) -> None:
    await carol.post(f"/api/v1/{team.name}/invitations/carol:accept")
    assert (await bob.delete(f"/api/v1/{team.name}/members/carol")).status_code == 403
    assert (await bob.delete(f"/api/v1/{team.name}/members/bob")).status_code == 200
    assert (await bob.get(f"/api/v1/{team.name}")).status_code == 404
    assert (await alice.delete(f"/api/v1/{team.name}/members/carol")).status_code == 200
    assert (await carol.get(f"/api/v1/{team.name}")).status_code == 404
    assert (await alice.delete(f"/api/v1/{team.name}/members/carol")).status_code == 404
    members = (await alice.get(f"/api/v1/{team.name}/members")).json()["members"]
    assert [m["user"] for m in members] == ["users/alice"]


async def test_removed_space_member_cannot_read_space(alice: Actor, bob: Actor, team: Team) -> None:
    """Regression: removal takes read away on the very next request, author or not."""
    r = await space_memo(bob, team.name, "share", content="bob in the space")
    assert r.status_code == 200, r.text
    bobs = r.json()
    alices = (await space_memo(alice, team.name, "share", content="alice in the space")).json()
    assert {m["name"] for m in (await bob.get("/api/v1/memos")).json()["memos"]} >= {
        bobs["name"],
        alices["name"],
    }
    assert (await alice.delete(f"/api/v1/{team.name}/members/bob")).status_code == 200
    for name in (bobs["name"], alices["name"]):
        r = await bob.get(f"/api/v1/{name}")
        assert r.status_code == 404 and "in the space" not in r.text
        r = await bob.patch(f"/api/v1/{name}?updateMask=content", json={"content": "x"})
        assert r.status_code == 404
        assert (await bob.delete(f"/api/v1/{name}")).status_code == 404
    listed = (await bob.get("/api/v1/memos")).json()["memos"]
    assert listed == []
    stats = (await bob.get("/api/v1/users/bob:getStats")).json()
    assert stats["totalMemoCount"] == 0
    # The memo stays where it was, for the members who remain.
    assert (await alice.get(f"/api/v1/{bobs['name']}")).json()["content"] == "bob in the space"


async def test_create_get_update_space(alice: Actor) -> None:
    created = await create_space(alice, "Lab", description="d")
    assert created["name"].startswith("spaces/")
    assert created["creator"] == "users/alice"
    assert created["defaultMemberGrants"] == [{"path": "share", "level": "WRITE"}]
    assert created["membership"] == {"role": "ADMIN", "state": "ACTIVE"}
    r = await alice.patch(
        f"/api/v1/{created['name']}",
        json={"title": "Lab 2", "defaultMemberGrants": [{"path": "share/inbox", "level": "READ"}]},
    )
    assert r.status_code == 200, r.text
    assert r.json()["title"] == "Lab 2" and r.json()["description"] == "d"
    assert r.json()["defaultMemberGrants"] == [{"path": "share.inbox", "level": "READ"}]
    r = await alice.patch(f"/api/v1/{created['name']}?updateMask=owner", json={})
    assert r.status_code == 400
    for bad in ({"title": ""}, {"title": "x" * 300}):
        assert (await alice.post("/api/v1/spaces", json=bad)).status_code == 400
    assert (await alice.post("/api/v1/spaces", json={})).status_code == 400
    for grants in (
        [{"path": "~", "level": "WRITE"}],
        [{"path": "a..b", "level": "READ"}],
        [{"path": "share", "level": "ALL"}],
    ):
        r = await alice.post("/api/v1/spaces", json={"title": "x", "defaultMemberGrants": grants})
        assert r.status_code == 400, grants
    r = await alice.post("/api/v1/spaces?spaceId=lab", json={"title": "Lab"})
    assert r.status_code == 200 and r.json()["name"] == "spaces/lab"
    assert (
        await alice.post("/api/v1/spaces?spaceId=lab", json={"title": "Lab"})
    ).status_code == 409
    assert (await alice.get("/api/v1/spaces/lab")).json()["title"] == "Lab"


async def test_list_spaces_pages(alice: Actor) -> None:
    made = [(await create_space(alice, f"S{i}"))["name"] for i in range(5)]
    seen: list[str] = []
    token = ""
    while True:
        r = await alice.get(f"/api/v1/spaces?pageSize=2&pageToken={token}")
        assert r.status_code == 200, r.text
        seen += [s["name"] for s in r.json()["spaces"]]
        token = r.json()["nextPageToken"]
        if not token:
            break
    assert seen == made
    assert (await alice.get("/api/v1/spaces?pageToken=garbage")).status_code == 400
    assert (await alice.get("/api/v1/spaces?state=GONE")).status_code == 400


async def test_list_members_pages(alice: Actor, team: Team) -> None:
    """One member per page, in user order, then no token; a forged position is a 400."""
    seen: list[str] = []
    token = ""
    while True:
        r = await alice.get(f"/api/v1/{team.name}/members?pageSize=1&pageToken={token}")
        assert r.status_code == 200, r.text
        assert len(r.json()["members"]) == 1
        seen += [m["user"] for m in r.json()["members"]]
        token = r.json()["nextPageToken"]
        if len(seen) == 3:
            break
    assert seen == ["users/alice", "users/bob", "users/carol"] and token == ""
    r = await alice.get(f"/api/v1/{team.name}/members?pageToken=garbage")
    assert r.status_code == 400 and "pageToken" in r.json()["message"]


async def test_delete_space_deletes_its_memos(alice: Actor, bob: Actor, team: Team) -> None:
    memo = (await space_memo(bob, team.name, "share")).json()
    personal = await bob.memo("kept", visibility="PRIVATE")
    assert (await alice.delete(f"/api/v1/{team.name}")).status_code == 200
    assert (await alice.get(f"/api/v1/{team.name}")).status_code == 404
    assert (await bob.get(f"/api/v1/{memo['name']}")).status_code == 404
    assert (await bob.get(f"/api/v1/{personal['name']}")).status_code == 200
    # A new space never inherits a deleted one's memos.
    fresh = await create_space(alice, "Fresh")
    await join(alice, fresh["name"], bob)
    assert [m["name"] for m in (await bob.get("/api/v1/memos")).json()["memos"]] == [
        personal["name"]
    ]


async def test_restricted_keys_and_spaces(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor, carol: Actor, team: Team
) -> None:
    other = await create_space(alice, "Other")
    # Declaring: only spaces the holder is an ACTIVE member of.
    assert (await mint_key(carol, scope="READ", spaces=[{"space": team.name}])).status_code == 400
    assert (await mint_key(bob, scope="READ", spaces=[{"space": other["name"]}])).status_code == 400
    assert (await mint_key(bob, scope="READ", spaces=[{"space": "spaces/nope"}])).status_code == 400
    bad_trees = [{"space": team.name, "trees": [{"path": "a..b", "level": "READ"}]}]
    assert (await mint_key(bob, scope="READ", spaces=bad_trees)).status_code == 400
    twice = [{"space": team.name}, {"space": team.name}]
    assert (await mint_key(bob, scope="READ", spaces=twice)).status_code == 400
    r = await mint_key(
        bob,
        scope="WRITE",
        spaces=[{"space": team.name, "trees": [{"path": "~/x", "level": "WRITE"}]}],
    )
    assert r.status_code == 200, r.text
    bob_id = bob.user["name"]  # users/bob
    assert bob_id == "users/bob"
    declared = r.json()["personalAccessToken"]["restriction"]["spaces"][0]
    assert declared["admin"] is False and declared["trees"][0]["path"].startswith("home.")
    narrow = {"Authorization": f"Bearer {r.json()['token']}"}
    await own_root(alice, team.name)  # so alice's key could reach bob's home
    r = await mint_key(alice, scope="READ", personal="NONE", spaces=[{"space": team.name}])
    wide = {"Authorization": f"Bearer {r.json()['token']}"}

    in_share = (await space_memo(bob, team.name, "share")).json()
    in_home = (await space_memo(bob, team.name, "~/x/y")).json()
    in_other = (await space_memo(alice, other["name"], "share")).json()
    listed = {
        m["name"] for m in (await client.get("/api/v1/memos", headers=narrow)).json()["memos"]
    }
    assert listed == {in_home["name"]}
    assert (await client.get(f"/api/v1/{in_share['name']}", headers=narrow)).status_code == 404
    listed = {m["name"] for m in (await client.get("/api/v1/memos", headers=wide)).json()["memos"]}
    assert listed == {in_share["name"], in_home["name"]}
    assert (await client.get(f"/api/v1/{in_other['name']}", headers=wide)).status_code == 404
    # Writing through the key: only under its WRITE ceiling.
    r = await client.post(
        "/api/v1/memos", json={"space": team.name, "tree": "share", "content": "x"}, headers=narrow
    )
    assert r.status_code == 403
    r = await client.post(
        "/api/v1/memos", json={"space": team.name, "tree": "~.x", "content": "x"}, headers=narrow
    )
    assert r.status_code == 200, r.text
    # Reading the roster of a declared space is allowed; managing it is not.
    assert (await client.get(f"/api/v1/{team.name}", headers=wide)).status_code == 200
    assert (await client.get(f"/api/v1/{team.name}/members", headers=wide)).status_code == 200
    assert (await client.get(f"/api/v1/{other['name']}", headers=wide)).status_code == 404
    spaces = (await client.get("/api/v1/spaces", headers=wide)).json()["spaces"]
    assert [s["name"] for s in spaces] == [team.name]
    for method, url, body in _everything_in(team.name, "bob"):
        if method != "GET":
            r = await client.request(method, url, json=body, headers=wide)
            assert r.status_code == 403, (method, url)
    assert (
        await client.post("/api/v1/spaces", json={"title": "x"}, headers=wide)
    ).status_code == 403
    # Losing membership takes it from the key at the next request.
    assert (await alice.delete(f"/api/v1/{team.name}/members/bob")).status_code == 200
    assert (await client.get("/api/v1/memos", headers=narrow)).json()["memos"] == []


async def test_operation_ids(client: AsyncTestClient[Any]) -> None:
    doc = (await client.get("/api/v1/openapi.json")).json()
    ops = {op["operationId"]: path for path, item in doc["paths"].items() for op in item.values()}
    for name in (
        "ListSpaces",
        "CreateSpace",
        "GetSpace",
        "UpdateSpace",
        "DeleteSpace",
        "CreateInvitation",
        "AcceptInvitation",
        "DeclineInvitation",
        "RevokeInvitation",
        "ListMembers",
        "UpdateMember",
        "DeleteMember",
    ):
        assert f"SpaceService_{name}" in ops
    assert ops["SpaceService_AcceptInvitation"].endswith("/invitations/{username}:accept")


async def test_last_space_admin_cannot_be_archived_or_deleted(
    alice: Actor, bob: Actor, team: Team
) -> None:
    own = await create_space(bob, "Bob's")
    r = await alice.patch("/api/v1/users/bob?updateMask=state", json={"state": "ARCHIVED"})
    assert r.status_code == 409 and own["name"] in r.json()["message"]
    assert (await alice.delete("/api/v1/users/bob")).status_code == 409
    assert (await bob.get("/api/v1/spaces")).status_code == 200  # still active
    await join(bob, own["name"], alice, "ADMIN")
    r = await alice.patch("/api/v1/users/bob?updateMask=state", json={"state": "ARCHIVED"})
    assert r.status_code == 200, r.text
