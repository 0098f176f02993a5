"""Attachment bytes on local disk, under keys the server chooses.

Files live at ``<data_dir>/attachments/<key>`` where ``key`` is 32 random hex
digits. No part of a client's filename or any other input ever reaches a
path: the filename is metadata in the database only. Keys read back from the
database are re-validated, so even a corrupt row cannot name a path outside
the directory.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from pathlib import Path

import anyio

KEY_RE = re.compile(r"[0-9a-f]{32}\Z")  # always with fullmatch


def _path(data_dir: Path, key: str) -> Path:
    if not KEY_RE.fullmatch(key):
        raise ValueError("invalid attachment storage key")
    return data_dir / "attachments" / key


def _write(data_dir: Path, data: bytes) -> str:
    directory = data_dir / "attachments"
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = secrets.token_hex(16)
    fd = os.open(_path(data_dir, key), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    return key


async def write_bytes(data_dir: Path, data: bytes) -> str:
    """Store ``data`` under a fresh random key and return the key."""
    return await anyio.to_thread.run_sync(_write, data_dir, data)


async def read_bytes(data_dir: Path, key: str) -> bytes | None:
    """The stored bytes, or None when the file is missing."""
    try:
        return await anyio.Path(_path(data_dir, key)).read_bytes()
    except FileNotFoundError:
        return None


async def remove(data_dir: Path, key: str | None) -> None:
    """Delete the stored file if there is one (missing is fine)."""
    if key is None or not KEY_RE.fullmatch(key):
        return
    with contextlib.suppress(FileNotFoundError):
        await anyio.Path(_path(data_dir, key)).unlink()


__all__ = ["read_bytes", "remove", "write_bytes"]
