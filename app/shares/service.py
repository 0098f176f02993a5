"""Creating, listing and revoking share links, and resolving one to its memo.

A share link is a capability for exactly one memo. It is made by the memo's
author only, never for a SPACE memo, an archived memo or a comment, and it
is re-checked on every use: an expired or revoked (deleted) link, a memo
that became SPACE or ARCHIVED since, or an author who no longer writes it
(or whose account is deactivated) all answer "not found". The reader gets
the memo itself, not its comments, relations or reactions (see
:func:`shared_memo_view`).
"""

from __future__ import annotations

import re
import secrets
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.audience import AccessMode
from app.access.caller import Caller
from app.api.structs import rfc3339
from app.db.schema import memo, memo_share, user_account
from app.errors import Conflict, InvalidArgument, NotFound, PermissionDenied
from app.memos import schemas
from app.memos.present import present_one
from app.shares.schemas import MemoShare

TOKEN_RE = re.compile(r"[A-Za-z0-9_-]{16,64}\Z")  # always with fullmatch
SHAREABLE = ("PRIVATE", "PROTECTED", "PUBLIC")


def _require_author(caller: Caller, row: Any) -> None:
    if row.creator_id != caller.user_id:
        raise PermissionDenied(f"memo {row.uid!r}: only its author manages share links")


def share_out(memo_uid: str, row: Any) -> MemoShare:
    out = MemoShare(
        name=f"memos/{memo_uid}/shares/{row.token}",
        memo=f"memos/{memo_uid}",
        token=row.token,
        create_time=rfc3339(row.created_ts),
    )
    if row.expires_ts is not None:
        out.expire_time = rfc3339(row.expires_ts)
    return out


async def create_share(
    conn: AsyncConnection, caller: Caller, memo_row: Any, expires: int | None, now: int
) -> MemoShare:
    _require_author(caller, memo_row)
    if memo_row.parent_id is not None:
        raise InvalidArgument(f"memo {memo_row.uid!r} is a comment: comments cannot be shared")
    if memo_row.visibility not in SHAREABLE:
        raise Conflict(f"memo {memo_row.uid!r} is a SPACE memo: space memos cannot be shared")
    if memo_row.space_id is not None:
        # Only its author gets here, who placed it; the path's owners also write
        # a placed memo, and a link must not publish their edits (decision 0030).
        raise Conflict(
            f"memo {memo_row.uid!r} is placed in a space: only memos outside spaces can be shared"
        )
    if memo_row.state != "NORMAL":
        raise Conflict(f"memo {memo_row.uid!r} is archived: archived memos cannot be shared")
    if expires is not None and expires <= now:
        raise InvalidArgument("expireTime: must be in the future")
    token = secrets.token_urlsafe(24)
    share_id = (
        await conn.execute(
            memo_share.insert()
            .values(
                memo_id=memo_row.id,
                token=token,
                creator_id=caller.user_id,
                created_ts=now,
                expires_ts=expires,
            )
            .returning(memo_share.c.id)
        )
    ).scalar_one()
    row = (await conn.execute(sa.select(memo_share).where(memo_share.c.id == share_id))).one()
    return share_out(memo_row.uid, row)


async def list_shares(conn: AsyncConnection, caller: Caller, memo_row: Any) -> list[MemoShare]:
    _require_author(caller, memo_row)
    rows = await conn.execute(
        sa.select(memo_share)
        .where(memo_share.c.memo_id == memo_row.id, memo_share.c.creator_id == caller.user_id)
        .order_by(memo_share.c.id)
    )
    return [share_out(memo_row.uid, r) for r in rows]


async def revoke_share(conn: AsyncConnection, caller: Caller, memo_row: Any, token: str) -> None:
    _require_author(caller, memo_row)
    result = await conn.execute(
        memo_share.delete().where(
            memo_share.c.memo_id == memo_row.id,
            memo_share.c.token == token,
            memo_share.c.creator_id == caller.user_id,
        )
    )
    if result.rowcount == 0:
        raise NotFound("share not found")


async def load_shared_memo(conn: AsyncConnection, token: str, now: int) -> Any:
    """The memo behind a live share link, or 404: every condition re-checked now."""
    if not TOKEN_RE.fullmatch(token):
        raise NotFound("share not found")
    row = (
        await conn.execute(
            sa.select(memo)
            .join(memo_share, memo_share.c.memo_id == memo.c.id)
            .join(user_account, user_account.c.id == memo.c.creator_id)
            .where(
                memo_share.c.token == token,
                sa.or_(memo_share.c.expires_ts.is_(None), memo_share.c.expires_ts > now),
                memo_share.c.creator_id == memo.c.creator_id,
                memo.c.state == "NORMAL",
                memo.c.visibility.in_(SHAREABLE),
                memo.c.space_id.is_(None),
                memo.c.parent_id.is_(None),
                user_account.c.state == "NORMAL",
            )
        )
    ).first()
    if row is None:
        raise NotFound("share not found")
    return row


async def shared_memo_view(conn: AsyncConnection, row: Any, mode: AccessMode) -> schemas.Memo:
    """The memo as a share reader sees it: no relations, reactions or comments.

    Relations name and quote other memos, and reactions name other users; a
    link admits exactly one memo, so both are emptied rather than filtered.
    """
    out = await present_one(conn, row, None, mode)
    out.relations = []
    out.reactions = []
    return out
