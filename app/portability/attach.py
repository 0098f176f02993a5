"""An imported memo's attachments: keep the uid, bind the same bytes, or store a copy.

An entry keeps its uid unless that uid is taken; an existing attachment that
is the importer's own, free (or already this memo's) and holds the same
bytes (size and SHA-256; an external one, the same link) is bound instead of
copied; any other collision gets a derived uid (stable, as for memos). The
bytes go through the attachment storage under a server-chosen key; the
filename is sanitised and the media type re-checked as for an upload. On
``REPLACE`` the memo's attachments become exactly the archive's (others are
unbound, never deleted).
"""

from __future__ import annotations

import hashlib
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from app.attachments import storage
from app.attachments.metadata import clean_filename, mime_type
from app.db.schema import attachment
from app.errors import InvalidArgument
from app.portability import format as fmt
from app.portability.plan import derived_uid
from app.portability.records import AttachmentItem, MemoRecord
from app.portability.walk import Walk, in_thread

__all__ = ["apply_attachments"]


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


async def _existing_bytes(walk: Walk, row: Any) -> bytes | None:
    if row.storage_key is not None:
        return await storage.read_bytes(walk.ctx.data_dir, row.storage_key)
    return bytes(row.blob) if row.blob is not None else None


async def _reusable(walk: Walk, row: Any, item: AttachmentItem, memo_id: int | None) -> bool:
    """An existing attachment the importer may simply bind: its own, free, the same bytes."""
    if row.creator_id != walk.ctx.write.caller.user_id:
        return False
    if row.memo_id is not None and row.memo_id != memo_id:
        return False
    if item.path:
        if row.size != item.size:
            return False
        data = await _existing_bytes(walk, row)
        return data is not None and _sha256(data) == item.sha256
    return bool(row.external_link) and row.external_link == item.external_link


async def apply_attachments(
    conn: AsyncConnection,
    walk: Walk,
    record: MemoRecord,
    content: str,
    memo_id: int | None,
    *,
    replacing: bool,
) -> None:
    caller = walk.ctx.write.caller
    kept: list[int] = []
    for item in record.attachments:
        chosen: tuple[str, Any] | None = None
        for i, candidate in enumerate(
            [item.uid] + [derived_uid(item.uid, caller.user_id, n) for n in range(4)]
        ):
            row = (
                await conn.execute(sa.select(attachment).where(attachment.c.uid == candidate))
            ).first()
            if row is None:
                chosen = (candidate, None)
            elif await _reusable(walk, row, item, memo_id):
                chosen = (candidate, row)
            else:
                continue
            if i > 0 and f"attachments/{item.uid}" in content:
                walk.warn(
                    record.uid,
                    f"attachment {item.uid} is stored as {candidate} (its id is taken): "
                    "links to it in the content still name the old id",
                )
            break
        if chosen is None:
            walk.problem(record.uid, f"attachment {item.uid}: every candidate id is taken")
            continue
        uid, existing = chosen
        if existing is not None:
            walk.tally.attachments_reused += 1
            kept.append(int(existing.id))
            if not walk.ctx.dry_run and existing.memo_id != memo_id:
                await conn.execute(
                    attachment.update()
                    .where(attachment.c.id == existing.id)
                    .values(memo_id=memo_id)
                )
            continue
        walk.tally.attachments_stored += 1
        if walk.ctx.dry_run:
            continue
        kept.append(await _store(conn, walk, item, uid, memo_id))
    if replacing and memo_id is not None and not walk.ctx.dry_run:
        await conn.execute(
            attachment.update()
            .where(
                attachment.c.memo_id == memo_id,
                attachment.c.creator_id == caller.user_id,
                attachment.c.id.not_in(kept) if kept else sa.true(),
            )
            .values(memo_id=None)
        )


async def _store(
    conn: AsyncConnection, walk: Walk, item: AttachmentItem, uid: str, memo_id: int | None
) -> int:
    filename = clean_filename(item.filename)
    try:
        kind = mime_type(item.type, filename)
    except InvalidArgument:
        kind = mime_type("", filename)
    key: str | None = None
    size = item.size
    if item.path:
        entry = walk.staging.entry(item.path)
        assert entry is not None  # validation checked it
        data: bytes = await in_thread(walk.staging.entry_bytes, entry)
        key = await storage.write_bytes(walk.ctx.data_dir, data)
        walk.written_keys.append(key)
        size = len(data)
    new_id = (
        await conn.execute(
            attachment.insert()
            .values(
                uid=uid,
                creator_id=walk.ctx.write.caller.user_id,
                memo_id=memo_id,
                filename=filename,
                mime_type=kind,
                size=size,
                storage_key=key,
                external_link=item.external_link or None,
                created_ts=fmt.parse_time(item.create_time),
            )
            .returning(attachment.c.id)
        )
    ).scalar_one()
    return int(new_id)
