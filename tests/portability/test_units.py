"""The pure parts: entry names, safe filenames, derived uids, decisions, bounds, bcrypt."""

from __future__ import annotations

import zlib
from pathlib import Path

import bcrypt
import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.api.structs import UID_RE
from app.auth.passwords import RESET_REQUIRED, make_hasher, needs_rehash, verify_password
from app.portability import format as fmt
from app.portability.entry_names import entry_name_problem
from app.portability.errors import ArchiveRefused
from app.portability.limits import ArchiveLimits
from app.portability.plan import Action, Holder, Policy, decide, derived_uid
from app.portability.unzip import central_directory_count, read_entries
from tests.portability.archives import build


@pytest.mark.parametrize(
    "name",
    [
        "../x",
        "a/../b",
        "/abs",
        "a//b",
        "a/./b",
        "a\\b",
        "C:/x",
        "a\x00b",
        "a\x1fb",
        "a\x7fb",
        "",
        "x" * 1025,
    ],
)
def test_unsafe_entry_names(name: str) -> None:
    assert entry_name_problem(name) is not None


@pytest.mark.parametrize(
    "name",
    ["manifest.json", "memos/a.json", "attachments/a1/whiteboard photo.jpg", "attachments/x/ü.png"],
)
def test_safe_entry_names(name: str) -> None:
    assert entry_name_problem(name) is None


@pytest.mark.parametrize(
    ("filename", "safe"),
    [
        ("whiteboard photo.jpg", "whiteboard photo.jpg"),
        ("../../etc/passwd", "_.._etc_passwd"),
        ("a:b\\c", "a_b_c"),
        ("  .hidden. ", "hidden"),
        ("CON.txt", "_CON.txt"),
        ("...", "file"),
    ],
)
def test_safe_filename_is_memos_mapping(filename: str, safe: str) -> None:
    assert fmt.safe_filename(filename) == safe
    assert entry_name_problem(fmt.attachment_path("a1", filename)) is None


@given(
    st.from_regex(r"[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,34}[a-zA-Z0-9])?", fullmatch=True),
    st.integers(1, 10**9),
    st.integers(0, 3),
)
def test_derived_uids_fit_the_grammar_and_are_stable(uid: str, user: int, attempt: int) -> None:
    derived = derived_uid(uid, user, attempt)
    assert UID_RE.match(derived) and len(derived) <= 36
    assert derived == derived_uid(uid, user, attempt)
    assert derived != uid
    assert derived != derived_uid(uid, user + 1, attempt)


def test_decisions() -> None:
    me, other = 1, 2
    assert decide("a", {}, me, Policy.SKIP)[:2] == (Action.INSERT, "a")  # type: ignore[index]
    mine = {"a": Holder(10, me)}
    for policy, action in (
        (Policy.SKIP, Action.SKIP),
        (Policy.REPLACE, Action.REPLACE),
        (Policy.DUPLICATE, Action.DUPLICATE),
    ):
        assert decide("a", mine, me, policy)[0] is action  # type: ignore[index]
    theirs = {"a": Holder(10, other)}
    action, target, _ = decide("a", theirs, me, Policy.SKIP)  # type: ignore[misc]
    assert (action, target) == (Action.RENAME, derived_uid("a", me, 0))
    # the renamed copy from an earlier import is mine: skipped, not copied again
    again = {**theirs, derived_uid("a", me, 0): Holder(11, me)}
    assert decide("a", again, me, Policy.SKIP)[:2] == (Action.SKIP, derived_uid("a", me, 0))  # type: ignore[index]
    everything_taken = {"a": Holder(1, other)} | {
        derived_uid("a", me, i): Holder(2 + i, other) for i in range(4)
    }
    assert decide("a", everything_taken, me, Policy.SKIP) is None


def test_times() -> None:
    assert fmt.parse_time("2026-09-16T08:30:00Z") == 1789547400
    assert fmt.parse_time("2026-09-16T08:30:00.999Z") == 1789547400
    assert fmt.format_time(1789547400) == "2026-09-16T08:30:00Z"
    with pytest.raises(ValueError):
        fmt.parse_time("2026-13-16T08:30:00Z")
    assert fmt.archive_filename("steven", 1789547400) == "memos-export-steven-20260916T083000Z.zip"


def _drain(data: bytes, limits: ArchiveLimits, bound: int) -> None:
    for entry in read_entries([data], limits, lambda _: bound):
        for _ in entry.chunks:
            pass


def test_bounds_are_checked_on_bytes_produced_not_headers() -> None:
    zeros = b"\0" * (4 * 1024 * 1024)
    data = build([("a.bin", zeros)])
    assert len(data) < 20_000
    with pytest.raises(ArchiveRefused, match="expands past its bound"):
        _drain(data, ArchiveLimits(), bound=1024 * 1024)
    with pytest.raises(ArchiveRefused, match="decompression bomb"):
        _drain(data, ArchiveLimits(ratio=10, slack=0), bound=10**9)
    with pytest.raises(ArchiveRefused, match="in total"):
        _drain(data, ArchiveLimits(max_total_bytes=1024), bound=10**9)
    with pytest.raises(ArchiveRefused, match="more than 1 entries"):
        _drain(build([("a", b"1"), ("b", b"2")]), ArchiveLimits(max_entries=1), bound=10)
    with pytest.raises(ArchiveRefused, match="larger than"):
        _drain(data, ArchiveLimits(max_archive_bytes=100), bound=10**9)
    _drain(data, ArchiveLimits(), bound=10**9)  # within every bound: read whole


def test_a_header_that_lies_about_its_size_is_refused() -> None:
    """An entry whose local header claims 10 bytes but inflates to 4 MiB."""
    data = bytearray(build([("a.bin", b"\0" * (4 * 1024 * 1024))]))
    # Local header: uncompressed size at offset 22 (4 bytes); the central directory agrees later.
    data[22:26] = (10).to_bytes(4, "little")
    with pytest.raises(ArchiveRefused):
        _drain(bytes(data), ArchiveLimits(), bound=10**9)


def test_end_record_count() -> None:
    data = build([("a", b"1"), ("b", b"2")])
    assert central_directory_count(data) == 2
    assert central_directory_count(data[:-5]) is None
    assert central_directory_count(b"") is None
    assert len(zlib.compress(b"x")) > 0


async def test_bcrypt_hashes_from_memos_verify_once_and_ask_for_a_rehash() -> None:
    hasher = make_hasher("cheap")
    go_hash = bcrypt.hashpw(b"password-1", bcrypt.gensalt(rounds=4, prefix=b"2a")).decode()
    assert go_hash.startswith("$2a$")
    assert await verify_password(hasher, go_hash, "password-1")
    assert not await verify_password(hasher, go_hash, "password-2")
    assert needs_rehash(go_hash)
    argon = hasher.hash("password-1")
    assert not needs_rehash(argon)
    # Go's bcrypt reads the first 72 bytes only: a longer password matches on its prefix.
    long = "x" * 80
    long_hash = bcrypt.hashpw(b"x" * 72, bcrypt.gensalt(rounds=4, prefix=b"2a")).decode()
    assert await verify_password(hasher, long_hash, long)
    assert not await verify_password(hasher, RESET_REQUIRED, "")
    assert not await verify_password(hasher, "$2a$04$garbage", "password-1")


def test_a_staging_store_is_removed_a_batch_of_entries_at_a_time(tmp_path: Path) -> None:
    """Decision 0040: ``shutil.rmtree`` listed a 100,000-file staging directory whole
    (14 MB for 9 s); ``empty_flat_dir`` lists and deletes ``batch`` entries at a time,
    leaving subdirectories to ``rmtree``, and the store's close removes everything."""
    from app.portability.staging import Staging, empty_flat_dir

    flat = tmp_path / "flat"
    flat.mkdir()
    for i in range(2_500):
        (flat / f"f{i}").write_bytes(b"x")
    (flat / "sub").mkdir()
    (flat / "sub" / "kept").write_bytes(b"y")
    empty_flat_dir(flat, batch=1_000)
    assert sorted(p.name for p in flat.iterdir()) == ["sub"]
    assert (flat / "sub" / "kept").exists()
    empty_flat_dir(tmp_path / "missing")  # gone already: nothing to do

    staging = Staging(tmp_path / "tmp")
    for i in range(1_500):
        (staging.files / f"entry-{i}").write_bytes(b"z")
    root = staging.root
    staging.close()
    assert not root.exists()
