"""``POST /auth/refresh`` (Memos 0.31 AuthService.RefreshToken): a session, renewed.

Memos pairs a short access token with a refresh cookie. Daybook's session
token is both, so refreshing rotates it: a new token with a fresh lifetime
replaces the one presented, which stops working in the same transaction
(a stolen token cannot be refreshed alongside its owner's, and a refresh
never extends a token beyond one lifetime from now). Personal access tokens
are not sessions and cannot be refreshed.
"""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Controller, Response, post

from app.api.context import RequestContext
from app.api.responses import errors
from app.api.structs import In, Out, rfc3339
from app.auth import sessions
from app.errors import Unauthenticated


class RefreshTokenRequest(In):
    """Memos' request is empty; anything sent is ignored."""

    refresh_token: Any = msgspec.UNSET


class RefreshTokenResponse(Out):
    access_token: str
    expires_at: str
    csrf_token: str


class RefreshController(Controller):
    path = "/api/v1/auth"
    tags = ("AuthService",)

    @post("/refresh", operation_id="AuthService_RefreshToken", status_code=200, responses=errors())
    async def refresh(
        self, ctx: RequestContext, data: RefreshTokenRequest | None = None
    ) -> Response[RefreshTokenResponse]:
        caller = ctx.caller
        if caller is None or caller.session_id is None:
            raise Unauthenticated(
                "refresh needs a signed-in session (personal access tokens do not refresh)"
            )
        opened = await sessions.rotate_session(
            ctx.db, caller.session_id, caller.user_id, ctx.now, ctx.settings.session_lifetime
        )
        body = RefreshTokenResponse(
            access_token=opened.token, expires_at=rfc3339(opened.expires), csrf_token=opened.csrf
        )
        return Response(body, cookies=[sessions.session_cookie(opened.token, ctx.settings)])
