"""MemoService_ListMemoComments / CreateMemoComment."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from litestar import Controller, Request, get, post
from litestar.datastructures import State
from litestar.params import Parameter

from app.api.context import RequestContext, writable_key
from app.api.paging import page_size as clamp_page_size
from app.api.params import FilterText, PageSize, PageToken
from app.api.responses import errors
from app.api.structs import Out, valid_uid
from app.comments.service import create_comment, list_comments
from app.db.transactions import end_write
from app.deps import requires_user
from app.errors import AlreadyExists
from app.memos import chosen_ids, schemas
from app.memos.bindings import bind
from app.memos.listing import ListQuery
from app.memos.lookup import MemoName, comment_placement, readable_memo
from app.memos.present import present, present_one
from app.memos.query_filter import memo_filter_clause
from app.memos.service import prerender


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
        ctx: RequestContext,
        memo: MemoName,
        page_size: PageSize = None,
        page_token: PageToken = None,
        filter: FilterText = None,
        order_by: Annotated[str | None, Parameter(query="orderBy", max_length=256)] = None,
    ) -> ListMemoCommentsResponse:
        db, caller = ctx.db, ctx.caller
        parent = await readable_memo(db, memo, caller, ctx.mode)
        query = ListQuery(
            caller=caller,
            mode=ctx.mode,
            filter_text=filter,
            filter_clause=await memo_filter_clause(db, filter, now=ctx.now),
            order_by=order_by or "create_time asc",
            page_size=clamp_page_size(page_size),
            page_token=page_token or None,
            parent_id=parent.id,
        )
        rows, token, total = await list_comments(db, parent, query, ctx.settings.secret)
        return ListMemoCommentsResponse(
            memos=await present(db, rows, caller, ctx.mode),
            next_page_token=token,
            total_size=total,
        )

    @post(
        "",
        operation_id="MemoService_CreateMemoComment",
        status_code=200,
        guards=[requires_user, writable_key],
        responses=errors(409),
    )
    async def create_comment(
        self,
        request: Request[Any, Any, Any],
        state: State,
        ctx: RequestContext,
        memo: MemoName,
        data: schemas.MemoIn,
        comment_id: Annotated[str | None, Parameter(query="commentId", max_length=64)] = None,
        memo_id: Annotated[str | None, Parameter(query="memoId", max_length=64)] = None,
    ) -> schemas.Memo:
        db, caller = ctx.db, ctx.user
        await prerender(data.content, ctx.access.content_length_limit)  # before the write lock
        chosen = comment_id or memo_id or None
        if chosen:
            await chosen_ids.refuse_if_throttled(state.engine, caller, ctx.now)
        parent = await readable_memo(db, memo, caller, ctx.mode)
        data = await comment_placement(db, caller, parent, data)
        try:
            row = await create_comment(db, ctx.write, parent, data, chosen)
        except AlreadyExists:
            if not chosen:
                raise
            uid = valid_uid(chosen, "commentId")
            raise await chosen_ids.taken(request.scope, db, caller, uid, ctx.mode) from None
        await bind(db, caller, ctx.mode, row, data)  # a comment's attachments
        await end_write(db)  # the write turn is not held while the answer is assembled
        return await present_one(db, row, caller, ctx.mode)
