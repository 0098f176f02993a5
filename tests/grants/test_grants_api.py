"""Groups and grants endpoints: provisioning defaults, who may manage what, and live effect."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from litestar.testing import AsyncTestClient

from app.db.engine import create_engine
from app.db.schema import space_event, space_grant, space_group_member
from app.settings import Settings
from tests.conftest import Actor
from tests.grants.conftest import access, grant, home, key, revoke_grants
from tests.spaces.conftest import Team, create_space, join, space_memo


async def _rows(settings: Settings, query: Any) -> list[Any]:
    engine = create_engine(settings.database_url)
    try:
        async with engine.connect() as conn:
            return list((await conn.execute(query)).all())
    finally:
        await engine.dispose()


async def test_provisioning_defaults(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor, team: Team
) -> None:
    alice_home, bob_home = await home(alice, team.name), await home(bob, team.name)
    assert await access(client, alice.headers, team.name) == {
        (alice_home, "OWNER"),
        ("share", "OWNER"),
    }
    assert await access(client, bob.headers, team.name) == {
        (bob_home, "OWNER"),
        ("share", "WRITE"),
    }
    # No root for the creator: homes stay private to their owners.
    in_bob_home = (await space_memo(bob, team.name, "~")).json()
    assert (await alice.get(f"/api/v1/{in_bob_home['name']}")).status_code == 404
    assert (await space_memo(alice, team.name, "")).status_code == 403
    assert (await space_memo(bob, team.name, "elsewhere")).status_code == 403
    # A space created with other defaults gives those to the next member.
    other = await create_space(
        alice, "Other", defaultMemberGrants=[{"path": "inbox", "level": "READ"}]
    )
    await join(alice, other["name"], bob)
    assert ("inbox", "READ") in await access(client, bob.headers, other["name"])
    assert ("share", "WRITE") not in await access(client, bob.headers, other["name"])


async def test_groups(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor, carol: Actor, team: Team
) -> None:
    r = await alice.post(f"/api/v1/{team.name}/groups", json={"title": "Readers"})
    assert r.status_code == 200, r.text
    group = r.json()
    assert group["name"].startswith(f"{team.name}/groups/") and group["title"] == "Readers"
    assert (await bob.post(f"/api/v1/{team.name}/groups", json={"title": "x"})).status_code == 403
    listed = (await bob.get(f"/api/v1/{team.name}/groups")).json()["groups"]
    assert [g["name"] for g in listed] == [group["name"]]
    members = f"/api/v1/{group['name']}/members"
    # carol is only invited: not a member yet, so not a group member either.
    assert (await alice.post(members, json={"user": "users/carol"})).status_code == 412
    assert (await bob.post(members, json={"user": "users/bob"})).status_code == 403
    assert (await alice.post(members, json={"user": "users/bob"})).status_code == 200
    assert (await alice.post(members, json={"user": "users/bob"})).status_code == 409
    listed = (await alice.get(members)).json()["members"]
    assert [m["user"] for m in listed] == ["users/bob"]
    # A group grant counts for its members.
    await grant(alice, team.name, "users/alice", "proj", "WRITE")
    await grant(alice, team.name, group["name"], "proj", "READ")
    memo = (await space_memo(alice, team.name, "proj.plan", content="the plan")).json()
    assert (await bob.get(f"/api/v1/{memo['name']}")).status_code == 200
    assert ("proj", "READ") in await access(client, bob.headers, team.name)
    # Out of the group: read goes on the next request.
    assert (await alice.delete(f"{members}/bob")).status_code == 200
    assert (await bob.get(f"/api/v1/{memo['name']}")).status_code == 404
    assert (await alice.delete(f"{members}/bob")).status_code == 404
    assert (await alice.get(f"/api/v1/{team.name}/groups/999/members")).status_code == 404


async def test_who_manages_grants(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor, carol: Actor, team: Team
) -> None:
    await carol.post(f"/api/v1/{team.name}/invitations/carol:accept")
    bob_home = await home(bob, team.name)
    # bob owns his home: he may share it, with ~ sugar.
    made = await grant(bob, team.name, "users/carol", "~/notes", "READ")
    assert made["path"] == f"{bob_home}.notes" and made["level"] == "READ"
    assert made["principal"] == "users/carol"
    # bob only writes at share: managing grants there is refused.
    await grant(bob, team.name, "users/carol", "share", "OWNER", status=403)
    await grant(bob, team.name, "users/bob", "", "OWNER", status=403)
    shared = [
        g
        for g in (await alice.get(f"/api/v1/{team.name}/grants")).json()["grants"]
        if g["path"] == "share" and g["principal"] == "users/bob"
    ]
    assert (await bob.delete(f"/api/v1/{shared[0]['name']}")).status_code == 403
    # Bad input.
    await grant(alice, team.name, "users/dave", "share", "READ", status=404)
    await grant(alice, team.name, "users/bob", "a..b", "READ", status=400)
    await grant(alice, team.name, "users/bob", "share", "ALL", status=400)
    await grant(alice, team.name, "spaces/other/groups/1", "share", "READ", status=400)
    await grant(alice, team.name, f"{team.name}/groups/77", "share", "READ", status=404)
    # bob lists his own grants and those he manages, not alice's.
    seen = {
        (g["principal"], g["path"])
        for g in (await bob.get(f"/api/v1/{team.name}/grants")).json()["grants"]
    }
    assert ("users/carol", f"{bob_home}.notes") in seen
    assert ("users/bob", "share") in seen
    assert ("users/alice", "share") not in seen
    # The space ADMIN manages anything; carol sees bob's notes now.
    note = (await space_memo(bob, team.name, "~/notes/x")).json()
    assert (await carol.get(f"/api/v1/{note['name']}")).status_code == 200
    assert (await alice.delete(f"/api/v1/{made['name']}")).status_code == 200
    assert (await carol.get(f"/api/v1/{note['name']}")).status_code == 404
    assert (await alice.delete(f"/api/v1/{made['name']}")).status_code == 404


async def test_admin_granting_itself_root_is_recorded(
    settings: Settings, client: AsyncTestClient[Any], alice: Actor, bob: Actor, team: Team
) -> None:
    await grant(alice, team.name, "users/alice", "", "OWNER")
    assert ("", "OWNER") in await access(client, alice.headers, team.name)
    memo = (await space_memo(bob, team.name, "~")).json()
    assert (await alice.get(f"/api/v1/{memo['name']}")).status_code == 200
    kinds = [k for (k,) in await _rows(settings, sa.select(space_event.c.kind))]
    assert "GRANT_SELF_ROOT" in kinds


async def test_restricted_key_is_barred_from_management_but_sees_its_access(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor, team: Team
) -> None:
    wide = await key(alice, scope="WRITE", personal="NONE", spaces=[{"space": team.name}])
    group = (await alice.post(f"/api/v1/{team.name}/groups", json={"title": "g"})).json()
    some = (await alice.get(f"/api/v1/{team.name}/grants")).json()["grants"][0]
    for method, url, body in (
        ("POST", f"/api/v1/{team.name}/groups", {"title": "x"}),
        ("POST", f"/api/v1/{group['name']}/members", {"user": "users/bob"}),
        ("DELETE", f"/api/v1/{group['name']}/members/bob", None),
        (
            "POST",
            f"/api/v1/{team.name}/grants",
            {"principal": "users/alice", "path": "", "level": "OWNER"},
        ),
        ("DELETE", f"/api/v1/{some['name']}", None),
    ):
        r = await client.request(method, url, json=body, headers=wide)
        assert r.status_code == 403, (method, url, r.text)
    assert len((await alice.get(f"/api/v1/{team.name}/grants")).json()["grants"]) == 4
    assert (await alice.get(f"/api/v1/{group['name']}/members")).json()["members"] == []
    narrow = await key(
        bob,
        scope="READ",
        spaces=[{"space": team.name, "trees": [{"path": "share.a", "level": "OWNER"}]}],
    )
    assert await access(client, narrow, team.name) == {("share.a", "WRITE")}
    r = await client.get(f"/api/v1/{team.name}/access", headers=narrow)
    assert r.json()["restricted"] is True


async def test_revocation_is_live_for_sessions_and_keys(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor, team: Team
) -> None:
    agent = await key(bob, scope="WRITE", spaces=[{"space": team.name}])
    first = await client.post(
        "/api/v1/memos", json={"content": "a", "space": team.name, "tree": "share"}, headers=agent
    )
    assert first.status_code == 200, first.text
    # Lower bob from WRITE to READ at share.
    await revoke_grants(alice, team.name, "users/bob", "share")
    await grant(alice, team.name, "users/bob", "share", "READ")
    r = await client.post(
        "/api/v1/memos", json={"content": "b", "space": team.name, "tree": "share"}, headers=agent
    )
    assert r.status_code == 403
    assert (await space_memo(bob, team.name, "share")).status_code == 403
    url = f"/api/v1/{first.json()['name']}?updateMask=content"
    assert (await client.patch(url, json={"content": "x"}, headers=agent)).status_code == 403
    assert (await client.get(f"/api/v1/{first.json()['name']}", headers=agent)).status_code == 200
    assert ("share", "READ") in await access(client, agent, team.name)
    # And back up again.
    await grant(alice, team.name, "users/bob", "share", "WRITE")
    assert (await client.patch(url, json={"content": "x"}, headers=agent)).status_code == 200


async def test_leaving_deletes_grants_and_group_seats(
    settings: Settings, client: AsyncTestClient[Any], alice: Actor, bob: Actor, team: Team
) -> None:
    group = (await alice.post(f"/api/v1/{team.name}/groups", json={"title": "g"})).json()
    await alice.post(f"/api/v1/{group['name']}/members", json={"user": "users/bob"})
    await grant(alice, team.name, "users/bob", "proj", "OWNER")
    agent = await key(bob, scope="READ", spaces=[{"space": team.name}])
    memo = (await space_memo(bob, team.name, "share")).json()
    assert (await client.get("/api/v1/memos", headers=agent)).json()["memos"]
    assert (await alice.delete(f"/api/v1/{team.name}/members/bob")).status_code == 200
    # The key declared a space its holder lost: it sees nothing there, not even its access.
    assert (await client.get("/api/v1/memos", headers=agent)).json()["memos"] == []
    assert (await client.get(f"/api/v1/{memo['name']}", headers=agent)).status_code == 404
    assert (await client.get(f"/api/v1/{team.name}/access", headers=agent)).status_code == 404
    bob_id = 2
    assert (
        await _rows(settings, sa.select(space_grant).where(space_grant.c.user_id == bob_id)) == []
    )
    assert (
        await _rows(
            settings, sa.select(space_group_member).where(space_group_member.c.user_id == bob_id)
        )
        == []
    )
    # Coming back gives the defaults only, not the old proj grant.
    await join(alice, team.name, bob)
    assert ("proj", "OWNER") not in await access(client, bob.headers, team.name)
    assert (await client.get("/api/v1/memos", headers=agent)).json()["memos"] != []


async def test_operation_ids(client: AsyncTestClient[Any]) -> None:
    doc = (await client.get("/api/v1/openapi.json")).json()
    ops = {op["operationId"] for item in doc["paths"].values() for op in item.values()}
    for name in (
        "ListGroups",
        "CreateGroup",
        "AddGroupMember",
        "RemoveGroupMember",
        "ListGrants",
        "CreateGrant",
        "DeleteGrant",
        "GetAccess",
    ):
        assert f"SpaceService_{name}" in ops


async def test_bad_ids_are_400_not_500(alice: Actor, team: Team) -> None:
    for bad in ("²", "1e3", "9999999999", "-1"):
        assert (await alice.get(f"/api/v1/{team.name}/groups/{bad}/members")).status_code == 400
        assert (await alice.delete(f"/api/v1/{team.name}/grants/{bad}")).status_code == 400
    r = await alice.post(f"/api/v1/{team.name}/groups", json={"title": ""})
    assert r.status_code == 400
    await grant(alice, team.name, "users/", "share", "READ", status=400)
