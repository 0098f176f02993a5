"""Memos Export Format 1.0: the container's constants, entry names and timestamps.

Everything here is pure and follows ``docs/design/memos-export-format.md`` of
``usememos/memos`` at commit ea4b2f1 (vendored schemas in ``schema/``).
Daybook's own extras live under ``daybook/``, which Memos ignores (readers
ignore entries they do not recognise).
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime

FORMAT = "memos-export"
LEGACY_FORMAT = "memos-archive"
FORMAT_VERSION = "1.0"
FORMAT_MAJOR = 1
MEDIA_TYPE = "application/vnd.usememos.export+zip"
LEGACY_MEDIA_TYPE = "application/vnd.usememos.archive+zip"

MANIFEST = "manifest.json"
MEMOS_DIR = "memos/"
ATTACHMENTS_DIR = "attachments/"
DAYBOOK_DIR = "daybook/"
# One JSON Lines member for every memo's Daybook extras (tree path, space,
# history): one entry instead of one per memo keeps the central directory,
# the only part of a ZIP that grows with the entry count, small.
DAYBOOK_EXTRAS = "daybook/memos.jsonl"

REFERENCE = "REFERENCE"
SCOPE_USER = "USER"
STATES = ("NORMAL", "ARCHIVED")
VISIBILITIES = ("PRIVATE", "PROTECTED", "PUBLIC", "SPACE")

_RESERVED_WINDOWS = frozenset(
    {"CON", "PRN", "AUX", "NUL"}
    | {f"COM{i}" for i in range(1, 10)}
    | {f"LPT{i}" for i in range(1, 10)}
)
_UNSAFE_CHAR = re.compile(r"[/\\:\x00-\x1f\x7f]")

__all__ = [
    "ATTACHMENTS_DIR",
    "DAYBOOK_DIR",
    "DAYBOOK_EXTRAS",
    "FORMAT",
    "FORMAT_MAJOR",
    "FORMAT_VERSION",
    "LEGACY_FORMAT",
    "LEGACY_MEDIA_TYPE",
    "MANIFEST",
    "MEDIA_TYPE",
    "MEMOS_DIR",
    "REFERENCE",
    "SCOPE_USER",
    "STATES",
    "VISIBILITIES",
    "archive_filename",
    "attachment_path",
    "content_path",
    "format_time",
    "parse_time",
    "record_path",
    "safe_filename",
]


def format_time(ts: int) -> str:
    """Epoch seconds as the archive's timestamp: RFC 3339, UTC, ``Z``, whole seconds."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def parse_time(value: str) -> int:
    """An archive timestamp (schema-valid: ``Z``, optional fraction) as epoch seconds.

    Fractions are accepted and truncated, as Memos' reader does. Raises
    ``ValueError`` for a date that the pattern lets through but the calendar
    does not (month 13).
    """
    text = value[:-1] if value.endswith("Z") else value
    whole, _, _fraction = text.partition(".")
    parsed = datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
    return int(parsed.timestamp())


def content_path(uid: str) -> str:
    return f"{MEMOS_DIR}{uid}.md"


def record_path(uid: str) -> str:
    return f"{MEMOS_DIR}{uid}.json"


def safe_filename(filename: str) -> str:
    """Memos' mapping of an attachment's filename onto its entry's last segment.

    ``/``, ``\\``, ``:``, NUL, C0 and DEL become ``_``; leading and trailing
    spaces and dots are trimmed; a reserved Windows device stem gets a ``_``
    prefix; an empty result is ``file``. Deterministic, so a re-export lands
    on the same entry name.
    """
    safe = _UNSAFE_CHAR.sub("_", filename).strip(" .")
    if not safe:
        return "file"
    stem = safe.split(".", 1)[0]
    if stem.upper() in _RESERVED_WINDOWS:
        return "_" + safe
    return safe


def attachment_path(uid: str, filename: str) -> str:
    return f"{ATTACHMENTS_DIR}{uid}/{safe_filename(filename)}"


def archive_filename(username: str, export_ts: int) -> str:
    """``memos-export-<username>-<YYYYMMDDTHHMMSSZ>.zip`` (RFC 3339 basic form)."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(export_ts))
    return f"memos-export-{username}-{stamp}.zip"
