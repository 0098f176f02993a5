"""MemoService: the memo endpoints of the Memos-compatible API."""

from __future__ import annotations

from typing import Annotated, Any

import sqlalchemy as sa
from litestar import Controller, Request, Response, delete, get, patch, post
from litestar.datastructures import State
from litestar.params import Parameter
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.caller import Caller
from app.api.paging import page_size as clamp_page_size
from app.api.params import FilterText, PageSize, PageToken
from app.api.responses import errors
from app.api.structs import resource_id, valid_uid
from app.db.schema import memo as memo_table
from app.db.transactions import end_write
from app.deps import requires_user
from app.errors import AlreadyExists, InvalidArgument, Unauthenticated
from app.instance.store import AccessSettings
from app.memos import chosen_ids, schemas
from app.memos.bindings import bind
from app.memos.html_cache import attach_html
from app.memos.listing import ListQuery, list_memos
from app.memos.present import present, present_one
from app.memos.query_filter import memo_filter_clause
from app.memos.service import (
    WriteContext,
    create_memo,
    load_for_read,
    normalise_mask,
    prerender,
    update_memo,
)
from app.memos.trash import trash_memo
from app.settings import Settings

MemoId = Annotated[str, Parameter(description="memo id or name (memos/{id})", max_length=64)]
View = Annotated[
    str | None,
    Parameter(query="view", max_length=16, description="`html` adds contentHtml (safe HTML)"),
]


async def _one(
    conn: AsyncConnection, memo_id: int, caller: Caller, access: AccessSettings
) -> schemas.Memo:
    row = (await conn.execute(sa.select(memo_table).where(memo_table.c.id == memo_id))).one()
    return await present_one(conn, row, caller, access.access_mode)


class MemoController(Controller):
    path = "/api/v1/memos"
    tags = ("MemoService",)

    @get("", operation_id="MemoService_ListMemos", responses=errors())
    async def list_memos(
        self,
        db: AsyncConnection,
        caller: Caller | None,
        access: AccessSettings,
        settings: Settings,
        now: int,
        page_size: PageSize = None,
        page_token: PageToken = None,
        filter: FilterText = None,
        order_by: Annotated[str | None, Parameter(query="orderBy", max_length=256)] = None,
        memo_state: Annotated[str | None, Parameter(query="state", max_length=32)] = None,
        view: View = None,
    ) -> schemas.ListMemosResponse:
        if caller is None and access.access_mode.value == "PRIVATE":
            raise Unauthenticated("sign in to list memos on this instance")
        clause = await memo_filter_clause(db, filter, now=now)
        query = ListQuery(
            caller=caller,
            mode=access.access_mode,
            state=(memo_state or "NORMAL").upper()
            if memo_state != "STATE_UNSPECIFIED"
            else "NORMAL",
            filter_text=filter,
            filter_clause=clause,
            order_by=order_by,
            page_size=clamp_page_size(page_size),
            page_token=page_token or None,
        )
        rows, token = await list_memos(db, query, settings.secret)
        memos = await present(db, rows, caller, access.access_mode)
        if view == "html":
            await attach_html(db, memos, rows)
        return schemas.ListMemosResponse(memos=memos, next_page_token=token)

    @post(
        "",
        operation_id="MemoService_CreateMemo",
        status_code=200,
        guards=[requires_user],
        responses=errors(409),
    )
    async def create_memo(
        self,
        request: Request[Any, Any, Any],
        db: AsyncConnection,
        state: State,
        caller: Caller,
        access: AccessSettings,
        now: int,
        data: schemas.MemoIn,
        memo_id: Annotated[str | None, Parameter(query="memoId", max_length=64)] = None,
    ) -> schemas.Memo:
        await prerender(data.content, access.content_length_limit)  # before the write lock
        if memo_id:
            await chosen_ids.refuse_if_throttled(state.engine, caller, now)
        try:
            new_id = await create_memo(db, WriteContext(caller, access, now), data, memo_id or None)
        except AlreadyExists:
            if not memo_id:
                raise
            uid = valid_uid(memo_id)
            raise await chosen_ids.taken(
                request.scope,
                db,
                caller,
                uid,
                access.access_mode,
            ) from None
        row = (await db.execute(sa.select(memo_table).where(memo_table.c.id == new_id))).one()
        await bind(db, caller, access.access_mode, row, data)
        await end_write(db)  # the write turn is not held while the answer is assembled
        return await present_one(db, row, caller, access.access_mode)

    @get("/{memo:str}", operation_id="MemoService_GetMemo", responses=errors())
    async def get_memo(
        self,
        db: AsyncConnection,
        caller: Caller | None,
        access: AccessSettings,
        memo: MemoId,
        view: View = None,
    ) -> Response[schemas.Memo]:
        uid = valid_uid(resource_id(memo, "memos", field="memo"), field="memo")
        row = await load_for_read(db, uid, caller, access.access_mode)
        out = await present_one(db, row, caller, access.access_mode)
        if view == "html":
            await attach_html(db, [out], [row])
        return Response(out, headers={"ETag": out.etag})

    @patch(
        "/{memo:str}",
        operation_id="MemoService_UpdateMemo",
        guards=[requires_user],
        responses=errors(409, 412),
    )
    async def update_memo(
        self,
        db: AsyncConnection,
        caller: Caller,
        access: AccessSettings,
        now: int,
        memo: MemoId,
        data: schemas.MemoIn,
        update_mask: Annotated[str | None, Parameter(query="updateMask", max_length=512)] = None,
        update_mask_snake: Annotated[
            str | None, Parameter(query="update_mask", max_length=512)
        ] = None,
        if_match: Annotated[str | None, Parameter(header="If-Match", max_length=128)] = None,
    ) -> Response[schemas.Memo]:
        uid = valid_uid(resource_id(memo, "memos", field="memo"), field="memo")
        paths = normalise_mask(update_mask if update_mask is not None else update_mask_snake, data)
        if not paths:
            raise InvalidArgument("updateMask: nothing to update")
        if "content" in paths:
            await prerender(data.content, access.content_length_limit)  # before the write lock
        row = await load_for_read(db, uid, caller, access.access_mode)
        await update_memo(db, WriteContext(caller, access, now), row, data, paths, if_match)
        if paths & {"attachments", "relations"}:
            await bind(db, caller, access.access_mode, row, data, paths)
        out = await _one(db, row.id, caller, access)
        return Response(out, headers={"ETag": out.etag})

    @delete(
        "/{memo:str}",
        operation_id="MemoService_DeleteMemo",
        guards=[requires_user],
        status_code=200,
        responses=errors(),
    )
    async def delete_memo(
        self, db: AsyncConnection, caller: Caller, access: AccessSettings, now: int, memo: MemoId
    ) -> dict[str, Any]:
        """Move the memo (with its comments) to its creator's trash: 404 from now on.

        Undo with ``POST /api/v1/memos/{memo}:undelete``; gone for good after the
        retention period or ``:purge`` (app.memos.trash).
        """
        uid = valid_uid(resource_id(memo, "memos", field="memo"), field="memo")
        row = await load_for_read(db, uid, caller, access.access_mode)
        await trash_memo(db, WriteContext(caller, access, now), row)
        return {}
