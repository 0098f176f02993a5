"""SQLite: an online copy with the backup API, and a restore that never meets a stale WAL.

The backup API copies every page in one step while holding a read
transaction, so the copy is one consistent snapshot even while other
processes write (WAL readers do not block writers). The copy is switched to
``journal_mode=DELETE`` and integrity-checked, so the backup is one
self-contained file.

A restore must not leave the old database's ``-wal`` next to the new file:
SQLite would replay the stale frames into it. A ``-wal`` that survives a
checkpoint means another process still has the database open; one with no
database beside it is an orphan. Either way the restore refuses, and it
replaces a database only when told ``--yes``.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

BUSY_MS = 10_000


class RestoreRefused(Exception):
    """The target is live, has a stale WAL, or would be overwritten unconfirmed."""


def side_files(db: Path) -> list[Path]:
    """The ``-wal`` and ``-shm`` files next to ``db`` that exist."""
    return [p for p in (Path(f"{db}-wal"), Path(f"{db}-shm")) if p.exists()]


def _check(conn: sqlite3.Connection, where: Path) -> None:
    result = conn.execute("PRAGMA integrity_check").fetchall()
    if result != [("ok",)]:
        raise RuntimeError(f"{where}: integrity check failed: {result[:5]}")
    if conn.execute("PRAGMA foreign_key_check").fetchall():
        raise RuntimeError(f"{where}: foreign key check failed")


def backup(source: Path, dest: Path) -> None:
    """Copy the live database ``source`` to ``dest`` (a new file), consistently."""
    if not source.is_file():
        raise FileNotFoundError(f"{source}: no database")
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    try:
        src.execute(f"PRAGMA busy_timeout={BUSY_MS}")
        dst = sqlite3.connect(dest)
        try:
            src.backup(dst)  # pages=-1: every page in one step, one snapshot
            dst.execute("PRAGMA journal_mode=DELETE")
            _check(dst, dest)
        finally:
            dst.close()
    finally:
        src.close()
    with open(dest, "rb") as fh:
        os.fsync(fh.fileno())


def checkpoint_or_refuse(target: Path) -> None:
    """Fold ``target``'s WAL into it; refuse when another process has it open."""
    if not target.exists():
        if side_files(target):
            raise RestoreRefused(
                f"{side_files(target)[0]} is a stale WAL with no database next to it:"
                " remove it (after checking nothing needs it) before restoring"
            )
        return
    if not side_files(target):
        return
    conn = sqlite3.connect(target)
    try:
        conn.execute("PRAGMA busy_timeout=0")
        with contextlib.suppress(sqlite3.OperationalError):
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()  # the last connection to close removes -wal and -shm
    if side_files(target):
        raise RestoreRefused(
            f"{target} is in use ({side_files(target)[0].name} stays next to it):"
            " stop every daybook process using it, then restore"
        )


def restore(copy: Path, target: Path, *, replace: bool) -> None:
    """Put the backup file ``copy`` in place of ``target``, atomically."""
    if side_files(copy):
        raise RestoreRefused(
            f"{side_files(copy)[0]} lies next to the backup: it was not made by"
            " `daybook backup` (or is still being written); refusing to restore it"
        )
    if target.exists() and not replace:
        raise RestoreRefused(f"{target} exists: pass --yes to replace it")
    checkpoint_or_refuse(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.with_name(f".{target.name}.restoring")
    staging.unlink(missing_ok=True)
    src = sqlite3.connect(f"file:{copy}?mode=ro", uri=True)
    try:
        dst = sqlite3.connect(staging)
        try:
            src.backup(dst)
            _check(dst, copy)
            dst.execute("PRAGMA journal_mode=WAL")
        finally:
            dst.close()
    finally:
        src.close()
    with open(staging, "rb") as fh:
        os.fsync(fh.fileno())
    for leftover in side_files(staging):
        leftover.unlink()
    checkpoint_or_refuse(target)  # nobody opened it meanwhile
    os.replace(staging, target)
    fd = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
