"""Hostile and broken archives are refused whole: a clear 400 naming the problem, nothing written.

Both dialects. Each case is checked against the database (every table an
import writes) and the attachment directory before and after, for the plan
(``validateOnly``) and for the import.
"""

from __future__ import annotations

import zlib
from typing import Any

import pytest

from app.settings import Settings
from tests.conftest import Actor
from tests.portability.archives import JPEG, archive, build, jsonb, manifest, record, sha256
from tests.portability.state import stored_files, table_counts

GOOD = record("good1")


def _ok(entries: list[tuple[str, bytes]], count: int = 1) -> list[tuple[str, bytes]]:
    return [("manifest.json", jsonb(manifest(count))), *entries]


def zip_slip() -> bytes:
    return build(
        _ok(
            [
                ("memos/good1.json", jsonb(GOOD)),
                ("memos/good1.md", b"x"),
                ("../../etc/evil.md", b"owned"),
            ]
        )
    )


def absolute_name() -> bytes:
    return build(
        _ok([("memos/good1.json", jsonb(GOOD)), ("memos/good1.md", b"x"), ("/etc/passwd", b"root")])
    )


def backslash_name() -> bytes:
    return build(
        _ok(
            [
                ("memos/good1.json", jsonb(GOOD)),
                ("memos/good1.md", b"x"),
                ("attachments\\..\\x", b"x"),
            ]
        )
    )


def drive_letter() -> bytes:
    return build(
        _ok([("memos/good1.json", jsonb(GOOD)), ("memos/good1.md", b"x"), ("C:/windows/x", b"x")])
    )


def duplicate_names() -> bytes:
    return build(
        _ok([("memos/good1.json", jsonb(GOOD)), ("memos/good1.md", b"x"), ("memos/good1.md", b"y")])
    )


def bomb() -> bytes:
    """Three entries of 40 MiB of zeros each (each under its own bound, 0.1% the size
    compressed): together they expand past 64x the compressed bytes plus the slack."""
    zeros = b"\0" * (40 * 1024 * 1024)
    return build(
        _ok(
            [("memos/good1.json", jsonb(GOOD)), ("memos/good1.md", b"x")]
            + [(f"padding/{i}.bin", zeros) for i in range(3)]
        )
    )


def entry_bomb() -> bytes:
    """One content entry that expands past the 64 MiB bound of its kind."""
    return build(
        _ok([("memos/good1.json", jsonb(GOOD)), ("memos/good1.md", b"a" * (65 * 1024 * 1024))])
    )


def no_manifest() -> bytes:
    return build([("memos/good1.json", jsonb(GOOD)), ("memos/good1.md", b"x")])


def bad_manifest_format() -> bytes:
    return build(
        [
            ("manifest.json", jsonb(manifest(1, format="evernote"))),
            ("memos/good1.json", jsonb(GOOD)),
            ("memos/good1.md", b"x"),
        ]
    )


def future_major() -> bytes:
    return build(
        [
            ("manifest.json", jsonb(manifest(1, formatVersion="2.0"))),
            ("memos/good1.json", jsonb(GOOD)),
            ("memos/good1.md", b"x"),
        ]
    )


def manifest_not_json() -> bytes:
    return build(
        [
            ("manifest.json", b"{not json"),
            ("memos/good1.json", jsonb(GOOD)),
            ("memos/good1.md", b"x"),
        ]
    )


def record_fails_schema() -> bytes:
    bad = {k: v for k, v in record("bad1").items() if k != "visibility"}
    return build(
        _ok(
            [
                ("memos/good1.json", jsonb(GOOD)),
                ("memos/good1.md", b"x"),
                ("memos/bad1.json", jsonb(bad)),
                ("memos/bad1.md", b"y"),
            ],
            2,
        )
    )


def record_bad_uid() -> bytes:
    rec = record("-bad-")
    return build(_ok([("memos/-bad-.json", jsonb(rec)), ("memos/-bad-.md", b"y")]))


def uid_not_basename() -> bytes:
    return build(_ok([("memos/other.json", jsonb(GOOD)), ("memos/good1.md", b"x")]))


def mismatched_memo_count() -> bytes:
    return build(
        [
            ("manifest.json", jsonb(manifest(5))),
            ("memos/good1.json", jsonb(GOOD)),
            ("memos/good1.md", b"x"),
        ]
    )


def mismatched_attachment_count() -> bytes:
    rec = record(
        "good1",
        attachments=[
            {
                "uid": "a1",
                "filename": "p.jpg",
                "type": "image/jpeg",
                "size": len(JPEG),
                "sha256": sha256(JPEG),
                "path": "attachments/a1/p.jpg",
                "createTime": "2026-03-02T14:05:30Z",
            }
        ],
    )
    return build(
        [
            ("manifest.json", jsonb(manifest(1, 3))),
            ("attachments/a1/p.jpg", JPEG),
            ("memos/good1.json", jsonb(rec)),
            ("memos/good1.md", b"x"),
        ]
    )


def digest_mismatch() -> bytes:
    rec = record(
        "good1",
        attachments=[
            {
                "uid": "a1",
                "filename": "p.jpg",
                "type": "image/jpeg",
                "size": len(JPEG),
                "sha256": "0" * 64,
                "path": "attachments/a1/p.jpg",
                "createTime": "2026-03-02T14:05:30Z",
            }
        ],
    )
    return archive({"good1": (rec, b"x")}, attachments={"attachments/a1/p.jpg": JPEG})


def missing_content() -> bytes:
    return build(_ok([("memos/good1.json", jsonb(GOOD))]))


def orphan_content() -> bytes:
    return build(
        _ok(
            [
                ("memos/good1.json", jsonb(GOOD)),
                ("memos/good1.md", b"x"),
                ("memos/ghost.md", b"no record"),
            ]
        )
    )


def content_not_utf8() -> bytes:
    return build(_ok([("memos/good1.json", jsonb(GOOD)), ("memos/good1.md", b"\xff\xfe\x00")]))


def javascript_link() -> bytes:
    rec = record(
        "good1",
        attachments=[
            {
                "uid": "a1",
                "filename": "x",
                "type": "text/html",
                "size": 1,
                "externalLink": "javascript:alert(1)",
                "createTime": "2026-03-02T14:05:30Z",
            }
        ],
    )
    return build(_ok([("memos/good1.json", jsonb(rec)), ("memos/good1.md", b"x")]))


def not_a_zip() -> bytes:
    return b"this is not a zip archive at all" * 10


def truncated() -> bytes:
    return build(_ok([("memos/good1.json", jsonb(GOOD)), ("memos/good1.md", b"x" * 5000)]))[:300]


def no_end_record() -> bytes:
    """Every entry intact, the central directory's end cut off: not a whole ZIP."""
    return build(_ok([("memos/good1.json", jsonb(GOOD)), ("memos/good1.md", b"x")]))[:-30]


def central_directory_disagrees() -> bytes:
    """The end record counts one entry fewer than the archive holds (what a desktop tool
    lists would differ from what is imported)."""
    data = bytearray(build(_ok([("memos/good1.json", jsonb(GOOD)), ("memos/good1.md", b"x")])))
    at = data.rfind(b"PK\x05\x06")
    for field in (8, 10):  # entries on this disk, entries in total
        data[at + field : at + field + 2] = (2).to_bytes(2, "little")
    return bytes(data)


def encrypted() -> bytes:
    """A ZIP whose content entry claims traditional encryption (flag bit 0)."""
    data = bytearray(build(_ok([("memos/good1.json", jsonb(GOOD)), ("memos/good1.md", b"x")])))
    # Set the encryption flag on every local header (PK\x03\x04, flags at offset 6).
    at = 0
    while (at := data.find(b"PK\x03\x04", at)) >= 0:
        data[at + 6] |= 0x01
        at += 4
    return bytes(data)


CASES: dict[str, tuple[Any, str]] = {
    "zip slip": (zip_slip, "dot segment"),
    "absolute name": (absolute_name, "absolute"),
    "backslash": (backslash_name, "forbidden character"),
    "drive letter": (drive_letter, "forbidden character"),
    "duplicate names": (duplicate_names, "duplicate entry"),
    "decompression bomb": (bomb, "decompression bomb"),
    "entry over its bound": (entry_bomb, "expands past its bound"),
    "no manifest": (no_manifest, "manifest.json is missing"),
    "bad manifest format": (bad_manifest_format, "manifest.json"),
    "unknown major version": (future_major, "formatVersion"),
    "manifest not JSON": (manifest_not_json, "not valid JSON"),
    "record fails its schema": (record_fails_schema, "'visibility' is a required property"),
    "record uid grammar": (record_bad_uid, "uid"),
    "uid is not the basename": (uid_not_basename, "does not match the file name"),
    "mismatched memo count": (mismatched_memo_count, "counts.memos is 5"),
    "mismatched attachment count": (mismatched_attachment_count, "counts.attachments is 3"),
    "digest mismatch": (digest_mismatch, "SHA-256 does not match"),
    "missing content": (missing_content, "content entry"),
    "content without record": (orphan_content, "has no memo record"),
    "content not UTF-8": (content_not_utf8, "not valid UTF-8"),
    "javascript link": (javascript_link, "http(s)"),
    "not a zip": (not_a_zip, "not a ZIP"),
    "truncated": (truncated, "truncated"),
    "encrypted": (encrypted, "encrypted"),
    "no end record": (no_end_record, "no end record"),
    "central directory disagrees": (central_directory_disagrees, "central directory lists 2"),
}


@pytest.mark.parametrize("case", list(CASES))
async def test_refused_whole_with_a_clear_400(case: str, alice: Actor, settings: Settings) -> None:
    make, needle = CASES[case]
    data = make()
    await alice.memo("already here")
    before = await table_counts(settings.database_url), stored_files(settings.data_dir)
    for query in ("?validateOnly=true", "", "?conflictPolicy=REPLACE"):
        r = await alice.post(f"/api/v1/users/alice:importMemos{query}", content=data)
        assert r.status_code == 400, (case, query, r.status_code, r.text)
        body = r.json()
        assert body["code"] == 3
        assert "nothing was imported" in body["message"], body
        text = body["message"] + str(body["details"])
        assert needle in text, (case, text)
        assert (
            await table_counts(settings.database_url),
            stored_files(settings.data_dir),
        ) == before


async def test_every_problem_is_reported(alice: Actor) -> None:
    """Record problems are collected, not stopped at the first: a person fixes them in one go."""
    bad1 = {k: v for k, v in record("bad1").items() if k != "pinned"}
    bad2 = record("bad2", createTime="yesterday")
    data = build(
        _ok(
            [
                ("memos/bad1.json", jsonb(bad1)),
                ("memos/bad1.md", b"a"),
                ("memos/bad2.json", jsonb(bad2)),
                ("memos/bad2.md", b"b"),
            ],
            2,
        )
    )
    r = await alice.post("/api/v1/users/alice:importMemos", content=data)
    assert r.status_code == 400
    fields = {v["field"] for v in r.json()["details"][0]["fieldViolations"]}
    assert fields == {"memos/bad1.json", "memos/bad2.json"}


async def test_content_over_the_instance_limit_is_refused(alice: Actor, settings: Settings) -> None:
    big = "x" * (settings.content_length_limit + 1)
    data = archive({"good1": (GOOD, big.encode())})
    before = await table_counts(settings.database_url)
    r = await alice.post("/api/v1/users/alice:importMemos", content=data)
    assert r.status_code == 400
    assert "over this instance's limit" in r.json()["message"]
    assert await table_counts(settings.database_url) == before


async def test_a_bomb_costs_little_memory(alice: Actor) -> None:
    """The 120 MiB bomb is refused having decompressed at most a bound's worth (not all of it)."""
    import tracemalloc

    data = bomb()
    assert len(data) < 1024 * 1024
    tracemalloc.start()
    r = await alice.post("/api/v1/users/alice:importMemos", content=data)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert r.status_code == 400
    assert peak < 200 * 1024 * 1024


def test_deflate_of_zeros_is_tiny() -> None:
    """The bomb fixtures really are bombs (guards against a fixture that tests nothing)."""
    assert len(zlib.compress(b"\0" * (40 * 1024 * 1024), 9)) < 100_000
