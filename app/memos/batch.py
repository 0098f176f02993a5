"""Batch create with a client-chosen idempotency key (``MemoService_BatchCreateMemos``).

Each input names its id with ``memoId`` (Memos' idempotency key) or with
``name: "memos/{id}"``; an input with neither gets a fresh id and is always
INSERTED. The batch runs in the request's transaction and is all-or-nothing:
any error leaves nothing written.

Order of checks, and why (``access.md`` sections 3, 5 and 6):

1. Every input is checked as a create would check it (read-only key, shape,
   content limit, visibility, placement and write at the destination path),
   through :func:`app.memos.service.prepare_memo`, *before any memo row is
   looked up*. A refused input therefore fails the same way whether or not a
   memo with its id exists.
2. Then the ids are looked up. An existing memo is *ours* when the caller can
   read it now (:func:`~app.memos.service.load_for_read`), may write it
   (:func:`~app.memos.service.may_write`) and it is a top-level memo, not a
   comment. Any other existing memo, hidden or merely visible, answers the
   same 409 "memo id ... is unavailable" in every ``onConflict`` mode, and is
   never touched. Memo ids are one global namespace, so "this id is taken"
   is observable anyway (a single create answers 409 too); what must not be
   observable is whether the holder is a memo the caller could see, so the
   visible and the hidden cases answer byte for byte alike.
3. ``ERROR``: a conflict with one of our memos is 409 "already exists".
   ``IGNORE``: ours is SKIPPED. ``REPLACE``: ours is updated through
   :func:`~app.memos.service.update_memo` (write rule, history event) so that
   it matches the input as a fresh create would have made it (see
   :func:`_replacement`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

import msgspec
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from app.api.bounds import Name
from app.api.structs import In, Out, resource_id
from app.db.schema import memo
from app.errors import AlreadyExists, DaybookError, IdUnavailable, InvalidArgument, NotFound
from app.memos.rows import ReadMemoRow
from app.memos.schemas import MemoIn
from app.memos.service import (
    PreparedMemo,
    WriteContext,
    insert_memo,
    load_for_read,
    may_write,
    prepare_memo,
    prerender,
    update_memo,
)

MAX_BATCH = 1000
OnConflict = Literal["ERROR", "REPLACE", "IGNORE"]

__all__ = [
    "MAX_BATCH",
    "BatchCreateMemosRequest",
    "BatchCreateMemosResponse",
    "BatchMemoIn",
    "BatchResult",
    "batch_create",
]


class BatchMemoIn(MemoIn):
    """A create body plus its optional client id (``memoId``, or ``name: memos/{id}``)."""

    memo_id: Name | msgspec.UnsetType = msgspec.UNSET


class BatchCreateMemosRequest(In):
    memos: Annotated[list[BatchMemoIn], msgspec.Meta(min_length=1, max_length=MAX_BATCH)]
    on_conflict: OnConflict = "ERROR"


class BatchResult(Out):
    name: str
    status: str  # INSERTED | UPDATED | SKIPPED


class BatchCreateMemosResponse(Out):
    results: list[BatchResult]


@dataclass(frozen=True, slots=True)
class _Item:
    index: int
    data: BatchMemoIn
    prepared: PreparedMemo


def _client_id(data: BatchMemoIn, index: int) -> str | None:
    """The input's id from ``memoId`` or ``name``; 400 when they disagree."""
    field = f"memos[{index}]"
    by_id = data.memo_id if isinstance(data.memo_id, str) and data.memo_id else None
    by_name = None
    if isinstance(data.name, str) and data.name:
        by_name = resource_id(data.name, "memos", field=f"{field}.name")
    elif not isinstance(data.name, msgspec.UnsetType | None):
        raise InvalidArgument(f"{field}.name: must be a string like memos/{{id}}")
    if by_id and by_name and by_id != by_name:
        raise InvalidArgument(f"{field}: memoId {by_id!r} and name {data.name!r} disagree")
    return by_id or by_name


async def _prepare_all(
    conn: AsyncConnection, ctx: WriteContext, inputs: list[BatchMemoIn]
) -> list[_Item]:
    """Phase 1: every create check on every input, before any memo row is read."""
    if len(inputs) > MAX_BATCH:  # the Struct says so too; kept for direct callers
        raise InvalidArgument(f"memos: at most {MAX_BATCH} per call, got {len(inputs)}")
    items: list[_Item] = []
    first_seen: dict[str, int] = {}
    for index, data in enumerate(inputs):  # parsed before the write lock is taken
        try:
            await prerender(data.content, ctx.access.content_length_limit)
        except DaybookError as exc:
            raise type(exc)(f"memos[{index}]: {exc.message}") from None
    for index, data in enumerate(inputs):
        try:
            prepared = await prepare_memo(conn, ctx, data, _client_id(data, index))
        except DaybookError as exc:
            raise type(exc)(f"memos[{index}]: {exc.message}") from None
        earlier = first_seen.setdefault(prepared.uid, index)
        if earlier != index:
            raise InvalidArgument(
                f"memos[{index}]: id {prepared.uid!r} repeats memos[{earlier}] in this batch"
            )
        items.append(_Item(index, data, prepared))
    return items


async def _existing(conn: AsyncConnection, uids: list[str]) -> set[str]:
    found: set[str] = set()
    for start in range(0, len(uids), 500):
        chunk = uids[start : start + 500]
        found.update(
            (await conn.execute(sa.select(memo.c.uid).where(memo.c.uid.in_(chunk)))).scalars()
        )
    return found


async def _own_row(conn: AsyncConnection, ctx: WriteContext, uid: str) -> ReadMemoRow | None:
    """The existing memo if it is ours to skip or replace (see the module docstring), else None."""
    try:
        row = await load_for_read(conn, uid, ctx.caller, ctx.access.access_mode)
    except NotFound:
        return None
    if row.parent_id is not None or not await may_write(conn, ctx.caller, row):
        return None
    return row


def _unavailable(index: int, uid: str) -> IdUnavailable:
    return IdUnavailable(f"memos[{index}]: memo id {uid!r} is unavailable")


def _replacement(item: _Item) -> tuple[MemoIn, set[str]]:
    """The update that makes an existing memo match what this input would create.

    Every field a create sets takes the input's value or its create default
    (content "", PRIVATE, not pinned, NORMAL, no location, out of any space);
    the memo's create and update times change only when the input sets them.
    """
    values = item.prepared.values
    data = item.data
    in_space = values["space_id"] is not None
    body = MemoIn(
        content=values["content"],
        visibility=values["visibility"],
        space=data.space if in_space and isinstance(data.space, str) else "",
        tree=data.tree if in_space and isinstance(data.tree, str) else "",
        pinned=bool(values["pinned"]),
        state=values["state"],
        location=None if isinstance(data.location, msgspec.UnsetType) else data.location,
        create_time=data.create_time,
        display_time=data.display_time,
        update_time=data.update_time,
    )
    paths = {"content", "visibility", "space", "tree", "pinned", "state", "location"}
    if isinstance(data.create_time, str) or isinstance(data.display_time, str):
        paths.add("create_time")
    if isinstance(data.update_time, str):
        paths.add("update_time")
    return body, paths


async def batch_create(
    conn: AsyncConnection, ctx: WriteContext, request: BatchCreateMemosRequest
) -> BatchCreateMemosResponse:
    items = await _prepare_all(conn, ctx, request.memos)
    taken = await _existing(conn, [i.prepared.uid for i in items])
    own: dict[str, Any] = {}
    for item in items:
        uid = item.prepared.uid
        if uid not in taken:
            continue
        row = await _own_row(conn, ctx, uid)
        if row is None:
            raise _unavailable(item.index, uid)
        if request.on_conflict == "ERROR":
            raise AlreadyExists(f"memos[{item.index}]: memo {uid!r} already exists")
        own[uid] = row

    results: list[BatchResult] = []
    for item in items:
        uid = item.prepared.uid
        row = own.get(uid)
        if row is None:
            try:
                await insert_memo(conn, ctx, item.prepared)
            except AlreadyExists:  # created concurrently since the lookup
                raise _unavailable(item.index, uid) from None
            status = "INSERTED"
        elif request.on_conflict == "IGNORE":
            status = "SKIPPED"
        else:
            body, paths = _replacement(item)
            try:
                await update_memo(conn, ctx, row, body, paths, None)
            except DaybookError as exc:
                raise type(exc)(f"memos[{item.index}]: {exc.message}") from None
            status = "UPDATED"
        results.append(BatchResult(name=f"memos/{uid}", status=status))
    return BatchCreateMemosResponse(results=results)
