"""Memos 0.31's user webhooks (``users/{u}/webhooks``), plus Daybook's delivery log.

Only the user themself manages their webhooks: Memos lets an admin create
one on another user's account, which would send that user's PRIVATE memos to
the admin's URL; Daybook refuses (403). Restricted keys are barred, as from
every management route. The secret is never in a List/Create/Update answer,
only in ``:getSigningSecret``.
"""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, delete, get, patch, post
from litestar.params import Parameter

from app.api.context import RequestContext
from app.api.paging import page_size as clamp_page_size
from app.api.params import PageSize
from app.api.responses import errors
from app.deps import management_plane, requires_user
from app.webhooks import service
from app.webhooks.schemas import (
    ListUserWebhooksResponse,
    ListWebhookDeliveriesResponse,
    SigningSecretResponse,
    UserWebhook,
    UserWebhookIn,
)

UserName = Annotated[str, Parameter(max_length=80)]
WebhookId = Annotated[str, Parameter(max_length=64)]


class WebhookController(Controller):
    path = "/api/v1/users/{user:str}/webhooks"
    tags = ("UserService",)
    guards = [requires_user, management_plane]  # noqa: RUF012 (Litestar's API)

    @get("", operation_id="UserService_ListUserWebhooks", responses=errors())
    async def list_webhooks(self, ctx: RequestContext, user: UserName) -> ListUserWebhooksResponse:
        username = service.own(ctx.user, user)
        rows = await service.list_hooks(ctx.db, ctx.user)
        return ListUserWebhooksResponse(webhooks=[service.hook_out(username, r) for r in rows])

    @post("", operation_id="UserService_CreateUserWebhook", status_code=200, responses=errors())
    async def create_webhook(
        self, ctx: RequestContext, user: UserName, data: UserWebhookIn
    ) -> UserWebhook:
        username = service.own(ctx.user, user)
        row = await service.create_hook(ctx.db, ctx.settings, ctx.user, ctx.now, data)
        return service.hook_out(username, row)

    @patch("/{hook:str}", operation_id="UserService_UpdateUserWebhook", responses=errors())
    async def update_webhook(
        self,
        ctx: RequestContext,
        user: UserName,
        hook: WebhookId,
        data: UserWebhookIn,
        update_mask: Annotated[str | None, Parameter(query="updateMask", max_length=256)] = None,
    ) -> UserWebhook:
        username = service.own(ctx.user, user)
        row = await service.load_hook(ctx.db, ctx.user, service.hook_uid(hook, username))
        row = await service.update_hook(
            ctx.db, ctx.settings, ctx.user, ctx.now, row, data, update_mask
        )
        return service.hook_out(username, row)

    @delete(
        "/{hook:str}",
        operation_id="UserService_DeleteUserWebhook",
        status_code=200,
        responses=errors(),
    )
    async def delete_webhook(
        self, ctx: RequestContext, user: UserName, hook: WebhookId
    ) -> dict[str, Any]:
        username = service.own(ctx.user, user)
        row = await service.load_hook(ctx.db, ctx.user, service.hook_uid(hook, username))
        await service.delete_hook(ctx.db, row)
        return {}

    @get(
        "/{hook:str}/:getSigningSecret",
        operation_id="UserService_GetUserWebhookSigningSecret",
        responses=errors(),
    )
    async def signing_secret(
        self, ctx: RequestContext, user: UserName, hook: WebhookId
    ) -> SigningSecretResponse:
        username = service.own(ctx.user, user)
        row = await service.load_hook(ctx.db, ctx.user, service.hook_uid(hook, username))
        return SigningSecretResponse(signing_secret=row.secret)

    @get(
        "/{hook:str}/deliveries",
        operation_id="UserService_ListUserWebhookDeliveries",
        responses=errors(),
    )
    async def deliveries(
        self,
        ctx: RequestContext,
        user: UserName,
        hook: WebhookId,
        page_size: PageSize = None,
        page_token: Annotated[str | None, Parameter(query="pageToken", max_length=32)] = None,
    ) -> ListWebhookDeliveriesResponse:
        """The webhook's delivery attempts, newest first (owner only)."""
        username = service.own(ctx.user, user)
        row = await service.load_hook(ctx.db, ctx.user, service.hook_uid(hook, username))
        found, token = await service.delivery_page(
            ctx.db, row.id, clamp_page_size(page_size), page_token
        )
        return ListWebhookDeliveriesResponse(deliveries=found, next_page_token=token)
