"""MemoService: the memo endpoints of the Memos-compatible API."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, Request, Response, delete, get, patch, post
from litestar.datastructures import State
from litestar.params import Parameter

from app.api.context import RequestContext, writable_key
from app.api.paging import page_size as clamp_page_size
from app.api.params import FilterText, PageSize, PageToken
from app.api.responses import errors
from app.api.structs import resource_id, valid_uid
from app.db.transactions import end_write, read_phase
from app.deps import requires_user
from app.errors import AlreadyExists, InvalidArgument, Unauthenticated
from app.memos import chosen_ids, schemas
from app.memos.bindings import bind
from app.memos.html_cache import attach_html
from app.memos.listing import ListQuery, list_memos
from app.memos.lookup import written_memo
from app.memos.present import present, present_one
from app.memos.query_filter import memo_filter_clause
from app.memos.service import (
    content_tags,
    create_memo_row,
    load_for_read,
    normalise_mask,
    prerender,
    update_memo,
)
from app.memos.trash import trash_memo

MemoId = Annotated[str, Parameter(description="memo id or name (memos/{id})", max_length=64)]
View = Annotated[
    str | None,
    Parameter(query="view", max_length=16, description="`html` adds contentHtml (safe HTML)"),
]


async def _one(ctx: RequestContext, memo_id: int) -> schemas.Memo:
    row = await written_memo(ctx.db, memo_id)
    return await present_one(ctx.db, row, ctx.caller, ctx.mode)


class MemoController(Controller):
    path = "/api/v1/memos"
    tags = ("MemoService",)

    # page_cache: answers kept while the database is unchanged (app.api.page_cache).
    @get(
        "",
        operation_id="MemoService_ListMemos",
        responses=errors(),
        opt={"page_cache": True},
    )
    async def list_memos(
        self,
        ctx: RequestContext,
        page_size: PageSize = None,
        page_token: PageToken = None,
        filter: FilterText = None,
        order_by: Annotated[str | None, Parameter(query="orderBy", max_length=256)] = None,
        memo_state: Annotated[str | None, Parameter(query="state", max_length=32)] = None,
        view: View = None,
    ) -> schemas.ListMemosResponse:
        if ctx.caller is None and ctx.mode.value == "PRIVATE":
            raise Unauthenticated("sign in to list memos on this instance")
        clause = await memo_filter_clause(ctx.db, filter, now=ctx.now)
        query = ListQuery(
            caller=ctx.caller,
            mode=ctx.mode,
            state=(memo_state or "NORMAL").upper()
            if memo_state != "STATE_UNSPECIFIED"
            else "NORMAL",
            filter_text=filter,
            filter_clause=clause,
            order_by=order_by,
            page_size=clamp_page_size(page_size),
            page_token=page_token or None,
        )
        rows, token = await list_memos(ctx.db, query, ctx.settings.secret)
        memos = await present(ctx.db, rows, ctx.caller, ctx.mode)
        if view == "html":
            await attach_html(ctx.db, memos, rows)
        return schemas.ListMemosResponse(memos=memos, next_page_token=token)

    @post(
        "",
        operation_id="MemoService_CreateMemo",
        status_code=200,
        guards=[requires_user, writable_key],
        responses=errors(409),
    )
    async def create_memo(
        self,
        request: Request[Any, Any, Any],
        state: State,
        ctx: RequestContext,
        data: schemas.MemoIn,
        memo_id: Annotated[str | None, Parameter(query="memoId", max_length=64)] = None,
    ) -> schemas.Memo:
        db, caller = ctx.db, ctx.user
        await prerender(data.content, ctx.access.content_length_limit)  # before the write lock
        if memo_id:
            await chosen_ids.refuse_if_throttled(state.engine, caller, ctx.now)
        try:
            row = await create_memo_row(db, ctx.write, data, memo_id or None)
        except AlreadyExists:
            if not memo_id:
                raise
            uid = valid_uid(memo_id)
            raise await chosen_ids.taken(request.scope, db, caller, uid, ctx.mode) from None
        await bind(db, caller, ctx.mode, row, data)
        await end_write(db)  # the write turn is not held while the answer is assembled
        return await present_one(db, row, caller, ctx.mode)

    @get(
        "/{memo:str}",
        operation_id="MemoService_GetMemo",
        responses=errors(),
        opt={"page_cache": True},
    )
    async def get_memo(
        self, ctx: RequestContext, memo: MemoId, view: View = None
    ) -> Response[schemas.Memo]:
        uid = valid_uid(resource_id(memo, "memos", field="memo"), field="memo")
        row = await load_for_read(ctx.db, uid, ctx.caller, ctx.mode)
        out = await present_one(ctx.db, row, ctx.caller, ctx.mode)
        if view == "html":
            await attach_html(ctx.db, [out], [row])
        return Response(out, headers={"ETag": out.etag})

    @patch(
        "/{memo:str}",
        operation_id="MemoService_UpdateMemo",
        guards=[requires_user, writable_key],
        responses=errors(409, 412),
    )
    async def update_memo(
        self,
        ctx: RequestContext,
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
        db, caller = ctx.db, ctx.user
        if "content" in paths:
            await prerender(data.content, ctx.access.content_length_limit)  # before the write lock
        # Read before the write lock: the update's compare-and-swap on the row's
        # version (app.memos.service.update_memo) makes a stale read a 412 or a
        # recomputation, never a lost update (docs/decisions/0028).
        async with read_phase(db):
            row = await load_for_read(db, uid, caller, ctx.mode)
        written = await update_memo(db, ctx.write, row, data, paths, if_match)
        binds = bool(paths & {"attachments", "relations"})
        if binds:
            await bind(db, caller, ctx.mode, written or row, data, paths)
        await end_write(db)  # the write turn is not held while the answer is assembled
        if written is None or binds:
            out = await _one(ctx, row.id)
        else:
            # The answer is this PATCH's version: its row as written, and its tags
            # from its content (read after COMMIT, a concurrent PATCH's newer
            # version would pin them away; docs/decisions/0028).
            out = await present_one(db, written, caller, ctx.mode)
            out.tags = await content_tags(written.content)
        return Response(out, headers={"ETag": out.etag})

    @delete(
        "/{memo:str}",
        operation_id="MemoService_DeleteMemo",
        guards=[requires_user, writable_key],
        status_code=200,
        responses=errors(),
    )
    async def delete_memo(self, ctx: RequestContext, memo: MemoId) -> dict[str, Any]:
        """Move the memo (with its comments) to its creator's trash: 404 from now on.

        Undo with ``POST /api/v1/memos/{memo}:undelete``; gone for good after the
        retention period or ``:purge`` (app.memos.trash).
        """
        uid = valid_uid(resource_id(memo, "memos", field="memo"), field="memo")
        row = await load_for_read(ctx.db, uid, ctx.user, ctx.mode)
        await trash_memo(ctx.db, ctx.write, row)
        return {}
