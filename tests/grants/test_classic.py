"""The classic cases of ``access.md`` section 5, end to end through ``…/access`` and reads.

bob's member grants in ``team``: OWNER at his home, WRITE at ``share`` (the
defaults), plus what each case adds. Each case mints a key and checks the
effective grants the key answers with, and one memo the key must or must
not read.
"""

from __future__ import annotations

from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from tests.conftest import Actor
from tests.grants.conftest import access, grant, key
from tests.spaces.conftest import Team, create_space, join, space_memo

CASES: dict[str, tuple[list[dict[str, str]], set[tuple[str, str]], str, bool]] = {
    # name: (key trees, effective grants on the share lineage, memo path, key reads it)
    "member narrower than key": (
        [{"path": "", "level": "OWNER"}],
        {("share", "WRITE")},
        "share.a",
        True,
    ),
    "key narrower than member": (
        [{"path": "share.a.b", "level": "READ"}],
        {("share.a.b", "READ")},
        "share.a",
        False,
    ),
    "disjoint lineages": ([{"path": "proj", "level": "OWNER"}], set(), "share", False),
    "over-grant clamped down": (
        [{"path": "share", "level": "OWNER"}],
        {("share", "WRITE")},
        "share.x",
        True,
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
async def test_classic_ceiling(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor, team: Team, case: str
) -> None:
    trees, expected, path, readable = CASES[case]
    memo = (await space_memo(alice, team.name, path)).json()
    agent = await key(bob, scope="READ", spaces=[{"space": team.name, "trees": trees}])
    got = {g for g in await access(client, agent, team.name) if not g[0].startswith("home.")}
    assert got == expected
    r = await client.get(f"/api/v1/{memo['name']}", headers=agent)
    assert r.status_code == (200 if readable else 404)
    # The holder's own session is never clamped.
    assert (await bob.get(f"/api/v1/{memo['name']}")).status_code == 200


async def test_two_groups_on_one_path(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor, team: Team
) -> None:
    names = []
    for title in ("readers", "writers"):
        g = (await alice.post(f"/api/v1/{team.name}/groups", json={"title": title})).json()
        await alice.post(f"/api/v1/{g['name']}/members", json={"user": "users/bob"})
        names.append(g["name"])
    await grant(alice, team.name, names[0], "proj", "READ")
    await grant(alice, team.name, names[1], "proj", "WRITE")
    assert ("proj", "WRITE") in await access(client, bob.headers, team.name)
    agent = await key(
        bob,
        scope="WRITE",
        spaces=[{"space": team.name, "trees": [{"path": "proj", "level": "OWNER"}]}],
    )
    assert await access(client, agent, team.name) == {("proj", "WRITE")}
    r = await client.post(
        "/api/v1/memos", json={"content": "x", "space": team.name, "tree": "proj.a"}, headers=agent
    )
    assert r.status_code == 200, r.text


async def test_grantless_declaration_is_the_holders_access(
    client: AsyncTestClient[Any], bob: Actor, team: Team
) -> None:
    agent = await key(bob, scope="READ", spaces=[{"space": team.name}])
    assert await access(client, agent, team.name) == await access(client, bob.headers, team.name)


async def test_undeclared_space_is_invisible(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor, team: Team
) -> None:
    other = await create_space(alice, "Other")
    await join(alice, other["name"], bob)
    memo = (await space_memo(alice, other["name"], "share")).json()
    agent = await key(bob, scope="READ", spaces=[{"space": team.name}])
    assert (await client.get(f"/api/v1/{other['name']}/access", headers=agent)).status_code == 404
    assert (await client.get(f"/api/v1/{memo['name']}", headers=agent)).status_code == 404
    assert (await client.get("/api/v1/memos", headers=agent)).json()["memos"] == []


async def test_key_is_its_holders_never_another_members(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor, team: Team
) -> None:
    """A key presented with another member's name still acts only as its holder."""
    in_alice_home = (await space_memo(alice, team.name, "~")).json()
    agent = await key(bob, scope="READ", spaces=[{"space": team.name}])
    for header in ("X-User-Id", "X-Impersonate", "X-Me-As-Agent"):
        headers = {**agent, header: "alice"}
        r = await client.get(f"/api/v1/{in_alice_home['name']}", headers=headers)
        assert r.status_code == 404
        assert await access(client, headers, team.name) == await access(
            client, bob.headers, team.name
        )
