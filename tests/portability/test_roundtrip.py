"""Export then import into an empty instance reproduces every memo; importing twice is a no-op.

Both dialects. The source instance holds every shape a memo can have: each
visibility, pinned, archived, a location, a comment, REFERENCE relations,
uploaded attachments and an external link, a SPACE memo at a tree path,
content with CRLF, trailing spaces, emoji and no final newline, and an
empty memo. The target is a second instance where only the users (and the
space, same uid) exist.
"""

from __future__ import annotations

import io
import zipfile
from typing import Any

import sqlalchemy as sa

from app.db.engine import create_engine
from app.db.schema import attachment, memo, user_account
from app.settings import Settings
from tests.conftest import Actor, sign_up
from tests.portability.conftest import Instance
from tests.portability.state import memos_of, stored_files, table_counts
from tests.related.helpers import upload

BINARY = bytes(range(256)) * 40
CONTENTS = {
    "m-protected": "Hello **world** #a/b\n\ntrailing spaces   \n",
    "m-public": "Ünïcödé ✓ 🚀\r\nCRLF line\r\n",
    "m-files": "see attached #files",
    "m-empty": "",
    "m-refs": "links to [[m-protected]] and m-public",
    "m-space": "team note #team",
}


async def seed(alice: Actor, settings: Settings) -> dict[str, Any]:
    """Every kind of memo, created through the API (plus one external link row)."""
    r = await alice.post(
        "/api/v1/memos?memoId=m-protected",
        json={
            "content": CONTENTS["m-protected"],
            "visibility": "PROTECTED",
            "pinned": True,
            "createTime": "2025-01-02T03:04:05Z",
            "updateTime": "2025-02-03T04:05:06Z",
            "location": {"placeholder": "Office", "latitude": 52.52, "longitude": 13.405},
        },
    )
    assert r.status_code == 200, r.text
    for uid, fields in {
        "m-public": {"visibility": "PUBLIC", "state": "ARCHIVED"},
        "m-files": {},
        "m-empty": {"createTime": "2024-12-31T23:59:59Z"},
        "m-refs": {"visibility": "PROTECTED"},
    }.items():
        r = await alice.post(
            f"/api/v1/memos?memoId={uid}", json={"content": CONTENTS[uid], **fields}
        )
        assert r.status_code == 200, r.text
    r = await alice.post(
        "/api/v1/memos/m-protected/comments?memoId=m-comment", json={"content": "a comment\n"}
    )
    assert r.status_code == 200, r.text
    r = await alice.patch(
        "/api/v1/memos/m-refs/relations",
        json={
            "relations": [
                {"relatedMemo": {"name": "memos/m-protected"}, "type": "REFERENCE"},
                {"relatedMemo": {"name": "memos/m-public"}, "type": "REFERENCE"},
            ]
        },
    )
    assert r.status_code == 200, r.text
    await upload(alice, "photo one.bin", BINARY, "application/octet-stream", memo="memos/m-files")
    await upload(alice, "notes.txt", b"plain text\n", "text/plain", memo="memos/m-files")
    engine = create_engine(settings.database_url)
    async with engine.begin() as conn:
        files = (
            await conn.execute(sa.select(memo.c.id).where(memo.c.uid == "m-files"))
        ).scalar_one()
        await conn.execute(
            attachment.insert().values(
                uid="ext-link",
                creator_id=(
                    await conn.execute(
                        sa.select(user_account.c.id).where(user_account.c.username == "alice")
                    )
                ).scalar_one(),
                memo_id=files,
                filename="spec.pdf",
                mime_type="application/pdf",
                size=120400,
                external_link="https://files.example.com/spec.pdf",
                created_ts=1_700_000_000,
            )
        )
    await engine.dispose()
    r = await alice.post("/api/v1/spaces?spaceId=team", json={"title": "Team"})
    assert r.status_code == 200, r.text
    r = await alice.post(
        "/api/v1/memos?memoId=m-space",
        json={"content": CONTENTS["m-space"], "space": "spaces/team", "tree": "share.notes"},
    )
    assert r.status_code == 200, r.text
    return {}


async def export(actor: Actor) -> bytes:
    r = await actor.get(f"/api/v1/users/{actor.username}:exportMemos")
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/vnd.usememos.export+zip")
    assert "memos-export-" in r.headers["content-disposition"]
    return bytes(r.content)


async def import_(actor: Actor, data: bytes, query: str = "") -> Any:
    return await actor.post(f"/api/v1/users/{actor.username}:importMemos{query}", content=data)


async def test_export_then_import_reproduces_every_memo(
    alice: Actor, settings: Settings, other: Instance
) -> None:
    await seed(alice, settings)
    data = await export(alice)
    names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    assert names[0] == "manifest.json"
    assert len(names) == len(set(names))
    for uid, content in CONTENTS.items():  # the content entries are byte-identical
        assert zipfile.ZipFile(io.BytesIO(data)).read(f"memos/{uid}.md") == content.encode()

    target = await sign_up(other.client, "alice")
    r = await target.post("/api/v1/spaces?spaceId=team", json={"title": "Team"})
    assert r.status_code == 200, r.text
    r = await import_(target, data, "?validateOnly=true")
    assert r.status_code == 200, r.text
    plan = r.json()
    assert (plan["memoCount"], plan["new"], plan["inserted"], plan["existing"]) == (7, 7, 7, 0)
    assert await table_counts(other.settings.database_url) == {
        "memo": 0,
        "memo_event": 0,
        "memo_relation": 0,
        "memo_tag": 0,
        "attachment": 0,
        "versions": 0,
    }  # validate-only wrote nothing

    r = await import_(target, data)
    assert r.status_code == 200, r.text
    report = r.json()
    assert (report["inserted"], report["attachmentsStored"], report["warnings"]) == (7, 3, [])

    source = await memos_of(settings.database_url, settings.data_dir, "alice")
    copied = await memos_of(other.settings.database_url, other.settings.data_dir, "alice")
    assert set(copied) == set(source) == {*CONTENTS, "m-comment"}
    for uid in source:
        assert copied[uid] == source[uid], uid
    assert copied["m-comment"]["parent"] == "m-protected"
    links = {a[0]: a[6] for a in copied["m-files"]["attachments"]}
    assert links["ext-link"] == "https://files.example.com/spec.pdf"
    assert len(links) == 3
    assert copied["m-space"]["visibility"] == "SPACE"
    space_row = await _placement(other.settings.database_url, "m-space")
    assert space_row == ("team", "share.notes")


async def _placement(url: str, uid: str) -> tuple[str, str]:
    from app.db.schema import space

    engine = create_engine(url)
    async with engine.connect() as conn:
        row = (
            await conn.execute(
                sa.select(space.c.uid, memo.c.tree)
                .join(space, space.c.id == memo.c.space_id)
                .where(memo.c.uid == uid)
            )
        ).one()
    await engine.dispose()
    return str(row[0]), str(row[1])


async def test_import_twice_is_a_no_op(alice: Actor, settings: Settings, other: Instance) -> None:
    await seed(alice, settings)
    data = await export(alice)
    target = await sign_up(other.client, "alice")
    await target.post("/api/v1/spaces?spaceId=team", json={"title": "Team"})
    for policy in ("", "?conflictPolicy=SKIP", "?conflictPolicy=REPLACE"):
        r = await import_(target, data, policy)
        assert r.status_code == 200, r.text
        if policy == "":
            first_counts = await table_counts(other.settings.database_url)
            first_memos = await memos_of(
                other.settings.database_url, other.settings.data_dir, "alice"
            )
            first_files = stored_files(other.settings.data_dir)
            continue
        body = r.json()
        assert body["inserted"] == 0, policy
        assert body["existing"] == 7, policy
        assert await table_counts(other.settings.database_url) == first_counts, policy
        assert (
            await memos_of(other.settings.database_url, other.settings.data_dir, "alice")
            == first_memos
        ), policy
        assert stored_files(other.settings.data_dir) == first_files, policy


async def test_replace_restores_and_duplicate_copies(alice: Actor, settings: Settings) -> None:
    await seed(alice, settings)
    data = await export(alice)
    before = await memos_of(settings.database_url, settings.data_dir, "alice")
    r = await alice.patch(
        "/api/v1/memos/m-protected?updateMask=content,pinned",
        json={"content": "edited", "pinned": False},
    )
    assert r.status_code == 200, r.text
    r = await import_(alice, data, "?conflictPolicy=SKIP")
    assert r.json()["skipped"] == 7
    edited = await memos_of(settings.database_url, settings.data_dir, "alice")
    assert edited["m-protected"]["content"] == "edited"
    r = await import_(alice, data, "?conflictPolicy=REPLACE")
    assert r.status_code == 200, r.text
    assert r.json()["replaced"] == 7
    restored = await memos_of(settings.database_url, settings.data_dir, "alice")
    assert restored["m-protected"] == before["m-protected"]
    assert restored == before
    r = await import_(alice, data, "?conflictPolicy=DUPLICATE")
    assert r.status_code == 200, r.text
    assert r.json()["duplicated"] == 7
    after = await memos_of(settings.database_url, settings.data_dir, "alice")
    assert len(after) == 14
    copies = [m for uid, m in after.items() if uid not in before]
    assert sorted(m["content"] for m in copies) == sorted(m["content"] for m in before.values())


async def test_another_users_uids_are_renamed_stably(
    alice: Actor, bob: Actor, settings: Settings
) -> None:
    """bob imports alice's archive on the same instance: fresh, stable ids; twice = once."""
    await seed(alice, settings)
    data = await export(alice)
    r = await import_(bob, data)
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["renamed"], body["inserted"]) == (7, 7)
    first = await memos_of(settings.database_url, settings.data_dir, "bob")
    assert len(first) == 7
    assert not set(first) & {*CONTENTS, "m-comment"}
    alice_after = await memos_of(settings.database_url, settings.data_dir, "alice")
    assert len(alice_after) == 7  # alice's memos untouched
    r = await import_(bob, data)
    assert r.status_code == 200, r.text
    assert (r.json()["inserted"], r.json()["existing"], r.json()["skipped"]) == (0, 7, 7)
    assert await memos_of(settings.database_url, settings.data_dir, "bob") == first
    # the renamed comment hangs off bob's renamed parent, not alice's memo
    comment = next(m for m in first.values() if m["content"] == "a comment\n")
    assert comment["parent"] in first


async def test_concurrent_imports_of_one_archive_land_once(
    alice: Actor, settings: Settings, other: Instance
) -> None:
    """Three imports of the same archive at once: each waits its turn or gets a clear 409;
    the end state is exactly one import's."""
    import asyncio

    await seed(alice, settings)
    data = await export(alice)
    target = await sign_up(other.client, "alice")
    await target.post("/api/v1/spaces?spaceId=team", json={"title": "Team"})
    responses = await asyncio.gather(*(import_(target, data) for _ in range(3)))
    statuses = sorted(r.status_code for r in responses)
    assert set(statuses) <= {200, 409}, [r.text for r in responses]
    assert statuses[0] == 200
    inserted = [r.json()["inserted"] for r in responses if r.status_code == 200]
    assert sorted(inserted)[-1] == 7 and sum(inserted) == 7
    source = await memos_of(settings.database_url, settings.data_dir, "alice")
    copied = await memos_of(other.settings.database_url, other.settings.data_dir, "alice")
    assert copied == source
    counts = await table_counts(other.settings.database_url)
    assert counts["memo"] == 7 and counts["attachment"] == 3
