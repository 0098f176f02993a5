"""What a create with a client-chosen memo id answers when the id is taken (decision 0023).

Memo ids are one global namespace and clients may choose them (``?memoId=``,
batch ``memoId``, ``?commentId=``), so "this id is taken" cannot be hidden
from a creator. What is hidden is everything else about the holder:

- the holder is readable by the caller: ``409 memo 'x' already exists`` (the
  caller could read it anyway);
- otherwise, whether it is hidden, or visible but not the caller's to write:
  ``409 memo id 'x' is unavailable``, byte for byte the same, never "not
  found", never its creator, visibility or space;
- those "unavailable" answers are throttled per user (:data:`POLICY`), and a
  throttled user's creates with a chosen id are refused with 429 before the
  id is looked at, so a dictionary of meaningful ids cannot be probed at
  speed. Generated ids (88 random bits) are not guessable at all.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.access.audience import AccessMode
from app.access.caller import Caller
from app.auth import throttle
from app.errors import AlreadyExists, IdUnavailable, NotFound, ResourceExhausted, Unauthenticated
from app.memos.service import load_for_read

# 20 unavailable ids free per user, then a doubling back-off up to an hour.
POLICY = throttle.Policy(free=20, cap=3600, quiet=3600)
# Set in the ASGI scope by a request that answered "unavailable"; counted by
# app.server once the request (and its transaction, which holds the write
# lock) is over, so the count never waits for the request's own lock.
SCOPE_FLAG = "daybook.memo_id_unavailable"


def _key(user_id: int) -> str:
    return throttle.named_key("memo-id", str(user_id))


async def refuse_if_throttled(engine: AsyncEngine, caller: Caller, now: int) -> None:
    """Before a create with a chosen id: a user probing ids waits, whatever the id."""
    verdict = await throttle.peek(engine, _key(caller.user_id), now, POLICY)
    if not verdict.allowed:
        raise ResourceExhausted(
            f"too many unavailable memo ids: retry in {verdict.retry_after} s, or omit the id",
            retry_after=verdict.retry_after,
        )


def mark_unavailable(scope: Any, caller: Caller) -> None:
    scope[SCOPE_FLAG] = caller.user_id


async def taken(
    scope: Any,
    conn: AsyncConnection,
    caller: Caller,
    uid: str,
    mode: AccessMode,
) -> AlreadyExists:
    """The error for a chosen id some memo holds (see the module docstring)."""
    try:
        await load_for_read(conn, uid, caller, mode)
    except (NotFound, Unauthenticated):
        mark_unavailable(scope, caller)
        return IdUnavailable(f"memo id {uid!r} is unavailable")
    return AlreadyExists(f"memo {uid!r} already exists")


async def count_marked(scope: dict[str, Any], engine: AsyncEngine, now: int) -> None:
    """After the request: count an "unavailable" answer against its user."""
    user_id = scope.get(SCOPE_FLAG)
    if isinstance(user_id, int):
        await throttle.count_attempt(engine, _key(user_id), now, POLICY)
