"""MemoService_ListMemoRelations / SetMemoRelations."""

from __future__ import annotations

from litestar import Controller, get, patch
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.caller import Caller
from app.api.responses import errors
from app.deps import requires_user
from app.instance.store import AccessSettings
from app.memos.lookup import MemoName, readable_memo
from app.relations.schemas import ListMemoRelationsResponse, SetMemoRelationsRequest
from app.relations.service import set_references
from app.relations.visible import visible_relations


class RelationController(Controller):
    path = "/api/v1/memos/{memo:str}/relations"
    tags = ("MemoService",)

    @get("", operation_id="MemoService_ListMemoRelations", responses=errors())
    async def list_relations(
        self, db: AsyncConnection, caller: Caller | None, access: AccessSettings, memo: MemoName
    ) -> ListMemoRelationsResponse:
        row = await readable_memo(db, memo, caller, access.access_mode)
        found = (
            await visible_relations(db, {row.id: row.version}, caller, access.access_mode)
        ).get(row.id, [])
        return ListMemoRelationsResponse(relations=found, total_size=len(found))

    @patch(
        "",
        operation_id="MemoService_SetMemoRelations",
        guards=[requires_user],
        responses=errors(),
    )
    async def set_relations(
        self,
        db: AsyncConnection,
        caller: Caller,
        access: AccessSettings,
        memo: MemoName,
        data: SetMemoRelationsRequest,
    ) -> ListMemoRelationsResponse:
        row = await readable_memo(db, memo, caller, access.access_mode)
        await set_references(db, caller, access.access_mode, row, data.relations)
        found = (
            await visible_relations(db, {row.id: row.version}, caller, access.access_mode)
        ).get(row.id, [])
        return ListMemoRelationsResponse(relations=found, total_size=len(found))
