"""A READ key can never write: every write endpoint answers 403 and nothing changes."""

from __future__ import annotations

import base64
from typing import Any

import sqlalchemy as sa
from litestar.testing import AsyncTestClient

from app.db import schema
from app.db.engine import create_engine
from app.settings import Settings
from tests.conftest import Actor
from tests.grants.conftest import key
from tests.spaces.conftest import Team, space_memo

TABLES = (
    "memo",
    "memo_relation",
    "memo_tag",
    "reaction",
    "attachment",
    "memo_share",
    "saved_view",
    "memo_event",
    "memo_trash",
)


async def _counts(settings: Settings) -> dict[str, Any]:
    engine = create_engine(settings.database_url)
    try:
        async with engine.connect() as conn:
            out: dict[str, Any] = {}
            for name in TABLES:
                table = schema.metadata.tables[name]
                out[name] = sorted(
                    map(tuple, (await conn.execute(sa.select(table))).all()), key=repr
                )
            return out
    finally:
        await engine.dispose()


async def test_read_key_attempting_every_write(
    settings: Settings, client: AsyncTestClient[Any], bob: Actor, team: Team
) -> None:
    mine = (await space_memo(bob, team.name, "share", content="space memo")).json()
    personal = await bob.memo("personal", visibility="PRIVATE")
    other = await bob.memo("other #work", visibility="PRIVATE")
    trashed = await bob.memo("trashed", visibility="PRIVATE")
    assert (await bob.delete(f"/api/v1/{trashed['name']}")).status_code == 200
    r = await bob.post(
        "/api/v1/attachments",
        json={
            "filename": "a.txt",
            "type": "text/plain",
            "content": base64.b64encode(b"hi").decode(),
        },
    )
    assert r.status_code == 200, r.text
    attachment = r.json()["name"]
    agent = await key(bob, scope="READ", personal="AUDIENCE", spaces=[{"space": team.name}])
    before = await _counts(settings)
    content = base64.b64encode(b"x").decode()
    for target in (mine["name"], personal["name"]):
        attempts: list[tuple[str, str, Any]] = [
            ("PATCH", f"/api/v1/{target}?updateMask=content", {"content": "changed"}),
            ("PATCH", f"/api/v1/{target}?updateMask=pinned", {"pinned": True}),
            ("PATCH", f"/api/v1/{target}?updateMask=state", {"state": "ARCHIVED"}),
            ("DELETE", f"/api/v1/{target}", None),
            ("POST", f"/api/v1/{target}/comments", {"content": "c"}),
            ("POST", f"/api/v1/{target}/reactions", {"reaction": {"reactionType": "👍"}}),
            ("DELETE", f"/api/v1/{target}/reactions/1", None),
            (
                "PATCH",
                f"/api/v1/{target}/relations",
                {"relations": [{"relatedMemo": {"name": other["name"]}, "type": "REFERENCE"}]},
            ),
            ("PATCH", f"/api/v1/{target}/attachments", {"attachments": [{"name": attachment}]}),
            ("POST", f"/api/v1/{target}/shares", {}),
            ("POST", f"/api/v1/{target}:revert", {"version": 1}),
        ]
        for method, url, body in attempts:
            r = await client.request(method, url, json=body, headers=agent)
            assert r.status_code == 403, (method, url, r.status_code, r.text)
    for method, url, body in [
        ("POST", "/api/v1/memos", {"content": "new"}),
        ("POST", "/api/v1/memos", {"content": "new", "space": team.name, "tree": "share"}),
        ("POST", "/api/v1/memos:batchCreate", {"memos": [{"content": "new"}]}),
        (
            "POST",
            "/api/v1/attachments",
            {"filename": "b.txt", "type": "text/plain", "content": content},
        ),
        ("DELETE", f"/api/v1/{attachment}", None),
        ("POST", "/api/v1/users/bob/views", {"title": "v", "filter": "pinned"}),
        ("POST", f"/api/v1/{trashed['name']}:undelete", None),
        ("POST", "/api/v1/memos/-/tags:rename", {"oldTag": "work", "newTag": "job"}),
        ("POST", "/api/v1/memos/-/tags:delete", {"tag": "work"}),
        ("POST", "/api/v1/users/bob:importMemos", None),
    ]:
        r = await client.request(method, url, json=body, headers=agent)
        assert r.status_code == 403, (method, url, r.status_code, r.text)
    assert await _counts(settings) == before
