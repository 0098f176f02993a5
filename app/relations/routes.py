"""MemoService_ListMemoRelations / SetMemoRelations."""

from __future__ import annotations

from litestar import Controller, get, patch

from app.api.context import RequestContext, writable_key
from app.api.responses import errors
from app.deps import requires_user
from app.memos.lookup import MemoName, readable_memo
from app.relations.schemas import ListMemoRelationsResponse, SetMemoRelationsRequest
from app.relations.service import set_references
from app.relations.visible import visible_relations


class RelationController(Controller):
    path = "/api/v1/memos/{memo:str}/relations"
    tags = ("MemoService",)

    @get("", operation_id="MemoService_ListMemoRelations", responses=errors())
    async def list_relations(
        self, ctx: RequestContext, memo: MemoName
    ) -> ListMemoRelationsResponse:
        row = await readable_memo(ctx.db, memo, ctx.caller, ctx.mode)
        found = (await visible_relations(ctx.db, {row.id: row.version}, ctx.caller, ctx.mode)).get(
            row.id, []
        )
        return ListMemoRelationsResponse(relations=found, total_size=len(found))

    @patch(
        "",
        operation_id="MemoService_SetMemoRelations",
        guards=[requires_user, writable_key],
        responses=errors(),
    )
    async def set_relations(
        self, ctx: RequestContext, memo: MemoName, data: SetMemoRelationsRequest
    ) -> ListMemoRelationsResponse:
        db, caller = ctx.db, ctx.user
        row = await readable_memo(db, memo, caller, ctx.mode)
        await set_references(db, caller, ctx.mode, row, data.relations)
        found = (await visible_relations(db, {row.id: row.version}, caller, ctx.mode)).get(
            row.id, []
        )
        return ListMemoRelationsResponse(relations=found, total_size=len(found))
