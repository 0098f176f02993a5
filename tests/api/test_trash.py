"""The trash (app.memos.trash): DELETE moves to the creator's trash; undelete; purge.

Negative tests first: a trashed memo, beside live ones, must not appear, be
counted or be reachable on any read path, for anyone, its creator included
(only the creator's trash view shows it). Then restore brings back exactly
the rows that were trashed, purge removes rows and bytes, and the rules for
keys (trash what they may write, never purge).
"""

from __future__ import annotations

import io
import json
import urllib.parse
import zipfile
from typing import Any

import sqlalchemy as sa
from litestar.testing import AsyncTestClient

from app.db.engine import create_engine
from app.db.schema import memo as memo_table
from app.settings import Settings
from tests.conftest import Actor
from tests.related.helpers import comment, make_public, restricted_key, upload


def q(text: str) -> str:
    return urllib.parse.quote(text, safe="")


def uid(m: dict[str, Any]) -> str:
    return str(m["name"].split("/", 1)[1])


async def _world(alice: Actor, bob: Actor) -> dict[str, Any]:
    """Alice: a live PUBLIC memo and a PUBLIC memo with everything attached, then trashed."""
    await make_public(alice)
    live = await alice.memo("live memo #keep", visibility="PUBLIC")
    doomed = await alice.memo("ZEBRA-doomed memo #gone", visibility="PUBLIC")
    att = await upload(alice, "zebra-file.txt", b"ZEBRA-BYTES", memo=doomed["name"])
    bobs_comment = (await comment(bob, doomed, "ZEBRA-bob-comment", visibility="PUBLIC")).json()
    r = await bob.post(
        f"/api/v1/{doomed['name']}/reactions",
        json={"reaction": {"contentId": doomed["name"], "reactionType": "ZEBRA-react"}},
    )
    assert r.status_code == 200, r.text
    referrer = await bob.memo("bob refers", visibility="PUBLIC")
    r = await bob.patch(
        f"/api/v1/{referrer['name']}/relations",
        json={"relations": [{"relatedMemo": {"name": doomed["name"]}}]},
    )
    assert r.status_code == 200, r.text
    share = (await alice.post(f"/api/v1/{doomed['name']}/shares", json={})).json()
    # Before: the doomed memo is everywhere (positive control for the paths below).
    r = await bob.get(f"/api/v1/{referrer['name']}/relations")
    assert doomed["name"] in r.text
    r = await alice.delete(f"/api/v1/{doomed['name']}")
    assert r.status_code == 200, r.text
    assert r.json() == {}
    return {
        "live": live,
        "doomed": doomed,
        "attachment": att,
        "comment": bobs_comment,
        "referrer": referrer,
        "share": share["token"],
    }


def _read_urls(w: dict[str, Any], who: str) -> list[str]:
    d, a = w["doomed"]["name"], w["attachment"]
    a_uid = a["name"].split("/")[1]
    return [
        "/api/v1/memos",
        "/api/v1/memos?state=ARCHIVED",
        "/api/v1/memos?filter=" + q('content.contains("ZEBRA")'),
        "/api/v1/memos?filter=" + q('"gone" in tags'),
        "/api/v1/memos:search?query=ZEBRA",
        f"/api/v1/{d}",
        f"/api/v1/{d}/comments",
        f"/api/v1/{d}/relations",
        f"/api/v1/{d}/reactions",
        f"/api/v1/{d}/attachments",
        f"/api/v1/{d}/history",
        f"/api/v1/{d}/shares",
        f"/api/v1/{w['comment']['name']}",
        f"/api/v1/{w['live']['name']}/comments",
        f"/api/v1/{w['referrer']['name']}",
        f"/api/v1/{w['referrer']['name']}/relations",
        "/api/v1/memos?filter=" + q('creator == "users/bob"'),
        f"/api/v1/{a['name']}",
        "/api/v1/attachments",
        f"/file/attachments/{a_uid}",
        f"/file/attachments/{a_uid}/zebra-file.txt",
        f"/api/v1/shares/{w['share']}/memo",
        "/api/v1/users/alice:getStats",
        "/api/v1/users/bob:getStats",
        "/explore/rss.xml",
        "/u/alice/rss.xml",
        "/u/bob/rss.xml",
    ]


async def test_a_trashed_memo_is_on_no_read_path_for_anyone(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor
) -> None:
    w = await _world(alice, bob)
    key = await restricted_key(alice, scope="READ", personal="AUDIENCE")
    callers = {
        "alice": alice.headers,
        "bob": bob.headers,
        "alice-key": key,
        "anonymous": {},
    }
    leaks = []
    for label, headers in callers.items():
        for url in _read_urls(w, label):
            r = await client.get(url, headers=headers)
            assert r.status_code < 500, (label, url, r.text)
            body = r.content.decode("utf-8", "replace")
            for needle in ("ZEBRA", uid(w["doomed"]), uid(w["comment"]), "gone"):
                if needle in body and needle not in url:  # a 404 may echo the caller's id
                    leaks.append(f"{label} {url} -> {r.status_code}: {needle}")
    assert leaks == [], "\n".join(leaks)
    # Point reads answer not found (never 403: no oracle), the creator included.
    for who in (alice, bob):
        for name in (w["doomed"]["name"], w["comment"]["name"]):
            r = await who.get(f"/api/v1/{name}")
            assert r.status_code == 404 and "not found" in r.json()["message"]
    # Counts: alice's stats count only the live memo; the live memo is still listed.
    stats = (await alice.get("/api/v1/users/alice:getStats")).json()
    assert stats["tagCount"] == {"keep": 1}
    names = [m["name"] for m in (await alice.get("/api/v1/memos")).json()["memos"]]
    assert w["live"]["name"] in names and w["doomed"]["name"] not in names
    # The export holds the live memo only.
    data = (await alice.get("/api/v1/users/alice:exportMemos")).content
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        members = z.namelist()
        blob = b"".join(z.read(n) for n in members)
    assert b"ZEBRA" not in blob and uid(w["doomed"]).encode() not in blob
    assert any(uid(w["live"]) in n for n in members)
    # The trash is no list state: asking for it is a bad request, not a back door.
    r = await alice.get("/api/v1/memos?state=TRASHED")
    assert r.status_code == 400 and "ZEBRA" not in r.text
    # Writes through the trashed memo are refused as not found.
    r = await bob.post(f"/api/v1/{w['doomed']['name']}/comments", json={"content": "late"})
    assert r.status_code == 404
    r = await alice.patch(
        f"/api/v1/{w['doomed']['name']}?updateMask=state", json={"state": "NORMAL"}
    )
    assert r.status_code == 404
    r = await alice.delete(f"/api/v1/{w['doomed']['name']}")
    assert r.status_code == 404


async def test_the_creators_trash_lists_it_and_no_one_elses(alice: Actor, bob: Actor) -> None:
    w = await _world(alice, bob)
    r = await alice.get("/api/v1/users/alice/trash")
    assert r.status_code == 200, r.text
    entries = r.json()["memos"]
    assert [e["name"] for e in entries] == [w["doomed"]["name"]]
    e = entries[0]
    assert e["state"] == "TRASHED" and e["priorState"] == "NORMAL"
    assert e["content"].startswith("ZEBRA-doomed") and e["commentCount"] == 1
    assert e["purgeTime"] > e["trashTime"]
    # bob's comment went with alice's memo: not in bob's trash, and bob cannot read alice's.
    assert (await bob.get("/api/v1/users/bob/trash")).json()["memos"] == []
    r = await bob.get("/api/v1/users/alice/trash")
    assert r.status_code == 403
    assert "ZEBRA" not in r.text
    # bob cannot undelete or purge alice's memo: not found in *his* trash.
    r = await bob.post(f"/api/v1/{w['doomed']['name']}:undelete", json={})
    assert r.status_code == 404
    r = await bob.post(f"/api/v1/{w['doomed']['name']}:purge", json={})
    assert r.status_code == 404


async def _rows(url: str, memo_ids: list[int]) -> dict[str, list[Any]]:
    """Every row hanging off ``memo_ids`` (memo rows without version and origin)."""
    from app.db import schema as s

    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            out: dict[str, list[Any]] = {}
            skip = {"version", "origin"}
            cols = [c for c in s.memo.c if c.name not in skip]
            out["memo"] = list(
                (
                    await conn.execute(
                        sa.select(*cols)
                        .where(sa.or_(s.memo.c.id.in_(memo_ids), s.memo.c.parent_id.in_(memo_ids)))
                        .order_by(s.memo.c.id)
                    )
                ).all()
            )
            ids = [r.id for r in out["memo"]]
            for t in (s.memo_tag, s.memo_html, s.reaction, s.attachment, s.memo_share):
                out[t.name] = list(
                    (await conn.execute(sa.select(t).where(t.c.memo_id.in_(ids)))).all()
                )
            rel = s.memo_relation
            out["memo_relation"] = list(
                (
                    await conn.execute(
                        sa.select(rel).where(
                            sa.or_(rel.c.memo_id.in_(ids), rel.c.related_memo_id.in_(ids))
                        )
                    )
                ).all()
            )
            return out
    finally:
        await engine.dispose()


async def _memo_id(url: str, memo_uid: str) -> int:
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            return int(
                (
                    await conn.execute(
                        sa.select(memo_table.c.id).where(memo_table.c.uid == memo_uid)
                    )
                ).scalar_one()
            )
    finally:
        await engine.dispose()


async def test_undelete_brings_back_exactly_what_was_trashed(
    alice: Actor, bob: Actor, settings: Settings
) -> None:
    await make_public(alice)
    m = await alice.memo("restore me #t", visibility="PUBLIC")
    archived_comment = (await comment(alice, m, "archived comment")).json()
    r = await alice.patch(
        f"/api/v1/{archived_comment['name']}?updateMask=state", json={"state": "ARCHIVED"}
    )
    assert r.status_code == 200, r.text
    await comment(bob, m, "bob's", visibility="PROTECTED")
    await upload(alice, "f.txt", b"bytes", memo=m["name"])
    await alice.post(
        f"/api/v1/{m['name']}/reactions",
        json={"reaction": {"contentId": m["name"], "reactionType": "+1"}},
    )
    other = await alice.memo("other")
    await alice.patch(
        f"/api/v1/{other['name']}/relations",
        json={"relations": [{"relatedMemo": {"name": m["name"]}}]},
    )
    await alice.post(f"/api/v1/{m['name']}/shares", json={})
    mid = await _memo_id(settings.database_url, uid(m))
    before = await _rows(settings.database_url, [mid])
    assert len(before["memo"]) == 3 and before["attachment"] and before["memo_relation"]

    assert (await alice.delete(f"/api/v1/{m['name']}")).status_code == 200
    r = await alice.post(f"/api/v1/{m['name']}:undelete", json={})
    assert r.status_code == 200, r.text
    assert r.json()["name"] == m["name"] and r.json()["state"] == "NORMAL"
    assert await _rows(settings.database_url, [mid]) == before
    assert (await alice.get("/api/v1/users/alice/trash")).json()["memos"] == []
    # The archived comment came back archived; history records both moves.
    r = await alice.get(f"/api/v1/{archived_comment['name']}")
    assert r.status_code == 200 and r.json()["state"] == "ARCHIVED"
    kinds = [
        v["kind"] for v in (await alice.get(f"/api/v1/{m['name']}/history")).json()["versions"]
    ]
    assert kinds[:2] == ["UNTRASH", "TRASH"]


async def test_a_comment_trashed_alone_waits_for_its_parent(alice: Actor) -> None:
    m = await alice.memo("parent")
    c = (await comment(alice, m, "child")).json()
    assert (await alice.delete(f"/api/v1/{c['name']}")).status_code == 200
    assert (await alice.delete(f"/api/v1/{m['name']}")).status_code == 200
    names = [e["name"] for e in (await alice.get("/api/v1/users/alice/trash")).json()["memos"]]
    assert sorted(names) == sorted([m["name"], c["name"]])  # two separate groups
    r = await alice.post(f"/api/v1/{c['name']}:undelete", json={})
    assert r.status_code == 412, r.text
    assert (await alice.post(f"/api/v1/{m['name']}:undelete", json={})).status_code == 200
    # Restoring the parent did not bring back the comment trashed on its own.
    assert (await alice.get(f"/api/v1/{c['name']}")).status_code == 404
    assert (await alice.post(f"/api/v1/{c['name']}:undelete", json={})).status_code == 200
    assert (await alice.get(f"/api/v1/{c['name']}")).status_code == 200


async def test_purge_removes_rows_and_bytes_and_needs_a_session(
    alice: Actor, settings: Settings
) -> None:
    m = await alice.memo("purge me")
    a = await upload(alice, "p.bin", b"PURGEBYTES", memo=m["name"])
    files = list((settings.data_dir / "attachments").glob("*"))
    assert len(files) == 1
    assert (await alice.delete(f"/api/v1/{m['name']}")).status_code == 200
    assert files[0].exists()  # trashed, not gone
    for scope in ("READ", "WRITE"):
        key = await restricted_key(alice, scope=scope, personal="AUDIENCE")
        r = await alice.client.post(f"/api/v1/{m['name']}:purge", headers=key, json={})
        assert r.status_code == 403, r.text
        r = await alice.client.post("/api/v1/users/alice/trash:purge", headers=key, json={})
        assert r.status_code == 403, r.text
    r = await alice.post(
        "/api/v1/users/alice/personalAccessTokens", json={"description": "full key"}
    )
    full = {"Authorization": f"Bearer {r.json()['token']}"}
    r = await alice.client.post(f"/api/v1/{m['name']}:purge", headers=full, json={})
    assert r.status_code == 403, r.text
    assert files[0].exists()
    r = await alice.post(f"/api/v1/{m['name']}:purge", json={})
    assert r.status_code == 200, r.text
    assert r.json() == {"purgedCount": 1}
    assert not files[0].exists()
    assert (await alice.get(f"/api/v1/{a['name']}")).status_code == 404
    assert (await alice.post(f"/api/v1/{m['name']}:undelete", json={})).status_code == 404
    assert (await alice.get("/api/v1/users/alice/trash")).json()["memos"] == []
    # Empty the whole trash.
    for i in range(3):
        x = await alice.memo(f"x{i}")
        await alice.delete(f"/api/v1/{x['name']}")
    r = await alice.post("/api/v1/users/alice/trash:purge", json={})
    assert r.json() == {"purgedCount": 3}


async def test_a_key_trashes_what_it_may_write_and_nothing_else(alice: Actor, bob: Actor) -> None:
    mine = await alice.memo("mine", visibility="PROTECTED")
    theirs = await bob.memo("theirs", visibility="PROTECTED")
    read_key = await restricted_key(alice, scope="READ", personal="AUDIENCE")
    write_key = await restricted_key(alice, scope="WRITE", personal="AUDIENCE")
    r = await alice.client.delete(f"/api/v1/{mine['name']}", headers=read_key)
    assert r.status_code == 403
    r = await alice.client.delete(f"/api/v1/{theirs['name']}", headers=write_key)
    assert r.status_code == 403
    assert (await bob.get(f"/api/v1/{theirs['name']}")).status_code == 200
    r = await alice.client.delete(f"/api/v1/{mine['name']}", headers=write_key)
    assert r.status_code == 200, r.text
    # The key sees it in the trash (within its reach) and may restore it (a write).
    r = await alice.client.get("/api/v1/users/alice/trash", headers=write_key)
    assert [e["name"] for e in r.json()["memos"]] == [mine["name"]]
    none_key = await restricted_key(alice, scope="WRITE", personal="NONE")
    r = await alice.client.get("/api/v1/users/alice/trash", headers=none_key)
    assert r.json()["memos"] == []
    r = await alice.client.post(f"/api/v1/{mine['name']}:undelete", headers=none_key, json={})
    assert r.status_code == 404
    r = await alice.client.post(f"/api/v1/{mine['name']}:undelete", headers=read_key, json={})
    assert r.status_code == 403
    r = await alice.client.post(f"/api/v1/{mine['name']}:undelete", headers=write_key, json={})
    assert r.status_code == 200, r.text


async def test_retention_setting_is_admin_only_and_validated(alice: Actor, bob: Actor) -> None:
    r = await alice.get("/api/v1/instance/settings/TRASH")
    assert r.status_code == 200, r.text
    assert r.json() == {"name": "instance/settings/TRASH", "retentionDays": 30}
    assert (await bob.get("/api/v1/instance/settings/TRASH")).status_code == 403
    r = await bob.patch("/api/v1/instance/settings/TRASH", json={"retentionDays": 1})
    assert r.status_code == 403
    r = await alice.patch("/api/v1/instance/settings/TRASH", json={"retentionDays": -1})
    assert r.status_code == 400 and "retentionDays" in r.json()["message"]
    r = await alice.patch("/api/v1/instance/settings/TRASH", json={"retentionDays": 7})
    assert r.json()["retentionDays"] == 7
    # The ACCESS setting is still served by its own route.
    r = await alice.get("/api/v1/instance/settings/ACCESS")
    assert r.status_code == 200 and "accessMode" in r.json()
    m = await alice.memo("m")
    await alice.delete(f"/api/v1/{m['name']}")
    e = (await alice.get("/api/v1/users/alice/trash")).json()["memos"][0]
    assert e["purgeTime"] > e["trashTime"]
    await alice.patch("/api/v1/instance/settings/TRASH", json={"retentionDays": 0})
    e = (await alice.get("/api/v1/users/alice/trash")).json()["memos"][0]
    assert "purgeTime" not in e


async def test_trash_pages_are_keyset_and_tokens_are_checked(alice: Actor, bob: Actor) -> None:
    made = []
    for i in range(3):
        m = await alice.memo(f"m{i}")
        made.append(m["name"])
        assert (await alice.delete(f"/api/v1/{m['name']}")).status_code == 200
    seen, token = [], ""
    for _ in range(5):
        r = await alice.get(f"/api/v1/users/alice/trash?pageSize=1&pageToken={q(token)}")
        body = r.json()
        seen += [e["name"] for e in body["memos"]]
        token = body["nextPageToken"]
        if not token:
            break
    assert sorted(seen) == sorted(made) and len(seen) == 3
    r = await alice.get("/api/v1/users/alice/trash?pageSize=1")
    token = r.json()["nextPageToken"]
    r = await bob.get(f"/api/v1/users/bob/trash?pageToken={q(token)}")
    assert r.status_code == 400, r.text
    assert json.loads(r.text)["code"] == 3


async def test_an_import_cannot_replace_a_trashed_memo(alice: Actor) -> None:
    m = await alice.memo("exported, then trashed")
    archive = (await alice.get("/api/v1/users/alice:exportMemos")).content
    assert (await alice.delete(f"/api/v1/{m['name']}")).status_code == 200
    r = await alice.post("/api/v1/users/alice:importMemos?conflictPolicy=REPLACE", content=archive)
    assert r.status_code == 400, r.text
    assert "trash" in r.text
    assert (await alice.get(f"/api/v1/{m['name']}")).status_code == 404
    r = await alice.post("/api/v1/users/alice:importMemos", content=archive)  # SKIP
    assert r.status_code == 200, r.text
    assert (await alice.get(f"/api/v1/{m['name']}")).status_code == 404
    trash = (await alice.get("/api/v1/users/alice/trash")).json()["memos"]
    assert [e["name"] for e in trash] == [m["name"]]
