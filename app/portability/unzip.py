"""Streaming, bounded decompression of an untrusted ZIP archive.

``stream-unzip`` (uktrade, well kept) reads the archive front to back from
its local headers, never holding more than a chunk, and checks each entry's
CRC-32 and sizes against what it actually decompressed. On top of it this
module enforces :class:`~app.portability.limits.ArchiveLimits` on the bytes
actually produced, while they are produced: each entry's bound for its kind,
the archive's total, its entry count, and the expansion ratio against the
compressed bytes consumed so far. A header's claimed size is never trusted;
a bomb is stopped at the first chunk past a bound, having cost at most that
chunk. Encrypted entries are refused (no password is ever offered).

Iterating is sequential: each entry's chunks must be consumed (or the whole
iteration abandoned) before the next entry is read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import stream_unzip

from app.portability.errors import ArchiveRefused
from app.portability.limits import ArchiveLimits

CHUNK = 64 * 1024

EOCD = b"PK\x05\x06"
EOCD_SIZE = 22
TAIL_BYTES = EOCD_SIZE + 0xFFFF  # the record and the longest comment it may carry

__all__ = ["CHUNK", "TAIL_BYTES", "RawEntry", "central_directory_count", "read_entries"]


def central_directory_count(tail: bytes) -> int | None:
    """The entry count the end-of-central-directory record declares, from the archive's tail.

    None when there is no such record (a truncated or not-ZIP file); -1 when
    the count is in a ZIP64 record (0xFFFF here), which this check leaves to
    the streaming reader. Used to refuse an archive whose central directory,
    what a desktop tool would list, disagrees with the entries actually read.
    """
    at = tail.rfind(EOCD)
    while at >= 0:
        record = tail[at : at + EOCD_SIZE]
        if len(record) == EOCD_SIZE:
            comment = int.from_bytes(record[20:22], "little")
            if at + EOCD_SIZE + comment == len(tail):
                total = int.from_bytes(record[10:12], "little")
                return -1 if total == 0xFFFF else total
        at = tail.rfind(EOCD, 0, at)
    return None


@dataclass
class _Totals:
    consumed: int = 0  # compressed bytes read from the source
    produced: int = 0  # decompressed bytes handed out
    entries: int = 0


@dataclass(frozen=True, slots=True)
class RawEntry:
    raw_name: bytes
    chunks: Iterator[bytes]


def _counted(source: Iterable[bytes], totals: _Totals, limits: ArchiveLimits) -> Iterator[bytes]:
    for chunk in source:
        totals.consumed += len(chunk)
        if totals.consumed > limits.max_archive_bytes:
            raise ArchiveRefused.one(
                "archive", f"the archive is larger than {limits.max_archive_bytes} bytes"
            )
        yield chunk


def _bounded(
    name: str, chunks: Iterator[bytes], bound: int, totals: _Totals, limits: ArchiveLimits
) -> Iterator[bytes]:
    produced = 0
    for chunk in chunks:
        produced += len(chunk)
        totals.produced += len(chunk)
        if produced > bound:
            raise ArchiveRefused.one(name, f"the entry expands past its bound of {bound} bytes")
        if totals.produced > limits.max_total_bytes:
            raise ArchiveRefused.one(
                "archive", f"the archive expands past {limits.max_total_bytes} bytes in total"
            )
        if totals.produced > limits.ratio * totals.consumed + limits.slack:
            raise ArchiveRefused.one(
                name,
                f"decompression bomb: {totals.produced} bytes out of {totals.consumed} "
                f"compressed (more than {limits.ratio}x)",
            )
        yield chunk


_UNZIP_ERRORS: tuple[tuple[type[Exception], str], ...] = (
    (stream_unzip.TruncatedDataError, "the archive is truncated"),
    (stream_unzip.MissingPasswordError, "the archive has encrypted entries"),
    (stream_unzip.EncryptionMechanismNotAllowed, "the archive has encrypted entries"),
    (stream_unzip.UnsupportedCompressionTypeError, "an entry uses an unsupported compression"),
    (stream_unzip.UnsupportedFlagsError, "an entry uses unsupported ZIP features"),
    (
        stream_unzip.NotStreamUnzippable,
        "an entry is stored uncompressed with no size in its header",
    ),
    (stream_unzip.IntegrityError, "an entry fails its CRC or size check (corrupt or tampered)"),
    (stream_unzip.UncompressError, "an entry's compressed data is corrupt"),
    (stream_unzip.UnexpectedSignatureError, "not a ZIP archive, or a corrupt one"),
    (stream_unzip.UnzipError, "the archive cannot be read"),
)


def _refusal(exc: Exception) -> ArchiveRefused:
    for kind, message in _UNZIP_ERRORS:
        if isinstance(exc, kind):
            return ArchiveRefused.one("archive", message)
    return ArchiveRefused.one("archive", "the archive cannot be read")


def read_entries(
    source: Iterable[bytes], limits: ArchiveLimits, bound_for: Callable[[bytes], int]
) -> Iterator[RawEntry]:
    """Each entry of the archive in order, its chunks bounded by ``bound_for(raw_name)``.

    Every failure of the container (corrupt, truncated, encrypted, a bound
    exceeded) is an :class:`ArchiveRefused`, raised from whichever step hit it.
    """
    totals = _Totals()
    entries = stream_unzip.stream_unzip(
        _counted(source, totals, limits),
        chunk_size=CHUNK,
        allowed_encryption_mechanisms=(stream_unzip.NO_ENCRYPTION,),
    )
    try:
        for raw_name, _claimed_size, chunks in entries:
            totals.entries += 1
            if totals.entries > limits.max_entries:
                raise ArchiveRefused.one(
                    "archive", f"the archive has more than {limits.max_entries} entries"
                )
            bound = bound_for(raw_name)
            yield RawEntry(
                raw_name, _guarded(_bounded_name(raw_name), chunks, bound, totals, limits)
            )
    except ArchiveRefused:
        raise
    except stream_unzip.UnzipError as exc:
        raise _refusal(exc) from None
    except (ValueError, EOFError) as exc:  # malformed structures below the library's checks
        raise ArchiveRefused.one("archive", "not a ZIP archive, or a corrupt one") from exc


def _bounded_name(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")[:200]


def _guarded(
    name: str, chunks: Iterator[bytes], bound: int, totals: _Totals, limits: ArchiveLimits
) -> Iterator[bytes]:
    """The entry's bounded chunks, with the library's errors turned into refusals."""
    try:
        yield from _bounded(name, chunks, bound, totals, limits)
    except ArchiveRefused:
        raise
    except stream_unzip.UnzipError as exc:
        raise _refusal(exc) from None
    except (ValueError, EOFError) as exc:
        raise ArchiveRefused.one("archive", "not a ZIP archive, or a corrupt one") from exc
