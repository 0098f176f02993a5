"""MemoService_ListMemoComments / CreateMemoComment."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
import sqlalchemy as sa
from litestar import Controller, Request, get, post
from litestar.datastructures import State
from litestar.params import Parameter
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.caller import Caller
from app.api.paging import page_size as clamp_page_size
from app.api.params import FilterText, PageSize, PageToken
from app.api.responses import errors
from app.api.structs import Out, valid_uid
from app.comments.service import create_comment, list_comments
from app.db.schema import memo as memo_table
from app.db.transactions import end_write
from app.deps import requires_user
from app.errors import AlreadyExists
from app.instance.store import AccessSettings
from app.memos import chosen_ids, schemas
from app.memos.bindings import bind
from app.memos.listing import ListQuery
from app.memos.lookup import MemoName, comment_placement, readable_memo
from app.memos.present import present, present_one
from app.memos.query_filter import memo_filter_clause
from app.memos.service import WriteContext, prerender
from app.settings import Settings


class ListMemoCommentsResponse(Out):
    memos: list[schemas.Memo]
    next_page_token: str = ""
    total_size: int | msgspec.UnsetType = msgspec.UNSET


class CommentController(Controller):
    path = "/api/v1/memos/{memo:str}/comments"
    tags = ("MemoService",)

    @get("", operation_id="MemoService_ListMemoComments", responses=errors())
    async def list_comments(
        self,
        db: AsyncConnection,
        caller: Caller | None,
        access: AccessSettings,
        settings: Settings,
        now: int,
        memo: MemoName,
        page_size: PageSize = None,
        page_token: PageToken = None,
        filter: FilterText = None,
        order_by: Annotated[str | None, Parameter(query="orderBy", max_length=256)] = None,
    ) -> ListMemoCommentsResponse:
        parent = await readable_memo(db, memo, caller, access.access_mode)
        query = ListQuery(
            caller=caller,
            mode=access.access_mode,
            filter_text=filter,
            filter_clause=await memo_filter_clause(db, filter, now=now),
            order_by=order_by or "create_time asc",
            page_size=clamp_page_size(page_size),
            page_token=page_token or None,
            parent_id=parent.id,
        )
        rows, token, total = await list_comments(db, parent, query, settings.secret)
        return ListMemoCommentsResponse(
            memos=await present(db, rows, caller, access.access_mode),
            next_page_token=token,
            total_size=total,
        )

    @post(
        "",
        operation_id="MemoService_CreateMemoComment",
        status_code=200,
        guards=[requires_user],
        responses=errors(409),
    )
    async def create_comment(
        self,
        request: Request[Any, Any, Any],
        db: AsyncConnection,
        state: State,
        caller: Caller,
        access: AccessSettings,
        now: int,
        memo: MemoName,
        data: schemas.MemoIn,
        comment_id: Annotated[str | None, Parameter(query="commentId", max_length=64)] = None,
        memo_id: Annotated[str | None, Parameter(query="memoId", max_length=64)] = None,
    ) -> schemas.Memo:
        await prerender(data.content, access.content_length_limit)  # before the write lock
        chosen = comment_id or memo_id or None
        if chosen:
            await chosen_ids.refuse_if_throttled(state.engine, caller, now)
        parent = await readable_memo(db, memo, caller, access.access_mode)
        data = await comment_placement(db, caller, parent, data)
        ctx = WriteContext(caller, access, now)
        try:
            new_id = await create_comment(db, ctx, parent, data, chosen)
        except AlreadyExists:
            if not chosen:
                raise
            uid = valid_uid(chosen, "commentId")
            raise await chosen_ids.taken(
                request.scope,
                db,
                caller,
                uid,
                access.access_mode,
            ) from None
        row = (await db.execute(sa.select(memo_table).where(memo_table.c.id == new_id))).one()
        await bind(db, caller, access.access_mode, row, data)  # a comment's attachments
        await end_write(db)  # the write turn is not held while the answer is assembled
        return await present_one(db, row, caller, access.access_mode)
