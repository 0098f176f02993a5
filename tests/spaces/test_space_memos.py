"""SPACE memos: where they may be created and moved, and who sees their space and path."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from litestar.testing import AsyncTestClient

from app.db.engine import create_engine
from app.db.schema import memo_share
from app.settings import Settings
from tests.conftest import Actor
from tests.spaces.conftest import Team, own_root, space_memo
from tests.support import make_public


@pytest.mark.parametrize(
    "body",
    [
        {"space": "TEAM"},  # no tree: the path is never implied
        {"space": "TEAM", "tree": "share", "visibility": "PRIVATE"},
        {"space": "TEAM", "tree": "share", "visibility": "PUBLIC"},
        {"space": "TEAM", "tree": "share", "visibility": "PROTECTED"},
        {"visibility": "SPACE"},
        {"visibility": "SPACE", "tree": "share"},
        {"tree": "share"},
        {"space": "TEAM", "tree": "a..b"},
        {"space": "TEAM", "tree": "share/"},
        {"space": "TEAM", "tree": "sh@re"},
        {"space": "TEAM", "tree": "x." * 32 + "x"},
        {"space": "TEAM", "tree": "a.~"},
        {"space": "not a name", "tree": "share"},
    ],
)
async def test_space_memo_create_validation(bob: Actor, team: Team, body: dict[str, Any]) -> None:
    body = {k: (team.name if v == "TEAM" else v) for k, v in body.items()}
    r = await bob.post("/api/v1/memos", json={"content": "x", **body})
    assert r.status_code == 400, r.text
    assert (await bob.get("/api/v1/memos")).json()["memos"] == []


async def test_outsiders_cannot_create_in_a_space(carol: Actor, dave: Actor, team: Team) -> None:
    for outsider in (carol, dave):
        r = await space_memo(outsider, team.name, "share")
        assert r.status_code == 404 and "not found" in r.json()["message"]
    assert (await space_memo(dave, "spaces/nope", "share")).status_code == 404


async def test_space_memo_shape_and_audience(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor, carol: Actor, dave: Actor, team: Team
) -> None:
    r = await space_memo(bob, team.name, "~/notes", content="bob's note")
    assert r.status_code == 200, r.text
    created = r.json()
    assert created["visibility"] == "SPACE"  # implied by naming a space
    assert created["space"] == team.name and created["tree"] == "~.notes"
    bob_id = created["tree"]  # rendered relative for its own home
    # Creating the space gave alice no root: bob's home is hidden until she takes it.
    assert (await alice.get(f"/api/v1/{created['name']}")).status_code == 404
    await own_root(alice, team.name)
    seen_by_alice = (await alice.get(f"/api/v1/{created['name']}")).json()
    assert seen_by_alice["space"] == team.name
    assert seen_by_alice["tree"].startswith("home.") and seen_by_alice["tree"].endswith(".notes")
    assert bob_id == "~.notes"
    root = (await space_memo(alice, team.name, "")).json()
    assert root["tree"] == ""
    for outsider in (carol, dave):
        assert (await outsider.get(f"/api/v1/{created['name']}")).status_code == 404
        assert (await outsider.get("/api/v1/memos")).json()["memos"] == []
    await make_public(alice)
    assert (await client.get(f"/api/v1/{created['name']}")).status_code == 404
    assert (await client.get("/api/v1/memos")).json()["memos"] == []


async def test_creator_with_write_or_owner_edits_a_space_memo(
    alice: Actor, bob: Actor, carol: Actor, team: Team
) -> None:
    await carol.post(f"/api/v1/{team.name}/invitations/carol:accept")
    memo = (await space_memo(bob, team.name, "share", content="original")).json()
    # carol has WRITE at share (the default) but did not write this memo.
    r = await carol.patch(f"/api/v1/{memo['name']}?updateMask=content", json={"content": "no"})
    assert r.status_code == 403
    assert (await carol.delete(f"/api/v1/{memo['name']}")).status_code == 403
    # alice owns share (the creator's default): an owner edits anyone's memo there.
    r = await alice.patch(f"/api/v1/{memo['name']}?updateMask=pinned", json={"pinned": True})
    assert r.status_code == 200, r.text
    r = await bob.patch(f"/api/v1/{memo['name']}?updateMask=content", json={"content": "edited"})
    assert r.status_code == 200 and r.json()["content"] == "edited"
    assert r.json()["space"] == team.name and r.json()["tree"] == "share"


async def test_move_into_out_of_and_within_a_space(
    alice: Actor, bob: Actor, dave: Actor, team: Team
) -> None:
    mine = await bob.memo("personal", visibility="PROTECTED")
    url = f"/api/v1/{mine['name']}"
    # Into a space: the path must be named.
    r = await bob.patch(f"{url}?updateMask=space", json={"space": team.name})
    assert r.status_code == 400
    r = await bob.patch(
        f"{url}?updateMask=space,visibility", json={"space": team.name, "visibility": "PRIVATE"}
    )
    assert r.status_code == 400
    r = await bob.patch(
        f"{url}?updateMask=space,tree", json={"space": team.name, "tree": "share.a"}
    )
    assert r.status_code == 200, r.text
    assert (r.json()["visibility"], r.json()["space"], r.json()["tree"]) == (
        "SPACE",
        team.name,
        "share.a",
    )
    assert (await dave.get(url)).status_code == 404
    assert (await alice.get(url)).status_code == 200
    # Within: a new path.
    r = await bob.patch(f"{url}?updateMask=tree", json={"tree": "~"})
    assert r.status_code == 200 and r.json()["tree"] == "~"
    # Out: leaving the space needs a visibility; the space and path go.
    r = await bob.patch(f"{url}?updateMask=space", json={"space": ""})
    assert r.status_code == 400
    r = await bob.patch(f"{url}?updateMask=tree", json={"tree": "a..b"})
    assert r.status_code == 400
    r = await bob.patch(f"{url}?updateMask=visibility", json={"visibility": "PRIVATE"})
    assert r.status_code == 200, r.text
    assert (
        r.json()["visibility"] == "PRIVATE" and "space" not in r.json() and "tree" not in r.json()
    )
    assert (await alice.get(url)).status_code == 404
    # A personal memo has no path.
    r = await bob.patch(f"{url}?updateMask=tree", json={"tree": "share"})
    assert r.status_code == 400
    # Visibility SPACE alone (no space) is refused.
    r = await bob.patch(f"{url}?updateMask=visibility", json={"visibility": "SPACE"})
    assert r.status_code == 400
    # Another member cannot pull bob's memo into a space, nor move it.
    r = await dave.patch(f"{url}?updateMask=space,tree", json={"space": team.name, "tree": "share"})
    assert r.status_code == 404


async def test_move_into_a_space_one_is_not_in(alice: Actor, dave: Actor, team: Team) -> None:
    mine = await dave.memo("dave's", visibility="PRIVATE")
    r = await dave.patch(
        f"/api/v1/{mine['name']}?updateMask=space,tree", json={"space": team.name, "tree": "share"}
    )
    assert r.status_code == 404
    assert (await dave.get(f"/api/v1/{mine['name']}")).json()["visibility"] == "PRIVATE"


async def test_shared_memo_cannot_become_space(settings: Settings, bob: Actor, team: Team) -> None:
    mine = await bob.memo("shared", visibility="PRIVATE")
    engine = create_engine(settings.database_url)
    try:
        async with engine.begin() as conn:
            memo_id = (
                await conn.execute(
                    sa.text("SELECT id FROM memo WHERE uid = :u"), {"u": mine["name"][6:]}
                )
            ).scalar_one()
            await conn.execute(
                memo_share.insert().values(
                    memo_id=memo_id, token="t-live", creator_id=1, created_ts=0, expires_ts=None
                )
            )
    finally:
        await engine.dispose()
    url = f"/api/v1/{mine['name']}?updateMask=space,tree"
    r = await bob.patch(url, json={"space": team.name, "tree": "share"})
    assert r.status_code == 409 and "share" in r.json()["message"]
    assert (await bob.get(f"/api/v1/{mine['name']}")).json()["visibility"] == "PRIVATE"
    engine = create_engine(settings.database_url)
    try:
        async with engine.begin() as conn:
            await conn.execute(memo_share.update().values(expires_ts=1))  # long expired
    finally:
        await engine.dispose()
    assert (await bob.patch(url, json={"space": team.name, "tree": "share"})).status_code == 200


async def test_author_who_leaves_loses_read(alice: Actor, bob: Actor, team: Team) -> None:
    await own_root(alice, team.name)
    memo = (await space_memo(bob, team.name, "~")).json()
    assert (await bob.delete(f"/api/v1/{team.name}/members/bob")).status_code == 200
    assert (await bob.get(f"/api/v1/{memo['name']}")).status_code == 404
    assert (await alice.get(f"/api/v1/{memo['name']}")).status_code == 200
