"""``POST /auth/refresh`` (Memos 0.31 AuthService.RefreshToken): a session, renewed.

Memos pairs a short access token with a refresh cookie. Daybook's session
token is both, so refreshing rotates it: a new token with a fresh lifetime
replaces the one presented, which stops working in the same transaction
(a stolen token cannot be refreshed alongside its owner's, and a refresh
never extends a token beyond one lifetime from now). Personal access tokens
are not sessions and cannot be refreshed.
"""

from __future__ import annotations

import secrets
from typing import Any

import msgspec
from litestar import Controller, Response, post
from litestar.datastructures import Cookie
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.caller import Caller
from app.api.responses import errors
from app.api.structs import In, Out, rfc3339
from app.auth.middleware import SESSION_COOKIE
from app.auth.secrets import SESSION_PREFIX, digest, new_secret
from app.db.schema import auth_session
from app.errors import Unauthenticated
from app.settings import Settings


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
        self,
        db: AsyncConnection,
        caller: Caller | None,
        settings: Settings,
        now: int,
        data: RefreshTokenRequest | None = None,
    ) -> Response[RefreshTokenResponse]:
        if caller is None or caller.session_id is None:
            raise Unauthenticated(
                "refresh needs a signed-in session (personal access tokens do not refresh)"
            )
        token = new_secret(SESSION_PREFIX)
        csrf = secrets.token_urlsafe(24)
        expires = now + settings.session_lifetime
        gone = await db.execute(
            auth_session.delete().where(
                auth_session.c.id == caller.session_id, auth_session.c.expires_ts > now
            )
        )
        if gone.rowcount != 1:  # refreshed or signed out meanwhile
            raise Unauthenticated("the session has ended: sign in again")
        await db.execute(
            auth_session.insert().values(
                user_id=caller.user_id,
                token_hash=digest(token),
                csrf_token=csrf,
                created_ts=now,
                expires_ts=expires,
                last_seen_ts=now,
            )
        )
        cookie = Cookie(
            key=SESSION_COOKIE,
            value=token,
            httponly=True,
            samesite="lax",
            path="/",
            max_age=settings.session_lifetime,
            secure=settings.public_url.startswith("https://"),
        )
        body = RefreshTokenResponse(
            access_token=token, expires_at=rfc3339(expires), csrf_token=csrf
        )
        return Response(body, cookies=[cookie])
