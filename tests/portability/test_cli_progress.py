"""The import's progress: a bar while the archive is read and checked, then one per memo.

Measured at 100,000 memos (``bench/portability.py``), validation took a good
part of the import with the bar standing at 0%: the bytes read now move a
"validating" bar, which ends when the first memo is applied.
"""

from __future__ import annotations

import pathlib

import click

from app.portability.cli import _TwoBars
from app.portability.routes import SPOOL_CHUNK, _file_chunks


def test_reading_the_archive_reports_every_byte(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "a.zip"
    path.write_bytes(b"z" * (2 * SPOOL_CHUNK + 17))
    heard: list[int] = []
    data = b"".join(_file_chunks(path, heard.append))
    assert len(data) == sum(heard) == path.stat().st_size
    assert len(heard) == 3


def test_the_validation_bar_ends_when_the_first_memo_is_applied() -> None:
    second = click.progressbar(length=3, label="importing")
    with _TwoBars(100) as bars:
        bars.second = lambda: second
        bars.validating(60)
        assert bars.first.pos == 60 and bars.current is bars.first
        bars.memos(1)
        assert bars.first.pos == 100  # finished, though validation read only 60 bytes
        assert bars.current is second and second.pos == 1
        bars.memos(2)
    assert second.pos == 3 and second.finished
