"""Fixtures for space tests: a third user and a space with a roster in every state.

``team`` is alice's space (alice ADMIN), with bob an ACTIVE USER and carol
only INVITED, so each negative test about strangers and invitees is one line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from tests.conftest import Actor, sign_up


@pytest.fixture
async def carol(client: AsyncTestClient[Any], alice: Actor) -> Actor:
    return await sign_up(client, "carol", admin=alice)


@pytest.fixture
async def dave(client: AsyncTestClient[Any], alice: Actor) -> Actor:
    """A user with no relation to any space."""
    return await sign_up(client, "dave", admin=alice)


async def create_space(actor: Actor, title: str = "Team", **fields: Any) -> dict[str, Any]:
    r = await actor.post("/api/v1/spaces", json={"title": title, **fields})
    assert r.status_code == 200, r.text
    return dict(r.json())


async def invite(admin: Actor, space: str, invitee: Actor, role: str = "USER") -> Any:
    return await admin.post(
        f"/api/v1/{space}/invitations", json={"invitee": f"users/{invitee.username}", "role": role}
    )


async def join(admin: Actor, space: str, member: Actor, role: str = "USER") -> None:
    r = await invite(admin, space, member, role)
    assert r.status_code == 200, r.text
    r = await member.post(f"/api/v1/{space}/invitations/{member.username}:accept")
    assert r.status_code == 200, r.text


@dataclass
class Team:
    name: str  # spaces/{uid}
    body: dict[str, Any]


@pytest.fixture
async def team(alice: Actor, bob: Actor, carol: Actor) -> Team:
    body = await create_space(alice, "Team", description="the team")
    await join(alice, body["name"], bob)
    r = await invite(alice, body["name"], carol)
    assert r.status_code == 200, r.text
    return Team(body["name"], body)


async def space_memo(actor: Actor, space: str, tree: str = "share", **fields: Any) -> Any:
    return await actor.post(
        "/api/v1/memos", json={"content": "in space", "space": space, "tree": tree, **fields}
    )


async def own_root(admin: Actor, space: str) -> None:
    """The space ADMIN grants itself OWNER at the root (the explicit, logged action)."""
    r = await admin.post(
        f"/api/v1/{space}/grants",
        json={"principal": f"users/{admin.username}", "path": "", "level": "OWNER"},
    )
    assert r.status_code == 200, r.text
