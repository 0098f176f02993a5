"""Personal access tokens: minted only from a session, secret shown once.

The handlers pick the guards; the rules and the SQL are in ``app.tokens.service``.
"""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, delete, get, post
from litestar.params import Parameter

from app.api.context import RequestContext
from app.api.responses import errors
from app.deps import management_plane, requires_session, requires_user
from app.tokens import service
from app.tokens.schemas import CreateTokenRequest, CreateTokenResponse, ListTokensResponse

UserName = Annotated[str, Parameter(max_length=80)]


class TokenController(Controller):
    path = "/api/v1/users/{user:str}/personalAccessTokens"
    tags = ("UserService",)

    @get(
        "",
        operation_id="UserService_ListPersonalAccessTokens",
        guards=[requires_user, management_plane],
        responses=errors(),
    )
    async def list_tokens(self, ctx: RequestContext, user: UserName) -> ListTokensResponse:
        found = await service.list_tokens(ctx.db, ctx.user, user)
        return ListTokensResponse(personal_access_tokens=found)

    @post(
        "",
        operation_id="UserService_CreatePersonalAccessToken",
        status_code=200,
        guards=[requires_session, management_plane],
        responses=errors(),
    )
    async def create_token(
        self, ctx: RequestContext, user: UserName, data: CreateTokenRequest
    ) -> CreateTokenResponse:
        return await service.create_token(ctx.db, ctx.user, ctx.now, user, data)

    @delete(
        "/{token_id:int}",
        operation_id="UserService_DeletePersonalAccessToken",
        status_code=200,
        guards=[requires_session, management_plane],
        responses=errors(),
    )
    async def delete_token(
        self,
        ctx: RequestContext,
        user: UserName,
        token_id: Annotated[int, Parameter(ge=1, le=2**31 - 1)],
    ) -> dict[str, Any]:
        await service.delete_token(ctx.db, ctx.user, user, token_id)
        return {}
