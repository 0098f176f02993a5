"""Who may export and import what, and archives written by Memos' own rules.

Both dialects: two users and restricted keys (negative cases first), what an
export contains (the caller's own memos under its audience, nothing
another user wrote, no unreadable parent named), and the format document's
example record imported as Memos writes it.
"""

from __future__ import annotations

import io
import zipfile
from typing import Any

import msgspec

from app.settings import Settings
from tests.conftest import Actor
from tests.portability.archives import JPEG, sha256, spec_example
from tests.portability.state import memos_of, table_counts
from tests.related.helpers import restricted_key


def _names(data: bytes) -> set[str]:
    return set(zipfile.ZipFile(io.BytesIO(data)).namelist())


def _records(data: bytes) -> dict[str, dict[str, Any]]:
    z = zipfile.ZipFile(io.BytesIO(data))
    out = {}
    for name in z.namelist():
        if name.startswith("memos/") and name.endswith(".json"):
            rec = msgspec.json.decode(z.read(name))
            out[rec["uid"]] = rec
    return out


async def test_only_the_caller_exports_and_imports_its_own(alice: Actor, bob: Actor) -> None:
    await alice.memo("alice's")
    r = await bob.get("/api/v1/users/alice:exportMemos")
    assert r.status_code == 403
    r = await alice.client.get("/api/v1/users/alice:exportMemos")
    assert r.status_code == 401
    r = await bob.post("/api/v1/users/alice:importMemos", content=b"PK")
    assert r.status_code == 403
    r = await alice.client.post("/api/v1/users/alice:importMemos", content=b"PK")
    assert r.status_code == 401
    r = await alice.get("/api/v1/users/nobody:exportMemos")
    assert r.status_code == 403  # not a user-existence oracle: refused before any lookup


async def test_export_holds_the_callers_memos_only(alice: Actor, bob: Actor) -> None:
    mine = await alice.memo("mine", visibility="PUBLIC")
    theirs = await bob.memo("bob's public", visibility="PUBLIC")
    r = await alice.post(f"/api/v1/{theirs['name']}/comments", json={"content": "alice on bob"})
    assert r.status_code == 200, r.text
    comment = r.json()["name"].split("/")[1]
    r = await alice.get("/api/v1/users/alice:exportMemos")
    records = _records(r.content)
    bob_uid = theirs["name"].split("/")[1]
    assert set(records) == {mine["name"].split("/")[1], comment}
    assert records[comment]["parent"] == bob_uid  # readable: named
    r = await bob.patch(
        f"/api/v1/{theirs['name']}?updateMask=visibility", json={"visibility": "PRIVATE"}
    )
    assert r.status_code == 200, r.text
    data = (await alice.get("/api/v1/users/alice:exportMemos")).content
    records = _records(data)
    assert "parent" not in records[comment]  # bob's memo is hidden now: never named
    assert f"memos/{bob_uid}.json" not in _names(data)


async def test_keys_export_within_their_reach_and_import_only_with_write(
    alice: Actor, settings: Settings
) -> None:
    await alice.memo("personal")
    r = await alice.post("/api/v1/spaces?spaceId=team", json={"title": "Team"})
    assert r.status_code == 200, r.text
    r = await alice.post(
        "/api/v1/memos?memoId=in-space",
        json={"content": "space", "space": "spaces/team", "tree": "share"},
    )
    assert r.status_code == 200, r.text

    none = await restricted_key(alice, scope="READ", personal="NONE")
    r = await alice.client.get("/api/v1/users/alice:exportMemos", headers=none)
    assert r.status_code == 403
    own = await restricted_key(alice, scope="READ", personal="OWN")
    r = await alice.client.get("/api/v1/users/alice:exportMemos", headers=own)
    assert r.status_code == 200
    contents = {rec["visibility"] for rec in _records(r.content).values()}
    assert contents == {"PRIVATE"}  # the SPACE memo is outside this key's reach
    assert "in-space" not in _records(r.content)

    session_export = (await alice.get("/api/v1/users/alice:exportMemos")).content
    assert "in-space" in _records(session_export)
    before = await table_counts(settings.database_url)
    r = await alice.client.post(
        "/api/v1/users/alice:importMemos?conflictPolicy=DUPLICATE",
        content=session_export,
        headers=own,
    )
    assert r.status_code == 403  # READ key
    write_none = await restricted_key(alice, scope="WRITE", personal="NONE")
    r = await alice.client.post(
        "/api/v1/users/alice:importMemos?conflictPolicy=DUPLICATE",
        content=session_export,
        headers=write_none,
    )
    assert r.status_code == 403  # may not write unplaced memos
    assert await table_counts(settings.database_url) == before
    write_own = await restricted_key(alice, scope="WRITE", personal="OWN")
    r = await alice.client.post(
        "/api/v1/users/alice:importMemos?conflictPolicy=DUPLICATE",
        content=session_export,
        headers=write_own,
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["duplicated"] == 2
    # The key declares no space: the SPACE memo's copy lands unplaced and PRIVATE, with a warning.
    assert any("imported unplaced and PRIVATE" in w["message"] for w in body["warnings"])
    copies = [
        m
        for uid, m in (await memos_of(settings.database_url, settings.data_dir, "alice")).items()
        if uid not in ("in-space",) and m["content"] == "space"
    ]
    assert [c["visibility"] for c in copies] == ["PRIVATE"]


async def test_an_archive_written_by_memos_imports(alice: Actor, settings: Settings) -> None:
    """The format document's example record, with its parent and referenced memo."""
    data, example = spec_example()
    r = await alice.post("/api/v1/users/alice:importMemos?validateOnly=true", content=data)
    assert r.status_code == 200, r.text
    plan = r.json()
    assert (plan["memoCount"], plan["attachmentCount"], plan["new"]) == (3, 1, 3)
    assert plan["generator"] == {"name": "memos", "version": "0.31.0"}
    assert plan["exporter"] == "steven"
    r = await alice.post("/api/v1/users/alice:importMemos", content=data)
    assert r.status_code == 200, r.text
    warnings = [w["message"] for w in r.json()["warnings"]]
    assert any("team-notes" in w for w in warnings), warnings  # alice has no such space
    memos = await memos_of(settings.database_url, settings.data_dir, "alice")
    memo = memos["Ab3kZ9q2"]
    assert memo["content"] == "Whiteboard from the Q3 planning #work/q3\n"
    assert memo["parent"] == "Xy7LmN01"
    assert memo["pinned"] is True
    assert memo["visibility"] == "PRIVATE"  # the spec's fallback for an unresolvable space
    assert (
        memo["location_placeholder"],
        memo["location_latitude"],
        memo["location_longitude"],
    ) == (
        "Office",
        52.52,
        13.405,
    )
    assert memo["tags"] == ["work", "work/q3"]  # derived from the content, as the spec says
    assert ("Qr5TuV88", "REFERENCE") in memo["relations"]
    assert ("Xy7LmN01", "COMMENT") in memo["relations"]
    photo, pdf = sorted(memo["attachments"])
    assert photo[:3] == ("att1c9d", "whiteboard photo.jpg", "image/jpeg")
    assert photo[5] == sha256(JPEG)
    assert pdf[:3] == ("att77e0", "spec.pdf", "application/pdf")
    assert pdf[6] == "https://files.example.com/spec.pdf"
    from app.portability.format import parse_time

    assert memo["created_ts"] == parse_time(example["createTime"])
    assert memo["updated_ts"] == parse_time(example["updateTime"])


async def test_a_space_is_matched_by_uid_then_title(alice: Actor, settings: Settings) -> None:
    r = await alice.post("/api/v1/spaces?spaceId=other-uid", json={"title": "Team Notes"})
    assert r.status_code == 200, r.text
    # A top-level SPACE record in the example's space (re-using the example's builder).
    from tests.portability.archives import archive, record

    rec = record("spaced1", visibility="SPACE", space={"uid": "team-notes", "title": "Team Notes"})
    r = await alice.post(
        "/api/v1/users/alice:importMemos", content=archive({"spaced1": (rec, b"x")})
    )
    assert r.status_code == 200, r.text
    assert r.json()["warnings"] == []
    from tests.portability.test_roundtrip import _placement

    assert await _placement(settings.database_url, "spaced1") == ("other-uid", "share")
