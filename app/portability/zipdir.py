"""The ZIP central directory of an export, kept on disk instead of in memory.

A ZIP's central directory (one header per member: name, sizes, CRC, offset)
comes last, so a streaming writer must remember every member until the end.
``stream-zip`` keeps them in a ``collections.deque`` of three ``bytes``
objects per member: about 0.24 KB of Python objects each. An export has two
members per memo (record and content), so 100,000 memos held 48 MB until the
last byte was sent, the one part of the export's memory that grew with the
archive (measured: peak RSS 97 MB at 10,000 memos, 145 MB at 100,000).

:class:`SpooledDirectory` is what ``stream-zip`` uses instead: the same three
operations it needs (``append``, ``len``, iterate once at the end), the
entries written to an anonymous temporary file as they come (unlinked at
once, so nothing is left behind even if the process dies) and read back in
order, 64 KiB at a time. :func:`install` points ``stream_zip``'s module-level
``deque`` name (looked up each time an archive starts) at it; it refuses to
when that name is not the ``deque`` it expects, so a ``stream-zip`` upgrade
that changes this fails loudly at start-up rather than silently.
"""

from __future__ import annotations

import collections
import struct
import tempfile
from collections.abc import Iterable, Iterator
from typing import IO, Any

import stream_zip

__all__ = ["SpooledDirectory", "install"]

_LENGTHS = struct.Struct("<HHH")
_READ = 64 * 1024


class SpooledDirectory:
    """An append-only sequence of ``(header, name, extra)`` byte triples, on disk."""

    def __init__(self, items: Iterable[tuple[bytes, bytes, bytes]] = ()) -> None:
        self._file: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (lives with the archive)
        self._count = 0
        for item in items:
            self.append(item)

    def append(self, item: tuple[bytes, bytes, bytes]) -> None:
        header, name, extra = item
        self._file.write(_LENGTHS.pack(len(header), len(name), len(extra)))
        self._file.write(header)
        self._file.write(name)
        self._file.write(extra)
        self._count += 1

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[tuple[bytes, bytes, bytes]]:
        self._file.flush()
        self._file.seek(0)
        buffer, pos = b"", 0
        for _ in range(self._count):
            if len(buffer) - pos < _LENGTHS.size:
                buffer, pos = buffer[pos:] + self._file.read(_READ), 0
            a, b, c = _LENGTHS.unpack_from(buffer, pos)
            start = pos + _LENGTHS.size
            end = start + a + b + c
            if end > len(buffer):
                buffer = buffer[pos:] + self._file.read(max(_READ, end - pos))
                start, end, pos = start - pos, end - pos, 0
                if end > len(buffer):
                    raise EOFError("ZIP central directory spool is truncated")
            yield (
                buffer[start : start + a],
                buffer[start + a : start + a + b],
                buffer[start + a + b : end],
            )
            pos = end
        self._file.close()

    def __del__(self) -> None:
        self._file.close()


def install() -> None:
    """Make ``stream-zip`` keep its central directories in :class:`SpooledDirectory`."""
    current: Any = getattr(stream_zip, "deque", None)
    if current is SpooledDirectory:
        return
    if current is not collections.deque:
        raise RuntimeError(
            "stream_zip no longer builds its central directory with collections.deque: "
            "review app.portability.zipdir against this stream-zip version"
        )
    stream_zip.deque = SpooledDirectory  # type: ignore[assignment,attr-defined]  # duck-typed
