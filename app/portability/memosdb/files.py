"""Carrying attachments: database blobs, local files (inside the Memos data directory), links."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from app.api.structs import UID_RE
from app.attachments import storage
from app.attachments.metadata import clean_filename, mime_type
from app.db.schema import attachment
from app.errors import InvalidArgument
from app.portability.memosdb.rows import MemosAttachment
from app.portability.memosdb.source import MemosSource
from app.portability.memosdb.state import State

__all__ = ["carry_attachments"]


def _local_file(st: State, a: MemosAttachment) -> tuple[Path | None, str]:
    root = st.opts.memos_data_dir
    if root is None:
        return None, "no Memos data directory given (--attachments-dir)"
    ref = Path(a.reference)
    path = ref if ref.is_absolute() else root / ref
    try:
        real, base = Path(os.path.realpath(path)), Path(os.path.realpath(root))
    except OSError:
        return None, "its path cannot be resolved"
    if base != real and base not in real.parents:
        return None, f"its file {a.reference!r} is outside the Memos data directory"
    if not real.is_file():
        return None, f"its file {a.reference!r} is missing"
    return real, ""


def _bytes_of(st: State, a: MemosAttachment) -> tuple[bytes | None, str | None, str]:
    """(bytes, external link, why not): exactly one of the first two, or a reason."""
    kind = a.storage_type.upper()
    if kind in ("", "DATABASE", "STORAGE_TYPE_DATABASE"):
        if a.blob is None:
            return None, None, "its bytes are missing from the database"
        return a.blob, None, ""
    if kind in ("LOCAL", "STORAGE_TYPE_LOCAL"):
        path, why = _local_file(st, a)
        if path is None:
            return None, None, why
        if path.stat().st_size > st.opts.max_attachment_bytes:
            return None, None, f"larger than {st.opts.max_attachment_bytes} bytes"
        return path.read_bytes(), None, ""
    if kind == "EXTERNAL":
        if urlsplit(a.reference).scheme.lower() not in ("http", "https"):
            return None, None, "its external link is not an http(s) URL"
        return None, a.reference, ""
    if kind in ("S3", "STORAGE_TYPE_S3"):
        return None, None, "stored in S3: download it from the bucket and attach it again"
    return None, None, f"unknown storage type {a.storage_type!r}"


async def carry_attachments(conn: AsyncConnection, source: MemosSource, st: State) -> None:
    async for page in source.attachments():
        for a in page:
            user = st.users.get(a.creator_id)
            if user is None:
                st.report.problem("attachment", f"{a.uid}: its creator was not carried")
                continue
            if not UID_RE.fullmatch(a.uid):
                st.report.problem("attachment", f"{a.uid!r}: not a valid id")
                continue
            found = (
                await conn.execute(sa.select(attachment.c.id).where(attachment.c.uid == a.uid))
            ).first()
            if found is not None:
                st.report.existing["attachment"] += 1
                continue
            data, link, why = _bytes_of(st, a)
            if data is None and link is None:
                st.report.problem("attachment", f"{a.uid} ({a.filename!r}): {why}")
                continue
            memo_id = st.memos.get(a.memo_id) if a.memo_id is not None else None
            if a.memo_id is not None and memo_id is None:
                st.report.note(f"attachment: {a.uid}: its memo was not carried: kept unbound")
            key: str | None = None
            if data is not None and not st.opts.dry_run:
                key = await storage.write_bytes(st.opts.data_dir, data)
                st.written_keys.append(key)
            filename = clean_filename(a.filename)
            try:
                kind = mime_type(a.type, filename)
            except InvalidArgument:
                kind = mime_type("", filename)
            await conn.execute(
                attachment.insert().values(
                    uid=a.uid,
                    creator_id=user.id,
                    memo_id=memo_id,
                    filename=filename,
                    mime_type=kind,
                    size=len(data) if data is not None else a.size,
                    storage_key=key,
                    external_link=link,
                    created_ts=a.created_ts,
                )
            )
            st.report.carried["attachment"] += 1
