"""``GET /api/v1/memos/{memo}/history``: a memo's past versions."""

from __future__ import annotations

from litestar import Controller, get

from app.api.context import RequestContext
from app.api.paging import page_size as clamp_page_size
from app.api.params import PageSize, PageToken
from app.api.responses import errors
from app.memos.history import HistoryQuery, ListMemoHistoryResponse, list_history
from app.memos.lookup import MemoName, memo_uid


class MemoHistoryController(Controller):
    path = "/api/v1/memos/{memo:str}/history"
    tags = ("MemoService",)

    @get("", operation_id="MemoService_ListMemoHistory", responses=errors())
    async def list_memo_history(
        self,
        ctx: RequestContext,
        memo: MemoName,
        page_size: PageSize = None,
        page_token: PageToken = None,
    ) -> ListMemoHistoryResponse:
        """Versions newest first, readable exactly when the memo is readable now."""
        query = HistoryQuery(
            uid=memo_uid(memo),
            caller=ctx.caller,
            mode=ctx.mode,
            page_size=clamp_page_size(page_size),
            page_token=page_token or None,
        )
        return await list_history(ctx.db, query, ctx.settings.secret)
