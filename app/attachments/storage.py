"""Where attachment bytes live: the database, a directory, or an S3-compatible bucket.

As in Memos, the instance's setting (``Settings.storage``) chooses where new
uploads go, and every attachment row records its own ``storage_type``, so
older attachments stay readable after the setting changes:

- ``DATABASE``: the bytes in ``attachment.blob``; every process sharing the
  database reaches them, and ``daybook backup`` copies them with it.
- ``LOCAL``: a file ``<storage_dir>/<key>``, by default ``<data>/attachments``.
  Several processes share attachments by pointing ``storage_dir`` at one
  shared directory.
- ``S3``: the object ``<prefix><key>`` in a bucket (``app.attachments.s3``).

Keys are 32 random hex digits chosen by the server. No part of a client's
filename or any other input ever reaches a path or an object key, and keys
read back from the database are re-validated, so even a corrupt row cannot
name anything outside the store.
"""

from __future__ import annotations

import contextlib
import enum
import os
import re
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from app.errors import DaybookError
from app.settings import Settings

KEY_RE = re.compile(r"[0-9a-f]{32}\Z")  # always with fullmatch


class StorageType(enum.StrEnum):
    DATABASE = "DATABASE"
    LOCAL = "LOCAL"
    S3 = "S3"
    EXTERNAL = "EXTERNAL"  # a link only (``attachment.external_link``): no bytes here


class StorageUnavailable(DaybookError):
    """503: the attachment store cannot be reached; nothing was written."""

    status, grpc_code = 503, 14


@dataclass(frozen=True, slots=True)
class S3Config:
    bucket: str
    endpoint: str = ""  # empty: AWS itself
    region: str = ""
    access_key_id: str = ""
    secret_access_key: str = ""
    use_path_style: bool = False
    prefix: str = "attachments/"


@dataclass(frozen=True, slots=True)
class AttachmentStore:
    """The configured store: where new uploads go, and how to reach every kind."""

    kind: StorageType
    local_dir: Path
    s3: S3Config | None = None


@dataclass(frozen=True, slots=True)
class Stored:
    """What the attachment row records about its bytes."""

    storage_type: StorageType
    storage_key: str | None
    blob: bytes | None


def store_from_settings(settings: Settings) -> AttachmentStore:
    """The store ``settings`` describe; a clear ``ValueError`` when they are incomplete."""
    try:
        kind = StorageType(settings.storage.upper())
    except ValueError:
        raise ValueError(
            f"storage {settings.storage!r}: use local, database or s3 [DAYBOOK_STORAGE]"
        ) from None
    local = local_dir(settings)
    s3 = None
    if settings.s3_bucket:
        s3 = S3Config(
            bucket=settings.s3_bucket,
            endpoint=settings.s3_endpoint,
            region=settings.s3_region,
            access_key_id=settings.s3_access_key_id,
            secret_access_key=settings.s3_secret_access_key,
            use_path_style=settings.s3_use_path_style,
            prefix=settings.s3_prefix,
        )
    elif kind is StorageType.S3:
        raise ValueError("storage s3 needs a bucket [DAYBOOK_S3_BUCKET]")
    return AttachmentStore(kind=kind, local_dir=local, s3=s3)


def local_dir(settings: Settings) -> Path:
    """The LOCAL store's directory: ``storage_dir``, by default ``<data>/attachments``."""
    return Path(settings.storage_dir) if settings.storage_dir else settings.data_dir / "attachments"


def incoming_dir(settings: Settings) -> Path:
    """Where uploads are spooled while they arrive (``app.api.uploads``): in the data
    directory, beside the default store, so adopting one there is a link, not a
    copy (a ``storage_dir`` on another file system gets a streamed copy)."""
    return settings.data_dir / "incoming"


def valid_key(key: str) -> str:
    if not KEY_RE.fullmatch(key):
        raise ValueError("invalid attachment storage key")
    return key


def _path(directory: Path, key: str) -> Path:
    return directory / valid_key(key)


def _write(directory: Path, data: bytes) -> str:
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = secrets.token_hex(16)
    fd = os.open(_path(directory, key), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())  # durable before the row that names it commits
    return key


async def put(store: AttachmentStore, data: bytes) -> Stored:
    """Store ``data`` where new uploads go; the caller records the answer in the row."""
    if store.kind is StorageType.DATABASE:
        return Stored(StorageType.DATABASE, None, data)
    if store.kind is StorageType.S3:
        from app.attachments import s3

        return Stored(StorageType.S3, await s3.put(_s3(store), data), None)
    key = await anyio.to_thread.run_sync(_write, store.local_dir, data)
    return Stored(StorageType.LOCAL, key, None)


def _adopt(directory: Path, source: Path) -> str:
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = secrets.token_hex(16)
    target = _path(directory, key)
    try:
        try:
            os.link(source, target)  # same file system: no copy, never over another key
        except OSError:
            shutil.copyfile(source, target)  # streamed, chunk by chunk
            os.chmod(target, 0o600)
        with open(target, "rb") as fh:
            os.fsync(fh.fileno())  # durable before the row that names it commits
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            target.unlink()
        raise
    return key


async def put_file(store: AttachmentStore, source: Path) -> Stored:
    """Like ``put`` for an upload already spooled to ``source`` (left for the caller to
    discard): linked into a directory, streamed to S3, or read into the row."""
    if store.kind is StorageType.DATABASE:
        return Stored(StorageType.DATABASE, None, await anyio.Path(source).read_bytes())
    if store.kind is StorageType.S3:
        from app.attachments import s3

        return Stored(StorageType.S3, await s3.put_file(_s3(store), source), None)
    key = await anyio.to_thread.run_sync(_adopt, store.local_dir, source)
    return Stored(StorageType.LOCAL, key, None)


async def read(store: AttachmentStore, row: Any) -> bytes | None:
    """The bytes of attachment ``row`` wherever it records them, or None when missing."""
    try:
        kind = StorageType(row.storage_type)
    except ValueError:
        return None  # a corrupt row names no store: 404, never a guess
    if kind is StorageType.EXTERNAL:
        return None
    if kind is StorageType.DATABASE or row.storage_key is None:
        blob: bytes | None = row.blob
        return blob
    if kind is StorageType.S3:
        from app.attachments import s3

        return await s3.get(_s3(store), valid_key(row.storage_key))
    try:
        return await anyio.Path(_path(store.local_dir, row.storage_key)).read_bytes()
    except FileNotFoundError:
        return None


async def discard(store: AttachmentStore, storage_type: str, key: str | None) -> None:
    """Delete stored bytes if there are any (missing is fine; DATABASE bytes go with the row)."""
    if key is None or not KEY_RE.fullmatch(key):
        return
    if storage_type == StorageType.S3:
        from app.attachments import s3

        await s3.delete(_s3(store), key)
        return
    if storage_type == StorageType.LOCAL:
        with contextlib.suppress(FileNotFoundError):
            await anyio.Path(_path(store.local_dir, key)).unlink()


# The default local directory, for callers that predate the configurable store
# (``app.portability``): they read and write ``<data>/attachments`` only.


async def write_bytes(data_dir: Path, data: bytes) -> str:
    """Store ``data`` in ``<data>/attachments`` under a fresh key (LOCAL)."""
    return await anyio.to_thread.run_sync(_write, data_dir / "attachments", data)


async def read_bytes(data_dir: Path, key: str) -> bytes | None:
    try:
        return await anyio.Path(_path(data_dir / "attachments", key)).read_bytes()
    except (FileNotFoundError, ValueError):
        return None


async def remove(data_dir: Path, key: str | None) -> None:
    if key is not None and KEY_RE.fullmatch(key):
        with contextlib.suppress(FileNotFoundError):
            await anyio.Path(_path(data_dir / "attachments", key)).unlink()


def _s3(store: AttachmentStore) -> S3Config:
    if store.s3 is None:
        raise StorageUnavailable("attachment storage: S3 is not configured on this server")
    return store.s3


__all__ = [
    "AttachmentStore",
    "S3Config",
    "StorageType",
    "StorageUnavailable",
    "Stored",
    "discard",
    "incoming_dir",
    "local_dir",
    "put",
    "put_file",
    "read",
    "read_bytes",
    "remove",
    "store_from_settings",
    "write_bytes",
]
