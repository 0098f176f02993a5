"""MemoViewService and Memos 0.30's ShortcutService: the same saved filters, two names.

The handlers only pick the collection name; the rules and the SQL are in
``app.views.service``.
"""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, delete, get, patch, post
from litestar.params import Parameter

from app.api.context import RequestContext, writable_key
from app.api.responses import errors
from app.deps import requires_user
from app.views import service
from app.views.schemas import ListMemoViewsResponse, ListShortcutsResponse, MemoView, MemoViewIn

UserName = Annotated[str, Parameter(max_length=80)]
ViewId = Annotated[int, Parameter(ge=1, le=2**31 - 1)]
Mask = Annotated[str | None, Parameter(query="updateMask", max_length=512)]


class MemoViewController(Controller):
    path = "/api/v1/users/{user:str}/views"
    tags = ("MemoViewService",)
    guards = [requires_user]  # noqa: RUF012 (Litestar's declared layer attribute)

    @get("", operation_id="MemoViewService_ListMemoViews", responses=errors())
    async def list_views(self, ctx: RequestContext, user: UserName) -> ListMemoViewsResponse:
        found = await service.list_views(ctx.db, ctx.user, user, "views")
        return ListMemoViewsResponse(memo_views=found, views=found)

    @get("/{view_id:int}", operation_id="MemoViewService_GetMemoView", responses=errors())
    async def get_view(self, ctx: RequestContext, user: UserName, view_id: ViewId) -> MemoView:
        username = service.owner_name(ctx.user, user)
        return service.view_out(username, await service.load_view(ctx.db, ctx.user, view_id))

    @post(
        "",
        operation_id="MemoViewService_CreateMemoView",
        status_code=200,
        guards=[writable_key],
        responses=errors(),
    )
    async def create_view(self, ctx: RequestContext, user: UserName, data: MemoViewIn) -> MemoView:
        return await service.create_view(ctx.db, ctx.user, ctx.now, user, data, "views")

    @patch(
        "/{view_id:int}",
        operation_id="MemoViewService_UpdateMemoView",
        guards=[writable_key],
        responses=errors(),
    )
    async def update_view(
        self,
        ctx: RequestContext,
        user: UserName,
        view_id: ViewId,
        data: MemoViewIn,
        update_mask: Mask = None,
    ) -> MemoView:
        return await service.update_view(
            ctx.db, ctx.user, ctx.now, user, view_id, data, update_mask, "views"
        )

    @delete(
        "/{view_id:int}",
        operation_id="MemoViewService_DeleteMemoView",
        status_code=200,
        guards=[writable_key],
        responses=errors(),
    )
    async def delete_view(
        self, ctx: RequestContext, user: UserName, view_id: ViewId
    ) -> dict[str, Any]:
        return await service.delete_view(ctx.db, ctx.user, user, view_id)


class ShortcutController(Controller):
    """Memos 0.30's ``ShortcutService``: the same saved filters under their older name."""

    path = "/api/v1/users/{user:str}/shortcuts"
    tags = ("ShortcutService",)
    guards = [requires_user]  # noqa: RUF012 (Litestar's declared layer attribute)

    @get("", operation_id="ShortcutService_ListShortcuts", responses=errors())
    async def list_shortcuts(self, ctx: RequestContext, user: UserName) -> ListShortcutsResponse:
        found = await service.list_views(ctx.db, ctx.user, user, "shortcuts")
        return ListShortcutsResponse(shortcuts=found)

    @get("/{view_id:int}", operation_id="ShortcutService_GetShortcut", responses=errors())
    async def get_shortcut(self, ctx: RequestContext, user: UserName, view_id: ViewId) -> MemoView:
        username = service.owner_name(ctx.user, user)
        row = await service.load_view(ctx.db, ctx.user, view_id)
        return service.view_out(username, row, "shortcuts")

    @post(
        "",
        operation_id="ShortcutService_CreateShortcut",
        status_code=200,
        guards=[writable_key],
        responses=errors(),
    )
    async def create_shortcut(
        self, ctx: RequestContext, user: UserName, data: MemoViewIn
    ) -> MemoView:
        return await service.create_view(ctx.db, ctx.user, ctx.now, user, data, "shortcuts")

    @patch(
        "/{view_id:int}",
        operation_id="ShortcutService_UpdateShortcut",
        guards=[writable_key],
        responses=errors(),
    )
    async def update_shortcut(
        self,
        ctx: RequestContext,
        user: UserName,
        view_id: ViewId,
        data: MemoViewIn,
        update_mask: Mask = None,
    ) -> MemoView:
        return await service.update_view(
            ctx.db, ctx.user, ctx.now, user, view_id, data, update_mask, "shortcuts"
        )

    @delete(
        "/{view_id:int}",
        operation_id="ShortcutService_DeleteShortcut",
        status_code=200,
        guards=[writable_key],
        responses=errors(),
    )
    async def delete_shortcut(
        self, ctx: RequestContext, user: UserName, view_id: ViewId
    ) -> dict[str, Any]:
        return await service.delete_view(ctx.db, ctx.user, user, view_id)
