"""MemoService_CreateMemoShare / ListMemoShares / DeleteMemoShare / GetSharedMemo."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, Response, delete, get, post
from litestar.params import Parameter

from app.api.context import RequestContext, writable_key
from app.api.responses import errors
from app.api.structs import parse_time
from app.deps import requires_user
from app.memos import schemas
from app.memos.lookup import MemoName, readable_memo
from app.shares.schemas import CreateMemoShareRequest, ListMemoSharesResponse, MemoShare
from app.shares.service import (
    create_share,
    list_shares,
    load_shared_memo,
    revoke_share,
    shared_memo_view,
)

Token = Annotated[str, Parameter(max_length=128)]


class MemoShareController(Controller):
    path = "/api/v1/memos/{memo:str}/shares"
    tags = ("MemoService",)
    guards = [requires_user]  # noqa: RUF012 (Litestar's layer attribute)

    @post(
        "",
        operation_id="MemoService_CreateMemoShare",
        status_code=200,
        responses=errors(409),
        guards=[writable_key],
    )
    async def create_share(
        self, ctx: RequestContext, memo: MemoName, data: CreateMemoShareRequest | None = None
    ) -> MemoShare:
        row = await readable_memo(ctx.db, memo, ctx.user, ctx.mode)
        raw = None
        if data is not None:
            raw = data.memo_share.expire_time if data.memo_share else data.expire_time
        expires = parse_time(raw, "expireTime") if raw else None
        return await create_share(ctx.db, ctx.user, row, expires, ctx.now)

    @get("", operation_id="MemoService_ListMemoShares", responses=errors())
    async def list_shares(self, ctx: RequestContext, memo: MemoName) -> ListMemoSharesResponse:
        row = await readable_memo(ctx.db, memo, ctx.user, ctx.mode)
        return ListMemoSharesResponse(memo_shares=await list_shares(ctx.db, ctx.user, row))

    @delete(
        "/{share:str}",
        operation_id="MemoService_DeleteMemoShare",
        status_code=200,
        responses=errors(),
        guards=[writable_key],
    )
    async def delete_share(
        self, ctx: RequestContext, memo: MemoName, share: Token
    ) -> dict[str, Any]:
        row = await readable_memo(ctx.db, memo, ctx.user, ctx.mode)
        await revoke_share(ctx.db, ctx.user, row, share)
        return {}


class SharedMemoController(Controller):
    path = "/api/v1/shares"
    tags = ("MemoService",)

    @get("/{token:str}/memo", operation_id="MemoService_GetSharedMemo", responses=errors())
    async def get_shared_memo(self, ctx: RequestContext, token: Token) -> Response[schemas.Memo]:
        row = await load_shared_memo(ctx.db, token, ctx.now)
        out = await shared_memo_view(ctx.db, row, ctx.mode)
        return Response(out, headers={"Cache-Control": "private, no-store"})
