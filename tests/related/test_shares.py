"""Share links: exactly one memo, anonymously, while unexpired and not revoked."""

from __future__ import annotations

import time
from typing import Any

import sqlalchemy as sa
from litestar.testing import AsyncTestClient

from app.db.engine import create_engine
from app.db.schema import memo_share
from app.settings import Settings
from tests.conftest import Actor
from tests.related.helpers import comment


async def share(actor: Actor, memo: dict[str, Any], **body: Any) -> Any:
    return await actor.post(f"/api/v1/{memo['name']}/shares", json=body)


async def test_share_lifecycle(client: AsyncTestClient[Any], alice: Actor, bob: Actor) -> None:
    m = await alice.memo("shared diary", visibility="PRIVATE")
    r = await share(alice, m)
    assert r.status_code == 200, r.text
    s = r.json()
    assert s["name"] == f"{m['name']}/shares/{s['token']}" and "expireTime" not in s
    got = await client.get(f"/api/v1/shares/{s['token']}/memo")
    assert got.status_code == 200 and got.json()["content"] == "shared diary"
    assert got.headers["cache-control"] == "private, no-store"
    listed = (await alice.get(f"/api/v1/{m['name']}/shares")).json()["memoShares"]
    assert [x["name"] for x in listed] == [s["name"]]
    # Not the author: no listing, no revoking, no creating.
    assert (await bob.get(f"/api/v1/{m['name']}/shares")).status_code == 404
    team = await alice.memo("team", visibility="PROTECTED")
    assert (await share(bob, team)).status_code == 403
    assert (await bob.get(f"/api/v1/{team['name']}/shares")).status_code == 403
    # Revoked: gone.
    assert (await alice.delete(f"/api/v1/{s['name']}")).status_code == 200
    assert (await client.get(f"/api/v1/shares/{s['token']}/memo")).status_code == 404
    assert (await alice.delete(f"/api/v1/{s['name']}")).status_code == 404


async def test_expired_share(
    client: AsyncTestClient[Any], alice: Actor, settings: Settings
) -> None:
    m = await alice.memo("soon gone")
    assert (await share(alice, m, expireTime="2000-01-01T00:00:00Z")).status_code == 400
    s = (await share(alice, m, expireTime="2999-01-01T00:00:00Z")).json()
    assert s["expireTime"] == "2999-01-01T00:00:00Z"
    assert (await client.get(f"/api/v1/shares/{s['token']}/memo")).status_code == 200
    engine = create_engine(settings.database_url)
    async with engine.begin() as conn:
        await conn.execute(memo_share.update().values(expires_ts=int(time.time()) - 1))
    await engine.dispose()
    assert (await client.get(f"/api/v1/shares/{s['token']}/memo")).status_code == 404


async def test_share_refusals(alice: Actor) -> None:
    archived = await alice.memo("old", state="ARCHIVED")
    assert (await share(alice, archived)).status_code == 409
    parent = await alice.memo("p")
    c = (await comment(alice, parent, "c")).json()
    assert (await share(alice, c)).status_code == 400


async def test_share_stops_when_memo_archived(client: AsyncTestClient[Any], alice: Actor) -> None:
    m = await alice.memo("m")
    s = (await share(alice, m)).json()
    await alice.patch(f"/api/v1/{m['name']}?updateMask=state", json={"state": "ARCHIVED"})
    assert (await client.get(f"/api/v1/shares/{s['token']}/memo")).status_code == 404


async def test_shared_memo_carries_no_relations_comments_or_reactions(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor
) -> None:
    m = await alice.memo("shared", visibility="PROTECTED")
    other = await alice.memo("other secret memo", visibility="PRIVATE")
    await alice.patch(
        f"/api/v1/{m['name']}/relations",
        json={"relations": [{"relatedMemo": {"name": other["name"]}}]},
    )
    await comment(bob, m, "bob comment text", visibility="PROTECTED")
    await bob.post(f"/api/v1/{m['name']}/reactions", json={"reactionType": "👍"})
    s = (await share(alice, m)).json()
    got = await client.get(f"/api/v1/shares/{s['token']}/memo")
    body = got.json()
    assert body["relations"] == [] and body["reactions"] == []
    assert other["name"] not in got.text and "secret" not in got.text
    assert "bob" not in got.text
    # Comments are not reachable through the share (anonymous, PRIVATE instance).
    assert (await client.get(f"/api/v1/{m['name']}/comments")).status_code == 401


async def test_bogus_tokens(client: AsyncTestClient[Any], alice: Actor) -> None:
    for token in ("x", "a" * 32, "../etc", "%00" * 20):
        assert (await client.get(f"/api/v1/shares/{token}/memo")).status_code in (400, 404)


async def test_shares_table_has_no_rows_after_refusal(alice: Actor, settings: Settings) -> None:
    archived = await alice.memo("old", state="ARCHIVED")
    await share(alice, archived)
    engine = create_engine(settings.database_url)
    async with engine.connect() as conn:
        assert (
            await conn.execute(sa.select(sa.func.count()).select_from(memo_share))
        ).scalar() == 0
    await engine.dispose()
