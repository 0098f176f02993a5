"""The scratch store a validated archive lives in while it is planned and applied.

An archive is read once, front to back; its records, contents and
attachment bytes go to disk here (a private SQLite file and a directory of
spooled attachment files, both under one temporary directory), so memory
stays flat however large the archive is, and the import can then visit the
records in the order it needs (parents before comments) and follow each
record's ``contentPath`` wherever it points. ``UNIQUE`` constraints do the
bookkeeping that would otherwise be in-memory sets: a duplicate entry name
or an attachment listed twice is an ``IntegrityError`` here.

The store is synchronous (``sqlite3``): validation runs in a worker thread,
and the async import reads it a page at a time through
:func:`anyio.to_thread.run_sync`. It is deleted when closed.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from app.portability.records import DaybookExtra, MemoRecord

_DDL = """
CREATE TABLE entry (
  name TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  size INTEGER NOT NULL,
  sha256 TEXT NOT NULL,
  body BLOB,
  file TEXT
);
CREATE TABLE record (
  seq INTEGER PRIMARY KEY,
  uid TEXT NOT NULL UNIQUE,
  entry TEXT NOT NULL,
  body BLOB NOT NULL,
  content_path TEXT NOT NULL,
  parent TEXT NOT NULL,
  has_parent_in_archive INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE attachment_item (
  uid TEXT PRIMARY KEY,
  record_uid TEXT NOT NULL,
  path TEXT NOT NULL,
  sha256 TEXT NOT NULL,
  size INTEGER NOT NULL
);
CREATE TABLE extra (uid TEXT PRIMARY KEY, body BLOB NOT NULL);
CREATE TABLE warning (seq INTEGER PRIMARY KEY, uid TEXT NOT NULL, message TEXT NOT NULL);
CREATE TABLE outcome (
  uid TEXT PRIMARY KEY,
  action TEXT NOT NULL,
  target_uid TEXT NOT NULL,
  memo_id INTEGER,
  visibility TEXT NOT NULL,
  space_id INTEGER,
  tree TEXT,
  is_comment INTEGER NOT NULL
);
"""

__all__ = ["Outcome", "StagedEntry", "Staging"]

_encoder = msgspec.msgpack.Encoder()


@dataclass(frozen=True, slots=True)
class StagedEntry:
    name: str
    kind: str
    size: int
    sha256: str
    body: bytes | None
    file: str | None


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the import did (or, in a dry run, would do) with one record, and where it lives."""

    uid: str  # the archive uid
    action: str
    target_uid: str
    memo_id: int | None  # None in a dry run, or when nothing was written
    visibility: str
    space_id: int | None
    tree: str | None
    is_comment: bool


DELETE_BATCH = 1024  # directory entries listed at a time when a staging store is removed


def empty_flat_dir(path: Path, batch: int = DELETE_BATCH) -> None:
    """Delete the files directly in ``path``, ``batch`` directory entries at a time.

    ``shutil.rmtree`` lists a directory whole before deleting it (one
    ``DirEntry`` per file), and the staging store holds a file per archive
    entry: removing a 100,000-memo import's store took 14 MB more memory for
    its 9 seconds, the one allocation of an import that grew with the
    archive (decision 0040). Subdirectories and files that cannot be deleted
    are left for ``rmtree``.
    """
    while True:
        try:
            with os.scandir(path) as entries:
                files = [e.path for e in itertools.islice(entries, batch) if e.is_file()]
        except FileNotFoundError:
            return
        deleted = 0
        for name in files:
            with contextlib.suppress(OSError):
                os.unlink(name)
                deleted += 1
        if deleted == 0:
            return


class Staging:
    """One archive's scratch store. Use as a context manager; closing deletes it."""

    def __init__(self, parent: Path | None = None) -> None:
        if parent is not None:
            parent.mkdir(parents=True, exist_ok=True)
        self.root = Path(tempfile.mkdtemp(prefix="daybook-import-", dir=parent))
        self.files = self.root / "files"
        self.files.mkdir(mode=0o700)
        self._db = sqlite3.connect(self.root / "staging.db", check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=OFF")
        self._db.execute("PRAGMA synchronous=OFF")
        self._db.execute("PRAGMA cache_size=-4096")  # 4 MiB page cache: memory stays flat
        self._db.executescript(_DDL)
        self._file_seq = 0

    def __enter__(self) -> Staging:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self._db.close()
        empty_flat_dir(self.files)
        shutil.rmtree(self.root, ignore_errors=True)

    def commit(self) -> None:
        self._db.commit()

    # --- writing (validation) ---------------------------------------------------

    def add_entry(
        self, name: str, kind: str, size: int, sha256: str, body: bytes | None, file: str | None
    ) -> bool:
        """Record an entry; False when the name is already taken (a duplicate entry)."""
        try:
            self._db.execute(
                "INSERT INTO entry (name, kind, size, sha256, body, file) VALUES (?,?,?,?,?,?)",
                (name, kind, size, sha256, body, file),
            )
        except sqlite3.IntegrityError:
            return False
        return True

    def spool(self, chunks: Iterator[bytes]) -> tuple[str, int, str]:
        """Write ``chunks`` to a new private file; its name, size and SHA-256."""
        self._file_seq += 1
        name = f"{self._file_seq:08d}"
        digest = hashlib.sha256()
        size = 0
        with (self.files / name).open("xb") as fh:
            for chunk in chunks:
                digest.update(chunk)
                size += len(chunk)
                fh.write(chunk)
        return name, size, digest.hexdigest()

    def add_record(self, seq: int, entry: str, record: MemoRecord) -> str | None:
        """Store a parsed record; the reason when it collides with another record or item."""
        try:
            self._db.execute(
                "INSERT INTO record (seq, uid, entry, body, content_path, parent)"
                " VALUES (?,?,?,?,?,?)",
                (
                    seq,
                    record.uid,
                    entry,
                    _encoder.encode(record),
                    record.content_path,
                    record.parent,
                ),
            )
        except sqlite3.IntegrityError:
            return f"memo {record.uid} appears in more than one record"
        for item in record.attachments:
            try:
                self._db.execute(
                    "INSERT INTO attachment_item (uid, record_uid, path, sha256, size)"
                    " VALUES (?,?,?,?,?)",
                    (item.uid, record.uid, item.path, item.sha256, item.size),
                )
            except sqlite3.IntegrityError:
                return f"attachment {item.uid} is listed by more than one memo"
        return None

    def add_extra(self, extra: DaybookExtra) -> bool:
        try:
            self._db.execute(
                "INSERT INTO extra (uid, body) VALUES (?, ?)", (extra.uid, _encoder.encode(extra))
            )
        except sqlite3.IntegrityError:
            return False
        return True

    def warn(self, uid: str, message: str) -> None:
        self._db.execute("INSERT INTO warning (uid, message) VALUES (?, ?)", (uid, message))

    def mark_parents(self) -> None:
        """Flag the records whose parent is itself a record of this archive."""
        self._db.execute(
            "UPDATE record SET has_parent_in_archive = 1 WHERE parent != ''"
            " AND parent IN (SELECT uid FROM record)"
        )

    def record_outcome(self, o: Outcome) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO outcome (uid, action, target_uid, memo_id, visibility,"
            " space_id, tree, is_comment) VALUES (?,?,?,?,?,?,?,?)",
            (
                o.uid,
                o.action,
                o.target_uid,
                o.memo_id,
                o.visibility,
                o.space_id,
                o.tree,
                int(o.is_comment),
            ),
        )

    # --- reading ------------------------------------------------------------------

    def entry(self, name: str) -> StagedEntry | None:
        row = self._db.execute(
            "SELECT name, kind, size, sha256, body, file FROM entry WHERE name = ?", (name,)
        ).fetchone()
        return None if row is None else StagedEntry(*row)

    def entry_bytes(self, entry: StagedEntry) -> bytes:
        if entry.body is not None:
            return bytes(entry.body)
        if entry.file is not None:
            return (self.files / entry.file).read_bytes()
        return b""

    def file_path(self, entry: StagedEntry) -> Path | None:
        return None if entry.file is None else self.files / entry.file

    def count(self, table: str, where: str = "1=1") -> int:
        # ``table`` and ``where`` are constants of this package, never input.
        row = self._db.execute(f"SELECT count(*) FROM {table} WHERE {where}").fetchone()  # noqa: S608
        return int(row[0])

    def records_page(
        self, after: int, limit: int, *, comments: bool
    ) -> list[tuple[int, MemoRecord]]:
        """Records in archive order after ``seq``: top-level ones, or those with a parent."""
        flag = "parent != ''" if comments else "parent = ''"
        rows = self._db.execute(
            f"SELECT seq, body FROM record WHERE seq > ? AND {flag} ORDER BY seq LIMIT ?",  # noqa: S608
            (after, limit),
        ).fetchall()
        return [(int(seq), msgspec.msgpack.decode(body, type=MemoRecord)) for seq, body in rows]

    def all_records_page(self, after: int, limit: int) -> list[tuple[int, MemoRecord]]:
        rows = self._db.execute(
            "SELECT seq, body FROM record WHERE seq > ? ORDER BY seq LIMIT ?", (after, limit)
        ).fetchall()
        return [(int(seq), msgspec.msgpack.decode(body, type=MemoRecord)) for seq, body in rows]

    def extra_of(self, uid: str) -> DaybookExtra | None:
        row = self._db.execute("SELECT body FROM extra WHERE uid = ?", (uid,)).fetchone()
        return None if row is None else msgspec.msgpack.decode(row[0], type=DaybookExtra)

    def record_uids(self, uids: list[str]) -> set[str]:
        marks = ",".join("?" * len(uids))
        rows = self._db.execute(
            f"SELECT uid FROM record WHERE uid IN ({marks})",  # noqa: S608
            uids,
        ).fetchall()
        return {str(r[0]) for r in rows}

    def outcome(self, uid: str) -> Outcome | None:
        row = self._db.execute(
            "SELECT uid, action, target_uid, memo_id, visibility, space_id, tree, is_comment"
            " FROM outcome WHERE uid = ?",
            (uid,),
        ).fetchone()
        if row is None:
            return None
        return Outcome(
            str(row[0]),
            str(row[1]),
            str(row[2]),
            row[3],
            str(row[4]),
            row[5],
            row[6],
            bool(row[7]),
        )

    def record_parent(self, uid: str) -> str | None:
        """The parent uid of the archive's record ``uid`` ("" for none); None if no such record."""
        row = self._db.execute("SELECT parent FROM record WHERE uid = ?", (uid,)).fetchone()
        return None if row is None else str(row[0])

    def warnings(self, limit: int) -> list[tuple[str, str]]:
        rows = self._db.execute(
            "SELECT uid, message FROM warning ORDER BY seq LIMIT ?", (limit,)
        ).fetchall()
        return [(str(u), str(m)) for u, m in rows]

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
        """A read of this package's own statements (cross-checks in validation), row by
        row from its own cursor: never the whole result in memory (decision 0040)."""
        cursor = self._db.execute(sql, params)
        try:
            while rows := cursor.fetchmany(500):
                yield from rows
        finally:
            cursor.close()
