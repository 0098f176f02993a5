"""Memo CRUD over the REST API, on both dialects."""

from __future__ import annotations

import sqlalchemy as sa

from app.db.engine import create_engine
from app.db.schema import memo_event, user_account
from tests.conftest import Actor


async def test_create_derives_properties_and_tags(alice: Actor) -> None:
    m = await alice.memo(
        "# Plan\n\nShip #work/ops today [docs](https://x.test)\n\n- [ ] one\n- [x] two\n\n`code`"
    )
    assert m["tags"] == ["work", "work/ops"]
    assert m["property"] == {
        "hasLink": True,
        "hasTaskList": True,
        "hasCode": True,
        "hasIncompleteTasks": True,
        "title": "Plan",
    }
    assert m["visibility"] == "PRIVATE"
    assert m["state"] == "NORMAL"
    assert m["creator"] == "users/alice"
    assert m["origin"] == {"kind": "access_token"}
    assert m["snippet"].startswith("Plan Ship #work/ops")


async def test_tags_skip_code_and_links(alice: Actor) -> None:
    m = await alice.memo("`#nope` [#nolink](https://a.test) #yes\n\n```\n#fenced\n```")
    assert m["tags"] == ["yes"]


async def test_client_chosen_id_and_duplicate(alice: Actor) -> None:
    r = await alice.post("/api/v1/memos?memoId=my-note-1", json={"content": "x"})
    assert r.status_code == 200
    assert r.json()["name"] == "memos/my-note-1"
    r = await alice.post("/api/v1/memos?memoId=my-note-1", json={"content": "y"})
    assert r.status_code == 409
    assert r.json()["code"] == 6


async def test_get_sends_etag(alice: Actor) -> None:
    m = await alice.memo("x")
    r = await alice.get(f"/api/v1/{m['name']}")
    assert r.status_code == 200
    assert r.headers["etag"] == m["etag"] == r.json()["etag"]


async def test_update_with_mask_and_etag(alice: Actor) -> None:
    m = await alice.memo("first #a")
    r = await alice.patch(
        f"/api/v1/{m['name']}?updateMask=content,pinned",
        json={"content": "second #b", "pinned": True, "visibility": "PUBLIC"},
        headers={"If-Match": m["etag"]},
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["content"] == "second #b" and body["pinned"] is True
    assert body["visibility"] == "PRIVATE"  # not in the mask
    assert body["tags"] == ["b"]
    assert body["etag"] != m["etag"]
    stale = await alice.patch(
        f"/api/v1/{m['name']}?updateMask=content",
        json={"content": "third"},
        headers={"If-Match": m["etag"]},
    )
    assert stale.status_code == 412
    again = await alice.get(f"/api/v1/{m['name']}")
    assert again.json()["content"] == "second #b"


async def test_update_mask_snake_case_and_implicit_mask(alice: Actor) -> None:
    m = await alice.memo("x")
    r = await alice.patch(
        f"/api/v1/{m['name']}?update_mask=update_time", json={"updateTime": "2020-01-02T03:04:05Z"}
    )
    assert r.status_code == 200 and r.json()["updateTime"] == "2020-01-02T03:04:05Z"
    r = await alice.patch(f"/api/v1/{m['name']}", json={"visibility": "PROTECTED"})
    assert r.status_code == 200 and r.json()["visibility"] == "PROTECTED"


async def test_archive_restore_and_archived_list(alice: Actor) -> None:
    m = await alice.memo("x")
    r = await alice.patch(f"/api/v1/{m['name']}?updateMask=state", json={"state": "ARCHIVED"})
    assert r.status_code == 200 and r.json()["state"] == "ARCHIVED"
    assert (await alice.get("/api/v1/memos")).json()["memos"] == []
    archived = (await alice.get("/api/v1/memos?state=ARCHIVED")).json()["memos"]
    assert [x["name"] for x in archived] == [m["name"]]
    r = await alice.patch(f"/api/v1/{m['name']}?updateMask=state", json={"state": "NORMAL"})
    assert [x["name"] for x in (await alice.get("/api/v1/memos")).json()["memos"]] == [m["name"]]


async def test_delete(alice: Actor) -> None:
    m = await alice.memo("x")
    assert (await alice.delete(f"/api/v1/{m['name']}")).status_code == 200
    r = await alice.get(f"/api/v1/{m['name']}")
    assert r.status_code == 404 and "not found" in r.json()["message"]


async def test_importer_fields_on_create(alice: Actor) -> None:
    r = await alice.post(
        "/api/v1/memos",
        json={
            "content": "old",
            "createTime": "2019-05-01T10:00:00Z",
            "pinned": True,
            "state": "ARCHIVED",
        },
    )
    assert r.status_code == 200
    body = r.json()
    assert body["createTime"] == "2019-05-01T10:00:00Z"
    assert body["updateTime"] == "2019-05-01T10:00:00Z"
    assert body["pinned"] is True and body["state"] == "ARCHIVED"


async def test_empty_content_allowed(alice: Actor) -> None:
    m = await alice.memo("")
    assert m["content"] == "" and m["tags"] == []


async def test_ordering_and_pinned_first(alice: Actor) -> None:
    a = await alice.memo("a", createTime="2021-01-01T00:00:00Z")
    b = await alice.memo("b", createTime="2022-01-01T00:00:00Z")
    c = await alice.memo("c", createTime="2020-01-01T00:00:00Z", pinned=True)
    names = lambda r: [m["name"] for m in r.json()["memos"]]  # noqa: E731
    assert names(await alice.get("/api/v1/memos")) == [b["name"], a["name"], c["name"]]
    assert names(await alice.get("/api/v1/memos?orderBy=create_time asc")) == [
        c["name"],
        a["name"],
        b["name"],
    ]
    pinned = await alice.get("/api/v1/memos?orderBy=create_time desc, pinned desc")
    assert names(pinned) == [c["name"], b["name"], a["name"]]


async def test_keyset_pages_cover_everything_once(alice: Actor) -> None:
    made = {
        (await alice.memo(f"m{i}", createTime=f"2021-01-01T00:00:{i % 3:02d}Z"))["name"]
        for i in range(23)
    }
    seen: list[str] = []
    token = ""
    for _ in range(10):
        r = await alice.get(
            f"/api/v1/memos?pageSize=5&pageToken={token}&orderBy=pinned desc, create_time desc"
        )
        assert r.status_code == 200
        page = [m["name"] for m in r.json()["memos"]]
        seen += page
        token = r.json()["nextPageToken"]
        if not token:
            break
        assert len(page) == 5
    assert len(seen) == len(set(seen)) == 23
    assert set(seen) == made


async def test_every_write_records_an_event(alice: Actor, database_url: str) -> None:
    m = await alice.memo("v1")
    await alice.patch(f"/api/v1/{m['name']}?updateMask=content", json={"content": "v2"})
    await alice.patch(
        f"/api/v1/{m['name']}?updateMask=content", json={"content": "v2"}
    )  # no change
    await alice.patch(f"/api/v1/{m['name']}?updateMask=state", json={"state": "ARCHIVED"})
    await alice.delete(f"/api/v1/{m['name']}")  # to the trash (decision 0024)
    await alice.post(f"/api/v1/{m['name']}:purge", json={})  # and gone
    engine = create_engine(database_url)
    async with engine.connect() as conn:
        rows = (await conn.execute(sa.select(memo_event).order_by(memo_event.c.id))).all()
        alice_id = (
            await conn.execute(
                sa.select(user_account.c.id).where(user_account.c.username == "alice")
            )
        ).scalar_one()
    await engine.dispose()
    assert [(r.kind, r.prior_content) for r in rows] == [
        ("CREATE", None),
        ("UPDATE", "v1"),
        ("ARCHIVE", "v2"),
        ("TRASH", "v2"),
        ("DELETE", "v2"),
    ]
    assert all(r.actor_id == alice_id for r in rows)
    assert rows[0].credential == {"kind": "access_token"}
