"""Attachment rows: create, read, list the caller's own, delete, bind to a memo.

Read: :func:`app.access.related.attachment_predicate` (bound → the memo's
audience; unbound → its creator), for point reads and lists alike.
Write: only the creator deletes an attachment or binds it, and binding also
needs the right to write the memo, so nobody can attach someone else's file
to their memo, or their file to someone else's memo. A denied write changes
nothing: every check runs before the first statement that writes.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from app.access.admission import readable
from app.access.audience import AccessMode
from app.access.caller import Caller
from app.access.related import attachment_predicate
from app.access.writes import may_stage_attachment
from app.api.paging import decode_int_key, fingerprint, trim_page
from app.api.structs import resource_id, rfc3339, valid_uid
from app.attachments import storage
from app.attachments.metadata import clean_filename, mime_type
from app.db.joins import by_key
from app.db.schema import attachment, memo
from app.errors import AlreadyExists, DaybookError, InvalidArgument, NotFound, PermissionDenied
from app.memos.lookup import readable_memo, require_writer
from app.memos.schemas import AttachmentRef

_BOUND = by_key(memo, "bound_memo")  # module level: the read rule is memoised per table


class TooLarge(DaybookError):
    """413: the upload exceeds the instance's attachment size limit."""

    status, grpc_code = 413, 3


@dataclass(frozen=True, slots=True)
class NewAttachment:
    filename: str
    type: str
    content: bytes
    external_link: str = ""  # a link only (Memos' externalLink): no bytes are stored
    # A streamed upload: its bytes in this file (app.api.uploads), not in ``content``.
    source: Path | None = None
    source_size: int = 0

    @property
    def size(self) -> int:
        return self.source_size if self.source is not None else len(self.content)


MAX_LINK = 2048


def valid_external_link(link: str, field: str = "externalLink") -> str:
    """An absolute http(s) URL, as Memos' EXTERNAL storage keeps; never a local scheme."""
    parts = urlsplit(link)
    if (
        len(link) > MAX_LINK
        or parts.scheme.lower() not in ("http", "https")
        or not parts.netloc
        or any(ord(c) < 0x21 for c in link)
    ):
        raise InvalidArgument(
            f"{field}: must be an absolute http(s) URL of at most {MAX_LINK} characters"
        )
    return link


def is_repeat(
    row: Any, creator_id: int, sha256: str | None, new: NewAttachment, memo_id: int | None
) -> bool:
    """Whether an upload naming an existing id is a retry of the upload that made ``row``.

    A client that chose the id (``attachmentId``) sends the same upload again
    after a lost answer (the web client's outbox, decision 0039): the same
    creator with the same bytes (or the same link). Anything else is a
    conflict, whoever asks: another user learns only that the id is taken,
    never the attachment. A row without a hash (older than migration 0018)
    never matches, and a repeat naming a memo needs the row bound to it; one
    naming none matches wherever the first try's memo has put it since.
    """
    if row.creator_id != creator_id or (memo_id is not None and row.memo_id != memo_id):
        return False
    if new.external_link:
        return bool(row.external_link) and row.external_link == new.external_link
    return sha256 is not None and row.sha256 == sha256 and row.size == new.size


def _hash_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


async def content_sha256(new: NewAttachment) -> str | None:
    """Hex SHA-256 of the upload's bytes; None for a link (it has none)."""
    if new.external_link:
        return None
    if new.source is not None:
        return await anyio.to_thread.run_sync(_hash_file, new.source)
    return hashlib.sha256(new.content).hexdigest()


def attachment_uid(name: str) -> str:
    return valid_uid(resource_id(name, "attachments", field="attachment"), field="attachment")


async def present(
    conn: AsyncConnection, rows: Sequence[Any], caller: Caller | None, mode: AccessMode
) -> list[AttachmentRef]:
    """Rows to resources; ``memo`` is named only when the caller can read that memo."""
    memo_ids = {r.memo_id for r in rows if r.memo_id is not None}
    names: dict[int, str] = {}
    if memo_ids:
        names = dict(
            (
                await conn.execute(
                    sa.select(_BOUND.c.id, _BOUND.c.uid).where(
                        _BOUND.c.id.in_(memo_ids), readable(caller, mode, _BOUND)
                    )
                )
            ).all()
        )
    out = []
    for r in rows:
        ref = AttachmentRef(
            name=f"attachments/{r.uid}",
            filename=r.filename,
            type=r.mime_type,
            size=str(r.size),
            create_time=rfc3339(r.created_ts),
            external_link=r.external_link or "",
        )
        if r.memo_id in names:
            ref.memo = f"memos/{names[r.memo_id]}"
        out.append(ref)
    return out


async def load_visible(
    conn: AsyncConnection, uid: str, caller: Caller | None, mode: AccessMode
) -> Any:
    """The attachment row (with its memo's visibility) if readable, else 404."""
    holder = memo.alias("holder")
    row = (
        await conn.execute(
            sa.select(attachment, holder.c.visibility.label("memo_visibility"))
            .outerjoin(holder, holder.c.id == attachment.c.memo_id)
            .where(attachment.c.uid == uid, attachment_predicate(caller, mode))
        )
    ).first()
    if row is None:
        raise NotFound(f"attachment {uid!r} not found")
    return row


async def _writable_memo(conn: AsyncConnection, caller: Caller, mode: AccessMode, name: str) -> Any:
    row = await readable_memo(conn, name, caller, mode)
    await require_writer(conn, caller, row, "change its attachments")
    return row


async def create_attachment(
    conn: AsyncConnection,
    caller: Caller,
    mode: AccessMode,
    new: NewAttachment,
    memo_name: str | None,
    uid: str | None,
    limit: int,
    store: storage.AttachmentStore,
    now: int,
) -> Any:
    if new.size > limit:
        raise TooLarge(f"content: {new.size} bytes exceeds the limit of {limit} bytes")
    filename = clean_filename(new.filename)
    kind = mime_type(new.type, filename)
    uid = valid_uid(uid, field="attachmentId") if uid else secrets.token_hex(11)
    memo_id = None
    if memo_name:
        memo_id = (await _writable_memo(conn, caller, mode, memo_name)).id
    elif not may_stage_attachment(caller):
        raise PermissionDenied(
            "this access token does not reach personal objects: name the memo to attach to"
        )
    sha256 = await content_sha256(new)
    existing = (await conn.execute(sa.select(attachment).where(attachment.c.uid == uid))).first()
    if existing is not None:
        # Checked before any bytes are stored: a retry stores nothing twice.
        if is_repeat(existing, caller.user_id, sha256, new, memo_id):
            return existing
        raise AlreadyExists(f"attachment {uid!r} already exists")
    if new.external_link:
        if new.content or new.source is not None:
            raise InvalidArgument(
                "externalLink: an attachment is either a link or content, not both"
            )
        link = valid_external_link(new.external_link)
        new_id = (
            await conn.execute(
                attachment.insert()
                .values(
                    uid=uid,
                    creator_id=caller.user_id,
                    memo_id=memo_id,
                    filename=filename,
                    mime_type=kind,
                    size=0,
                    storage_type=storage.StorageType.EXTERNAL.value,
                    external_link=link,
                    created_ts=now,
                )
                .returning(attachment.c.id)
            )
        ).scalar_one()
        return (await conn.execute(sa.select(attachment).where(attachment.c.id == new_id))).one()
    # The bytes first, then the row that names them: a row never points at
    # nothing. A failed insert removes the bytes; a crash in between leaves an
    # orphan file or object, never a dangling row.
    if new.source is not None:
        stored = await storage.put_file(store, new.source)
    else:
        stored = await storage.put(store, new.content)
    try:
        new_id = (
            await conn.execute(
                attachment.insert()
                .values(
                    uid=uid,
                    creator_id=caller.user_id,
                    memo_id=memo_id,
                    filename=filename,
                    mime_type=kind,
                    size=new.size,
                    storage_type=stored.storage_type.value,
                    storage_key=stored.storage_key,
                    blob=stored.blob,
                    sha256=sha256,
                    created_ts=now,
                )
                .returning(attachment.c.id)
            )
        ).scalar_one()
    except IntegrityError:
        # The same id inserted by a concurrent request since the check above.
        await storage.discard(store, stored.storage_type, stored.storage_key)
        raise AlreadyExists(f"attachment {uid!r} already exists") from None
    except BaseException:
        await storage.discard(store, stored.storage_type, stored.storage_key)
        raise
    return (await conn.execute(sa.select(attachment).where(attachment.c.id == new_id))).one()


_ORDER = (attachment.c.created_ts, attachment.c.id)


async def list_own(
    conn: AsyncConnection,
    caller: Caller,
    mode: AccessMode,
    filter_text: str | None,
    filter_clause: ColumnElement[bool] | None,
    page_size: int,
    page_token: str | None,
    secret: str,
) -> tuple[list[Any], str]:
    """The caller's own attachments that it can read, newest first, keyset-paged."""
    query_id = fingerprint("attachments", filter_text, caller.user_id)
    conditions: list[ColumnElement[bool]] = [
        attachment.c.creator_id == caller.user_id,
        attachment_predicate(caller, mode),
    ]
    if filter_clause is not None:
        conditions.append(filter_clause.self_group())
    if page_token:
        values = decode_int_key(secret, query_id, page_token, 2)
        conditions.append(
            sa.tuple_(*_ORDER)
            < sa.tuple_(*[sa.literal(v, c.type) for c, v in zip(_ORDER, values, strict=True)])
        )
    stmt = (
        sa.select(attachment)
        .where(*conditions)
        .order_by(*[c.desc() for c in _ORDER])
        .limit(page_size + 1)
    )
    rows = (await conn.execute(stmt)).all()
    page = trim_page(rows, page_size, lambda r: [r.created_ts, r.id], secret=secret, query=query_id)
    return page.rows, page.next_token


async def delete_attachment(
    conn: AsyncConnection, caller: Caller, mode: AccessMode, uid: str
) -> tuple[str, str | None]:
    """Delete the caller's own attachment; returns its storage type and key for removal."""
    row = await load_visible(conn, uid, caller, mode)
    if row.creator_id != caller.user_id:
        raise PermissionDenied(f"attachment {uid!r}: only its creator can delete it")
    await conn.execute(attachment.delete().where(attachment.c.id == row.id))
    key: str | None = row.storage_key
    return str(row.storage_type), key


async def memo_attachments(conn: AsyncConnection, memo_row: Any) -> list[Any]:
    return list(
        (
            await conn.execute(
                sa.select(attachment)
                .where(attachment.c.memo_id == memo_row.id)
                .order_by(attachment.c.created_ts, attachment.c.id)
            )
        ).all()
    )


async def set_memo_attachments(
    conn: AsyncConnection, caller: Caller, mode: AccessMode, memo_row: Any, names: list[str]
) -> None:
    """Make ``names`` exactly the memo's attachments.

    Every named attachment must be the caller's own (someone else's: 403 if
    the caller can see it, else 404); one bound to another memo moves only if
    the caller may write that memo too. Attachments dropped from the list are
    unbound, not deleted, and only the caller's own can be dropped. All
    checks run before any row changes.
    """
    await require_writer(conn, caller, memo_row, "change its attachments")
    wanted: dict[int, None] = {}
    for i, name in enumerate(names):
        uid = attachment_uid(name)
        row = (await conn.execute(sa.select(attachment).where(attachment.c.uid == uid))).first()
        if row is None or row.creator_id != caller.user_id:
            visible = (
                row is not None
                and (
                    await conn.execute(
                        sa.select(attachment.c.id).where(
                            attachment.c.id == row.id, attachment_predicate(caller, mode)
                        )
                    )
                ).first()
            )
            if visible:
                raise PermissionDenied(
                    f"attachments[{i}]: {name!r} belongs to another user and cannot be bound"
                )
            raise NotFound(f"attachments[{i}]: attachment {uid!r} not found")
        if row.memo_id is not None and row.memo_id != memo_row.id:
            other = (await conn.execute(sa.select(memo).where(memo.c.id == row.memo_id))).first()
            if other is not None:
                await _writable_memo(conn, caller, mode, other.uid)
        wanted[row.id] = None
    current = await memo_attachments(conn, memo_row)
    dropped = [r for r in current if r.id not in wanted]
    if any(r.creator_id != caller.user_id for r in dropped):
        raise PermissionDenied("attachments: another user's attachment cannot be removed")
    if dropped:
        await conn.execute(
            attachment.update()
            .where(attachment.c.id.in_([r.id for r in dropped]))
            .values(memo_id=None)
        )
    if wanted:
        await conn.execute(
            attachment.update().where(attachment.c.id.in_(list(wanted))).values(memo_id=memo_row.id)
        )


async def rename_attachment(
    conn: AsyncConnection, caller: Caller, mode: AccessMode, uid: str, filename: str
) -> Any:
    """UpdateAttachment: only the filename is a user's to change (Memos does the same)."""
    row = await load_visible(conn, uid, caller, mode)
    if row.creator_id != caller.user_id:
        raise PermissionDenied(f"attachment {uid!r}: only its creator can change it")
    clean = clean_filename(filename)
    if not clean:
        raise InvalidArgument("filename: required")
    await conn.execute(attachment.update().where(attachment.c.id == row.id).values(filename=clean))
    return (await conn.execute(sa.select(attachment).where(attachment.c.id == row.id))).one()
