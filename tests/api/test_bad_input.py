"""Bad input: a 400 naming the problem, and nothing written."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from app.db.engine import create_engine
from app.db.schema import memo
from tests.conftest import Actor


async def memo_count(database_url: str) -> int:
    engine = create_engine(database_url)
    async with engine.connect() as conn:
        n = (await conn.execute(sa.select(sa.func.count()).select_from(memo))).scalar_one()
    await engine.dispose()
    return int(n)


@pytest.mark.parametrize(
    ("body", "query", "needle"),
    [
        ('{"content": "x"', "", ""),  # malformed JSON
        ('{"content": 5}', "", "content"),
        ('{"pinned": "yes"}', "", "pinned"),
        ('{"visibility": "SECRET"}', "", "visibility"),
        ('{"content": "x"}', "?memoId=-bad-", "memoId"),
        ('{"content": "x"}', "?memoId=" + "a" * 40, "memoId"),
        ('{"createTime": "yesterday"}', "", "createTime"),
        ('{"content": "' + "x" * 9000 + '"}', "", "content"),
        ("[1, 2]", "", ""),
    ],
)
async def test_create_rejects(
    alice: Actor, database_url: str, body: str, query: str, needle: str
) -> None:
    r = await alice.post(
        f"/api/v1/memos{query}", content=body, headers={"Content-Type": "application/json"}
    )
    assert r.status_code == 400, r.text
    payload = r.json()
    assert payload["code"] == 3
    assert needle.lower() in payload["message"].lower()
    assert await memo_count(database_url) == 0


async def test_update_rejects_unknown_mask_path_and_writes_nothing(alice: Actor) -> None:
    m = await alice.memo("keep")
    r = await alice.patch(f"/api/v1/{m['name']}?updateMask=content,color", json={"content": "lost"})
    assert r.status_code == 400 and "color" in r.json()["message"]
    assert (await alice.get(f"/api/v1/{m['name']}")).json()["content"] == "keep"


async def test_update_over_limit_writes_nothing(alice: Actor) -> None:
    m = await alice.memo("keep")
    r = await alice.patch(
        f"/api/v1/{m['name']}?updateMask=content,pinned",
        json={"content": "y" * 9000, "pinned": True},
    )
    assert r.status_code == 400 and "limit" in r.json()["message"]
    after = (await alice.get(f"/api/v1/{m['name']}")).json()
    assert after["content"] == "keep" and after["pinned"] is False


async def test_invalid_uid_in_path(alice: Actor) -> None:
    r = await alice.get("/api/v1/memos/-nope-")
    assert r.status_code == 400 and "memo" in r.json()["message"]


async def test_tampered_and_foreign_page_tokens(alice: Actor, bob: Actor) -> None:
    for i in range(3):
        await alice.memo(f"m{i}", visibility="PROTECTED")
    r = await alice.get("/api/v1/memos?pageSize=1")
    token = r.json()["nextPageToken"]
    assert token
    tampered = token[:-3] + ("AAA" if not token.endswith("AAA") else "BBB")
    for bad in (tampered, "garbage!!", "x" * 100):
        r = await alice.get(f"/api/v1/memos?pageSize=1&pageToken={bad}")
        assert r.status_code == 400 and "pageToken" in r.json()["message"]
    r = await bob.get(f"/api/v1/memos?pageSize=1&pageToken={token}")  # another caller's token
    assert r.status_code == 400
    r = await alice.get(f"/api/v1/memos?pageSize=1&pageToken={token}&orderBy=create_time asc")
    assert r.status_code == 400  # a token for another query


async def test_unknown_order_field(alice: Actor) -> None:
    r = await alice.get("/api/v1/memos?orderBy=color desc")
    assert r.status_code == 400 and "orderBy" in r.json()["message"]


async def test_oversized_body(alice: Actor, database_url: str, client) -> None:  # type: ignore[no-untyped-def]
    r = await alice.post(
        "/api/v1/memos",
        content=b'{"content": "' + b"x" * (49 * 1024 * 1024) + b'"}',
        headers={"Content-Type": "application/json"},
    )
    assert r.status_code == 413
    assert r.json()["code"] == 3
    assert await memo_count(database_url) == 0


async def test_unknown_fields_and_output_only_fields_ignored(alice: Actor) -> None:
    r = await alice.post(
        "/api/v1/memos",
        json={
            "content": "x",
            "name": "memos/forged",
            "creator": "users/bob",
            "someFutureField": 1,
        },
    )
    assert r.status_code == 200
    body = r.json()
    assert body["name"] != "memos/forged" and body["creator"] == "users/alice"


async def test_page_size_bounds(alice: Actor) -> None:
    for _ in range(3):
        await alice.memo("x")
    assert len((await alice.get("/api/v1/memos?pageSize=-5")).json()["memos"]) == 3
    r = await alice.get("/api/v1/memos?pageSize=99999999999999")
    assert r.status_code == 400


async def test_nul_characters_are_refused_on_both_dialects(alice: Actor, database_url: str) -> None:
    r = await alice.post("/api/v1/memos", json={"content": "a\u0000b"})
    assert r.status_code == 400 and "NUL" in r.json()["message"]
    r = await alice.patch("/api/v1/users/alice", json={"nickname": "x\u0000"})
    assert r.status_code == 400
    r = await alice.get("/api/v1/users/a%00b")
    assert r.status_code == 400
    assert await memo_count(database_url) == 0
