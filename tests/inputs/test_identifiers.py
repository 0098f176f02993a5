"""Identifiers are checked with full matches: a trailing newline is a 400 everywhere.

Issue 13 item 11: ``$`` with ``re.match`` accepted ``"x\\n"``, so tree labels,
usernames, memo and space ids with a trailing newline were stored; on
PostgreSQL ``text2ltree`` then raised on every read that met such a grant.
Rows an older version stored that way must not break any read either.
"""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from litestar.testing import AsyncTestClient

from app.db.engine import create_engine
from app.db.schema import space, space_grant, user_account
from tests.conftest import Actor, sign_up
from tests.grants.conftest import home
from tests.spaces.conftest import Team


async def _execute(database_url: str, statement: Any) -> Any:
    engine = create_engine(database_url)
    try:
        async with engine.begin() as conn:
            result = await conn.execute(statement)
            return result.all() if result.returns_rows else None
    finally:
        await engine.dispose()


async def test_grant_path_with_trailing_newline_is_refused(team: Team, bob: Actor) -> None:
    mine = await home(bob, team.name)
    for path in (f"{mine}.x\n", f"{mine}.x\r", "share\n", "share.x\n"):
        r = await bob.post(
            f"/api/v1/{team.name}/grants",
            json={"principal": "users/alice", "path": path, "level": "READ"},
        )
        assert r.status_code == 400, (path, r.text)
        assert "label" in r.json()["message"]


@pytest.mark.parametrize("tree", ["share\n", "share.x\n", "~\n", "~.x\n"])
async def test_memo_tree_with_trailing_newline_is_refused(
    team: Team, bob: Actor, database_url: str, tree: str
) -> None:
    r = await bob.post(
        "/api/v1/memos",
        json={"content": "x", "visibility": "SPACE", "space": team.name, "tree": tree},
    )
    assert r.status_code == 400, r.text
    rows = await _execute(database_url, sa.select(sa.func.count()).select_from(space_grant))
    assert rows  # the database is still reachable: nothing half-written


async def test_stored_bad_grant_path_fails_closed(
    team: Team, alice: Actor, bob: Actor, database_url: str
) -> None:
    """A grant row with a newline (written by an older version) denies; reads still answer."""
    shared = await bob.memo("in share #x", visibility="SPACE", space=team.name, tree="share")
    own = await alice.memo("alice's own #x")
    bob_home = await home(bob, team.name)
    (space_id,) = (await _execute(database_url, sa.select(space.c.id)))[0]
    (alice_id,) = (
        await _execute(
            database_url, sa.select(user_account.c.id).where(user_account.c.username == "alice")
        )
    )[0]
    await _execute(
        database_url,
        space_grant.insert().values(
            space_id=space_id,
            user_id=alice_id,
            group_id=None,
            path=f"{bob_home}.x\n",
            level=3,
            created_by=alice_id,
            created_ts=0,
        ),
    )
    listed = await alice.get("/api/v1/memos")
    assert listed.status_code == 200, listed.text
    assert {m["name"] for m in listed.json()["memos"]} == {shared["name"], own["name"]}
    got = await alice.get(f"/api/v1/{shared['name']}")
    assert got.status_code == 200, got.text
    searched = await alice.get("/api/v1/memos:search", params={"query": "share"})
    assert searched.status_code == 200, searched.text
    access = await alice.get(f"/api/v1/{team.name}/access")
    assert access.status_code == 200, access.text
    # The bad row reaches nothing: bob's home memos stay hidden from alice.
    hidden = await bob.memo("bob's home", visibility="SPACE", space=team.name, tree="~")
    assert (await alice.get(f"/api/v1/{hidden['name']}")).status_code == 404
    filtered = await alice.get("/api/v1/memos", params={"filter": 'tree.startsWith("home")'})
    assert filtered.status_code == 200 and filtered.json()["memos"] == []


@pytest.mark.parametrize("username", ["alice\n", "bob\n", "carl\r", "dan\n\n", "eve\t"])
async def test_username_with_control_character_is_refused(
    client: AsyncTestClient[Any], alice: Actor, username: str
) -> None:
    r = await client.post(
        "/api/v1/users",
        json={"username": username, "password": "password-1"},
        headers=alice.headers,
    )
    assert r.status_code == 400, r.text
    assert "username" in r.json()["message"]
    r = await alice.patch("/api/v1/users/alice?updateMask=username", json={"username": username})
    assert r.status_code == 400, r.text


@pytest.mark.parametrize("uid", ["abc\n", "a\n", "abc\r"])
async def test_memo_and_space_ids_with_trailing_newline_are_refused(
    alice: Actor, database_url: str, uid: str
) -> None:
    r = await alice.post("/api/v1/memos", params={"memoId": uid}, json={"content": "x"})
    assert r.status_code == 400, r.text
    r = await alice.post("/api/v1/spaces", params={"spaceId": uid}, json={"title": "T"})
    assert r.status_code == 400, r.text
    r = await alice.post(
        "/api/v1/attachments",
        params={"attachmentId": uid},
        json={"filename": "a.txt", "type": "text/plain", "content": "aGk="},
    )
    assert r.status_code == 400, r.text


async def test_memo_id_in_batch_with_trailing_newline_is_refused(alice: Actor) -> None:
    r = await alice.post(
        "/api/v1/memos:batchCreate", json={"memos": [{"memoId": "abc\n", "content": "x"}]}
    )
    assert r.status_code == 400, r.text


@pytest.mark.parametrize("mime", ["text/plain\r\nX-Injected: 1", "text/plain\nx"])
async def test_attachment_type_with_a_newline_is_refused(alice: Actor, mime: str) -> None:
    """Surrounding whitespace is trimmed (a type is normalised); an inner newline is a 400
    (a guard for the header the type becomes; the old pattern refused these too)."""
    r = await alice.post(
        "/api/v1/attachments", json={"filename": "a.txt", "type": mime, "content": "aGk="}
    )
    assert r.status_code == 400, r.text


async def test_restriction_paths_and_spaces_with_newline_are_refused(
    team: Team, bob: Actor
) -> None:
    uid = team.name.removeprefix("spaces/")
    for declaration in (
        {"space": f"spaces/{uid}\n", "trees": []},
        {"space": team.name, "trees": [{"path": "share\n", "level": "READ"}]},
    ):
        r = await bob.post(
            "/api/v1/users/bob/personalAccessTokens",
            json={"description": "k", "restriction": {"scope": "READ", "spaces": [declaration]}},
        )
        assert r.status_code == 400, (declaration, r.text)


async def test_default_member_grants_with_newline_are_refused(alice: Actor) -> None:
    r = await alice.post(
        "/api/v1/spaces",
        json={"title": "T", "defaultMemberGrants": [{"path": "share\n", "level": "READ"}]},
    )
    assert r.status_code == 400, r.text


async def test_look_alike_username_cannot_sign_up(
    client: AsyncTestClient[Any], alice: Actor
) -> None:
    await sign_up(client, "bobby", admin=alice)
    r = await client.post(
        "/api/v1/users",
        json={"username": "bobby\n", "password": "password-1"},
        headers=alice.headers,
    )
    assert r.status_code == 400, r.text
