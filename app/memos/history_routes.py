"""``GET /api/v1/memos/{memo}/history``: a memo's past versions."""

from __future__ import annotations

from litestar import Controller, get
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.caller import Caller
from app.api.paging import page_size as clamp_page_size
from app.api.params import PageSize, PageToken
from app.api.responses import errors
from app.instance.store import AccessSettings
from app.memos.history import HistoryQuery, ListMemoHistoryResponse, list_history
from app.memos.lookup import MemoName, memo_uid
from app.settings import Settings


class MemoHistoryController(Controller):
    path = "/api/v1/memos/{memo:str}/history"
    tags = ("MemoService",)

    @get("", operation_id="MemoService_ListMemoHistory", responses=errors())
    async def list_memo_history(
        self,
        db: AsyncConnection,
        caller: Caller | None,
        access: AccessSettings,
        settings: Settings,
        memo: MemoName,
        page_size: PageSize = None,
        page_token: PageToken = None,
    ) -> ListMemoHistoryResponse:
        """Versions newest first, readable exactly when the memo is readable now."""
        query = HistoryQuery(
            uid=memo_uid(memo),
            caller=caller,
            mode=access.access_mode,
            page_size=clamp_page_size(page_size),
            page_token=page_token or None,
        )
        return await list_history(db, query, settings.secret)
