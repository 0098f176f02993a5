"""Reactions on a memo: list, upsert, delete.

A reaction is visible exactly when its memo is: every entry point first
passes the memo's point read. Deleting is the reacting user's alone; for
anyone else the reaction is "not found" and its row stays.
"""

from __future__ import annotations

import unicodedata
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.caller import Caller
from app.api.structs import rfc3339
from app.db.schema import reaction, user_account
from app.errors import InvalidArgument, NotFound
from app.memos.schemas import Reaction

MAX_REACTION_CHARS = 32


def valid_reaction_type(value: str) -> str:
    """1 to 32 characters, none of them control or format characters (RTL overrides...)."""
    text = value.strip()
    if not 1 <= len(text) <= MAX_REACTION_CHARS:
        raise InvalidArgument(f"reactionType: must be 1 to {MAX_REACTION_CHARS} characters")
    # ZWJ (U+200D) is a format character that joins emoji sequences: allowed.
    if any(unicodedata.category(ch) in ("Cc", "Cs") for ch in text) or any(
        unicodedata.category(ch) == "Cf" and ch != "\u200d" for ch in text
    ):
        raise InvalidArgument("reactionType: control characters are not allowed")
    return text


def _out(memo_uid: str, row: Any) -> Reaction:
    return Reaction(
        name=f"memos/{memo_uid}/reactions/{row.id}",
        creator=f"users/{row.username}",
        content_id=f"memos/{memo_uid}",
        reaction_type=row.reaction_type,
        create_time=rfc3339(row.created_ts),
    )


def _select() -> sa.Select[Any]:
    return sa.select(reaction, user_account.c.username).join(
        user_account, user_account.c.id == reaction.c.creator_id
    )


async def list_reactions(conn: AsyncConnection, memo_row: Any) -> list[Reaction]:
    rows = await conn.execute(
        _select().where(reaction.c.memo_id == memo_row.id).order_by(reaction.c.id)
    )
    return [_out(memo_row.uid, r) for r in rows]


async def upsert_reaction(
    conn: AsyncConnection, caller: Caller, memo_row: Any, reaction_type: str, now: int
) -> Reaction:
    """The caller's reaction of this type on the memo, created if absent."""
    kind = valid_reaction_type(reaction_type)
    mine = sa.and_(
        reaction.c.memo_id == memo_row.id,
        reaction.c.creator_id == caller.user_id,
        reaction.c.reaction_type == kind,
    )
    existing = (await conn.execute(_select().where(mine))).first()
    if existing is None:
        try:
            async with conn.begin_nested():
                await conn.execute(
                    reaction.insert().values(
                        memo_id=memo_row.id,
                        creator_id=caller.user_id,
                        reaction_type=kind,
                        created_ts=now,
                    )
                )
        except IntegrityError:
            pass  # a concurrent upsert of the same reaction won; read it below
        existing = (await conn.execute(_select().where(mine))).one()
    return _out(memo_row.uid, existing)


async def delete_reaction(
    conn: AsyncConnection, caller: Caller, memo_row: Any, reaction_id: int
) -> None:
    """Delete the caller's own reaction; any other reaction is "not found"."""
    result = await conn.execute(
        reaction.delete().where(
            reaction.c.id == reaction_id,
            reaction.c.memo_id == memo_row.id,
            reaction.c.creator_id == caller.user_id,
        )
    )
    if result.rowcount == 0:
        raise NotFound(f"reaction {reaction_id} not found")
