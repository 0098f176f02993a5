"""Validating an archive into staging: nothing is written anywhere else until this passes.

One streaming pass (:mod:`app.portability.unzip`) reads every entry: its name
must pass the container rules, it must not repeat an earlier name, and its
bytes must stay within the bound of its kind. The manifest and each
``memos/<uid>.json`` record are parsed (strict JSON) and validated against
Memos' schemas; the ``daybook/memos.jsonl`` extras against Daybook's.
Contents and attachment bytes are spooled to the staging store with their
SHA-256. Then the cross-checks the schemas cannot express run on the
staged archive: the manifest is there and of a supported major version, a
record's uid is its file's basename, its ``contentPath`` names an entry
whose bytes are UTF-8 without NUL and within the instance's content limit,
every ``memos/*.md`` has its record, every attachment ``path`` names an entry
whose size and digest match, the manifest's counts match what is there, and
an external link is http(s).

Problems are collected (up to a bound) and raised together as one
:class:`~app.portability.errors.ArchiveRefused`, so a person fixing an
archive sees them all; a broken container stops at its first problem.
This module is synchronous: it runs in a worker thread.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import msgspec

from app.portability import format as fmt
from app.portability.entry_names import decode_name, entry_name_problem, is_directory_entry
from app.portability.errors import ArchiveRefused, Problem
from app.portability.limits import ArchiveLimits
from app.portability.records import (
    DaybookExtra,
    Manifest,
    MemoRecord,
    parse_extra,
    parse_manifest,
    parse_record,
)
from app.portability.schemas import extra_problems, manifest_problems, record_problems
from app.portability.staging import Staging
from app.portability.unzip import central_directory_count, read_entries

_RECORD = re.compile(r"memos/([^/]+)\.json")
_CONTENT = re.compile(r"memos/([^/]+)\.md")
_json = msgspec.json.Decoder()

__all__ = ["ValidatedArchive", "validate_archive"]


@dataclass(frozen=True, slots=True)
class ValidatedArchive:
    """An archive that passed every check, staged for planning and applying."""

    staging: Staging
    manifest: Manifest
    memo_count: int
    attachment_count: int


class _Problems:
    def __init__(self, limit: int) -> None:
        self.items: list[Problem] = []
        self.limit = limit

    def add(self, where: str, message: str) -> None:
        self.items.append(Problem(where, message))
        if len(self.items) >= self.limit:
            raise ArchiveRefused(self.items)

    def raise_if_any(self) -> None:
        if self.items:
            raise ArchiveRefused(self.items)


def _kind(name: str) -> str:
    if name == fmt.MANIFEST:
        return "manifest"
    if _RECORD.fullmatch(name):
        return "record"
    if name == fmt.DAYBOOK_EXTRAS:
        return "extras"
    if name.startswith(fmt.ATTACHMENTS_DIR):
        return "attachment"
    if _CONTENT.fullmatch(name):
        return "content"
    return "other"


def _bound(limits: ArchiveLimits, kind: str) -> int:
    return {
        "manifest": limits.max_manifest_bytes,
        "record": limits.max_record_bytes,
        "extras": limits.max_extras_bytes,
        "attachment": limits.max_attachment_bytes,
        "content": limits.max_content_bytes,
    }.get(kind, limits.max_other_bytes)


def _read_all(chunks: Iterator[bytes]) -> bytes:
    return b"".join(chunks)


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    return False


def _decode_json(data: bytes) -> Any:
    """Strict RFC 8259 JSON (no NaN, no trailing data); raises ValueError."""
    if data.startswith(b"\xef\xbb\xbf"):
        raise ValueError("starts with a byte order mark")
    try:
        return _json.decode(data)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise ValueError(str(exc)[:200]) from None


def _lines(chunks: Iterator[bytes], limit: int) -> Iterator[bytes]:
    """The JSON Lines of the extras member, each bounded (the member is never held whole)."""
    buffer = bytearray()
    for chunk in chunks:
        searched = len(buffer)
        buffer += chunk
        start = 0
        while (cut := buffer.find(b"\n", max(start, searched))) >= 0:
            line = bytes(buffer[start:cut])
            start = cut + 1
            if line.strip():
                yield line
        del buffer[:start]
        if len(buffer) > limit:
            raise ArchiveRefused.one(fmt.DAYBOOK_EXTRAS, f"a line is longer than {limit} bytes")
    if bytes(buffer).strip():
        yield bytes(buffer)


class _Reader:
    """Pass one: every entry into staging, checking what can be checked entry by entry."""

    def __init__(self, staging: Staging, limits: ArchiveLimits) -> None:
        self.staging = staging
        self.limits = limits
        self.problems = _Problems(limits.max_problems)
        self.manifest: Manifest | None = None
        self.seq = 0
        self.entries = 0

    def read(self, source: Iterable[bytes]) -> None:
        def bound_for(raw: bytes) -> int:
            name = decode_name(raw)
            return _bound(self.limits, _kind(name)) if name is not None else 0

        for raw in read_entries(source, self.limits, bound_for):
            self.entries += 1
            name = decode_name(raw.raw_name)
            if name is None:
                raise ArchiveRefused.one("archive", "an entry name is not valid UTF-8")
            self._entry(name, raw.chunks)
            if self.seq % 1000 == 0:
                self.staging.commit()
        self.staging.commit()

    def _entry(self, name: str, chunks: Iterator[bytes]) -> None:
        if name.endswith("/"):
            data = _read_all(chunks)
            if is_directory_entry(name, len(data)):
                problem = entry_name_problem(name[:-1])
                if problem:
                    raise ArchiveRefused.one(name[:200], problem)
                return
        problem = entry_name_problem(name)
        if problem:
            raise ArchiveRefused.one(name[:200], problem)
        kind = _kind(name)
        if kind in ("attachment", "content", "other"):
            # Spooled to disk as it streams: memory never holds an entry's bytes.
            file, size, digest = self.staging.spool(chunks)
            self._add(name, kind, size, digest, None, file)
            return
        if kind == "extras":
            self._add(name, kind, 0, "", None, None)
            for line in _lines(chunks, self.limits.max_extras_line_bytes):
                self._extra(line)
            return
        data = _read_all(chunks)
        digest = hashlib.sha256(data).hexdigest()
        self._add(name, kind, len(data), digest, None, None)
        if kind == "manifest":
            self._manifest(data)
        else:
            self._record(name, data)

    def _add(
        self, name: str, kind: str, size: int, digest: str, body: bytes | None, file: str | None
    ) -> None:
        if not self.staging.add_entry(name, kind, size, digest, body, file):
            raise ArchiveRefused.one(name[:200], "duplicate entry name")

    def _manifest(self, data: bytes) -> None:
        try:
            raw = _decode_json(data)
        except ValueError as exc:
            raise ArchiveRefused.one(fmt.MANIFEST, f"not valid JSON: {exc}") from None
        problems = manifest_problems(raw)
        if problems:
            raise ArchiveRefused([Problem(fmt.MANIFEST, p) for p in problems])
        manifest = parse_manifest(raw)
        major = manifest.format_version.split(".", 1)[0]
        if major != str(fmt.FORMAT_MAJOR):  # the schema allows 1.x only; kept for clarity
            raise ArchiveRefused.one(
                fmt.MANIFEST,
                f"format version {manifest.format_version} is not supported (this reader: 1.x)",
            )
        if manifest.scope_kind != fmt.SCOPE_USER:
            raise ArchiveRefused.one(
                fmt.MANIFEST, f"scope {manifest.scope_kind!r} is not supported (USER archives only)"
            )
        try:
            fmt.parse_time(manifest.export_time)
        except ValueError:
            raise ArchiveRefused.one(fmt.MANIFEST, "exportTime is not a valid date") from None
        self.manifest = manifest

    def _record(self, name: str, data: bytes) -> None:
        match = _RECORD.fullmatch(name)
        assert match is not None
        try:
            raw = _decode_json(data)
        except ValueError as exc:
            self.problems.add(name, f"not valid JSON: {exc}")
            return
        problems = record_problems(raw)
        if problems:
            for p in problems:
                self.problems.add(name, p)
            return
        if _has_nul(raw):
            self.problems.add(name, "a string contains a NUL character")
            return
        record, warnings = parse_record(raw)
        if record.uid != match.group(1):
            self.problems.add(name, f"uid {record.uid!r} does not match the file name")
            return
        problem = _record_problem(record)
        if problem:
            self.problems.add(name, problem)
            return
        self.seq += 1
        reason = self.staging.add_record(self.seq, name, record)
        if reason:
            self.problems.add(name, reason)
            return
        for message in warnings:
            self.staging.warn(record.uid, message)

    def _extra(self, line: bytes) -> None:
        try:
            raw = _decode_json(line)
        except ValueError as exc:
            self.problems.add(fmt.DAYBOOK_EXTRAS, f"a line is not valid JSON: {exc}")
            return
        problems = extra_problems(raw)
        if problems:
            for p in problems:
                self.problems.add(fmt.DAYBOOK_EXTRAS, p)
            return
        if _has_nul(raw):
            self.problems.add(fmt.DAYBOOK_EXTRAS, "a string contains a NUL character")
            return
        extra: DaybookExtra = parse_extra(raw)
        if not self.staging.add_extra(extra):
            self.problems.add(fmt.DAYBOOK_EXTRAS, f"memo {extra.uid} has two lines")


def _record_problem(record: MemoRecord) -> str | None:
    """The hard rules of a record the schema cannot express (Memos' validateMemo)."""
    for ts in (record.create_time, record.update_time):
        try:
            fmt.parse_time(ts)
        except ValueError:
            return f"{ts!r} is not a valid date"
    if entry_name_problem(record.content_path):
        return f"contentPath: {entry_name_problem(record.content_path)}"
    if record.parent == record.uid:
        return "parent must not be the memo itself"
    for item in record.attachments:
        try:
            fmt.parse_time(item.create_time)
        except ValueError:
            return f"attachment {item.uid}: createTime is not a valid date"
        if item.path:
            if entry_name_problem(item.path):
                return f"attachment {item.uid}: path: {entry_name_problem(item.path)}"
            if not item.path.startswith(fmt.ATTACHMENTS_DIR):
                return f"attachment {item.uid}: path must be under {fmt.ATTACHMENTS_DIR}"
        else:
            scheme = urlsplit(item.external_link).scheme.lower()
            if scheme not in ("http", "https"):
                return f"attachment {item.uid}: externalLink must be an http(s) URL"
    return None


def _cross_check(
    staging: Staging, manifest: Manifest | None, limits: ArchiveLimits, content_limit: int
) -> None:
    problems = _Problems(limits.max_problems)
    if manifest is None:
        raise ArchiveRefused.one(fmt.MANIFEST, "manifest.json is missing: not a Memos export")
    # Every record's content entry, decoded and within the limit.
    for uid, content_path in staging.query("SELECT uid, content_path FROM record ORDER BY seq"):
        entry = staging.entry(content_path)
        if entry is None or entry.kind in ("manifest", "record", "extras"):
            problems.add(uid, f"content entry {content_path!r} is missing")
            continue
        data = staging.entry_bytes(entry)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            problems.add(uid, "content is not valid UTF-8")
            continue
        if text.startswith("\ufeff"):
            problems.add(uid, "content starts with a byte order mark")
        elif "\x00" in text:
            problems.add(uid, "content contains a NUL character")
        elif len(data) > content_limit:
            problems.add(
                uid, f"content is {len(data)} bytes, over this instance's limit of {content_limit}"
            )
    # Neither a record nor its content file appears without the other.
    for (name,) in staging.query(
        "SELECT name FROM entry WHERE kind = 'content' AND name NOT IN "
        "(SELECT 'memos/' || uid || '.md' FROM record)"
    ):
        problems.add(name, "content file has no memo record")
    # Attachment bytes: present, of the recorded size and digest.
    for uid, record_uid, path, sha, size in staging.query(
        "SELECT uid, record_uid, path, sha256, size FROM attachment_item WHERE path != ''"
    ):
        entry = staging.entry(path)
        if entry is None or entry.kind != "attachment":
            problems.add(record_uid, f"attachment {uid}: entry {path!r} is missing")
        elif entry.size != size:
            problems.add(
                record_uid, f"attachment {uid}: entry holds {entry.size} bytes, record says {size}"
            )
        elif entry.sha256 != sha:
            problems.add(record_uid, f"attachment {uid}: SHA-256 does not match the record")
    memos = staging.count("record")
    attachments = staging.count("attachment_item", "path != ''")
    if manifest.count_memos is not None and manifest.count_memos != memos:
        problems.add(
            fmt.MANIFEST, f"counts.memos is {manifest.count_memos} but the archive holds {memos}"
        )
    if manifest.count_attachments is not None and manifest.count_attachments != attachments:
        problems.add(
            fmt.MANIFEST,
            f"counts.attachments is {manifest.count_attachments} "
            f"but the archive holds {attachments}",
        )
    for (uid,) in staging.query("SELECT uid FROM extra WHERE uid NOT IN (SELECT uid FROM record)"):
        staging.warn(uid, "Daybook extras for a memo that has no record: ignored")
    problems.raise_if_any()


def validate_archive(
    source: Iterable[bytes],
    staging: Staging,
    limits: ArchiveLimits,
    content_limit: int,
    tail: bytes | None = None,
) -> ValidatedArchive:
    """Read and check the whole archive into ``staging``; :class:`ArchiveRefused` otherwise.

    ``tail`` is the archive's last bytes (``unzip.TAIL_BYTES``): its end record
    must be there, and must count the entries that were read.
    """
    reader = _Reader(staging, limits)
    reader.read(source)
    if tail is not None:
        declared = central_directory_count(tail)
        if declared is None:
            raise ArchiveRefused.one("archive", "the archive is truncated (no end record)")
        if declared not in (-1, reader.entries):
            raise ArchiveRefused.one(
                "archive",
                f"the central directory lists {declared} entries but the archive holds "
                f"{reader.entries}",
            )
    reader.problems.raise_if_any()
    _cross_check(staging, reader.manifest, limits, content_limit)
    assert reader.manifest is not None
    staging.mark_parents()
    staging.commit()
    return ValidatedArchive(
        staging=staging,
        manifest=reader.manifest,
        memo_count=staging.count("record"),
        attachment_count=staging.count("attachment_item", "path != ''"),
    )
