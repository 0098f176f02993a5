"""The bounds an imported archive must stay within, all checked while streaming.

Decompression bombs are refused on the bytes actually produced, never on the
sizes an entry's header claims: every entry has an absolute bound for its
kind, the archive has a bound on its total uncompressed bytes and on its
entry count, and the running total of decompressed bytes may not exceed
``ratio`` times the compressed bytes consumed so far plus ``slack`` (memo
text deflates about ten to one and media hardly at all, so an archive that
expands further is hostile). The defaults follow Memos' reader.
"""

from __future__ import annotations

from dataclasses import dataclass

MiB = 1024 * 1024

__all__ = ["ArchiveLimits", "MiB"]


@dataclass(frozen=True, slots=True)
class ArchiveLimits:
    max_archive_bytes: int = 2048 * MiB  # the upload itself (compressed)
    max_entries: int = 1_000_000
    max_total_bytes: int = 8192 * MiB  # every entry, decompressed
    ratio: int = 64
    slack: int = 64 * MiB
    max_manifest_bytes: int = 1 * MiB
    max_record_bytes: int = 4 * MiB
    max_content_bytes: int = 64 * MiB  # the instance's content limit applies after
    max_attachment_bytes: int = 32 * MiB  # the instance's attachment limit
    max_extras_bytes: int = 1024 * MiB  # daybook/memos.jsonl, read line by line
    max_extras_line_bytes: int = 16 * MiB
    max_other_bytes: int = 64 * MiB  # entries this reader does not know
    max_problems: int = 50  # reported before validation stops

    def with_attachment_limit(self, limit: int) -> ArchiveLimits:
        from dataclasses import replace

        return replace(self, max_attachment_bytes=limit)
