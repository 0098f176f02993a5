"""AuthService: sign-in into a server-side session, sign-out, the current user."""

from __future__ import annotations

import secrets
from typing import Any

import msgspec
import sqlalchemy as sa
from litestar import Controller, Request, Response, get, post
from litestar.datastructures import Cookie, State
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.caller import Caller
from app.api.bounds import Name, Password
from app.api.responses import errors
from app.api.structs import In, Out, rfc3339
from app.auth.middleware import SESSION_COOKIE
from app.auth.passwords import hash_password, needs_rehash, verify_dummy, verify_password
from app.auth.secrets import SESSION_PREFIX, digest, new_secret
from app.db.schema import auth_session, signin_failure, user_account
from app.db.transactions import read_phase, write_transaction
from app.deps import requires_user
from app.errors import InvalidArgument, ResourceExhausted, Unauthenticated
from app.settings import Settings
from app.users.schemas import User, user_out


class PasswordCredentials(In):
    username: Name = ""
    password: Password = ""


class SignInRequest(In):
    password_credentials: PasswordCredentials | msgspec.UnsetType = msgspec.UNSET


class SignInResponse(Out):
    user: User
    access_token: str
    access_token_expires_at: str
    csrf_token: str


class CurrentUserResponse(Out):
    user: User
    csrf_token: str | msgspec.UnsetType = msgspec.UNSET
    restriction: dict[str, Any] | msgspec.UnsetType = msgspec.UNSET


def _remote(request: Request[Any, Any, Any]) -> str:
    return (request.client.host if request.client else "")[:64]


async def _too_many_failures(
    engine: Any, username: str, remote: str, now: int, settings: Settings
) -> bool:
    since = now - settings.signin_failure_window
    async with engine.connect() as conn:
        by_user = (
            await conn.execute(
                sa.select(sa.func.count()).where(
                    signin_failure.c.username == username, signin_failure.c.created_ts > since
                )
            )
        ).scalar_one()
        by_remote = (
            await conn.execute(
                sa.select(sa.func.count()).where(
                    signin_failure.c.remote == remote, signin_failure.c.created_ts > since
                )
            )
        ).scalar_one()
    limit = settings.signin_failure_limit
    return bool(by_user >= limit or by_remote >= limit * 5)


async def _record_failure(engine: Any, username: str, remote: str, now: int) -> None:
    # Its own transaction: the request's transaction rolls back with the 401.
    async with write_transaction(engine) as conn:
        await conn.execute(
            signin_failure.insert().values(username=username[:64], remote=remote, created_ts=now)
        )


class AuthController(Controller):
    path = "/api/v1/auth"
    tags = ("AuthService",)

    @post("/signin", operation_id="AuthService_SignIn", status_code=200, responses=errors())
    async def sign_in(
        self,
        request: Request[Any, Any, Any],
        db: AsyncConnection,
        state: State,
        settings: Settings,
        now: int,
        data: SignInRequest,
    ) -> Response[SignInResponse]:
        creds = data.password_credentials
        if isinstance(creds, msgspec.UnsetType) or not creds.username or not creds.password:
            raise InvalidArgument("passwordCredentials.username and .password are required")
        remote = _remote(request)
        if await _too_many_failures(state.engine, creds.username, remote, now, settings):
            raise ResourceExhausted("too many failed sign-ins: try again later")
        async with read_phase(db):  # the password is checked with no write lock held
            row = (
                await db.execute(
                    sa.select(user_account).where(user_account.c.username == creds.username)
                )
            ).first()
        if row is None:
            await verify_dummy(state.hasher, creds.password)
            ok = False
        else:
            ok = await verify_password(state.hasher, row.password_hash, creds.password)
        if not ok or row is None or row.state != "NORMAL":
            await _record_failure(state.engine, creds.username, remote, now)
            raise Unauthenticated("incorrect username or password, or the user is deactivated")
        if needs_rehash(row.password_hash):  # a bcrypt hash imported from Memos: now argon2id
            rehashed = await hash_password(state.hasher, creds.password)
            await db.execute(
                user_account.update()
                .where(user_account.c.id == row.id)
                .values(password_hash=rehashed)
            )
        token = new_secret(SESSION_PREFIX)
        csrf = secrets.token_urlsafe(24)
        expires = now + settings.session_lifetime
        await db.execute(
            auth_session.insert().values(
                user_id=row.id,
                token_hash=digest(token),
                csrf_token=csrf,
                created_ts=now,
                expires_ts=expires,
                last_seen_ts=now,
            )
        )
        body = SignInResponse(
            user=user_out(row, private=True),
            access_token=token,
            access_token_expires_at=rfc3339(expires),
            csrf_token=csrf,
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
        return Response(body, cookies=[cookie])

    @post("/signout", operation_id="AuthService_SignOut", status_code=200, responses=errors())
    async def sign_out(
        self, db: AsyncConnection, caller: Caller | None
    ) -> Response[dict[str, Any]]:
        if caller is not None and caller.session_id is not None:
            await db.execute(auth_session.delete().where(auth_session.c.id == caller.session_id))
        response: Response[dict[str, Any]] = Response({})
        response.delete_cookie(SESSION_COOKIE, path="/")
        return response

    @get(
        "/me", operation_id="AuthService_GetCurrentUser", guards=[requires_user], responses=errors()
    )
    async def me(self, db: AsyncConnection, caller: Caller) -> CurrentUserResponse:
        row = (
            await db.execute(sa.select(user_account).where(user_account.c.id == caller.user_id))
        ).first()
        if row is None:
            raise Unauthenticated("the user no longer exists")
        csrf: str | msgspec.UnsetType = msgspec.UNSET
        if caller.session_id is not None:
            csrf = (
                await db.execute(
                    sa.select(auth_session.c.csrf_token).where(
                        auth_session.c.id == caller.session_id
                    )
                )
            ).scalar_one_or_none() or msgspec.UNSET
        return CurrentUserResponse(
            user=user_out(row, private=True),
            csrf_token=csrf,
            restriction=caller.restriction if caller.restriction is not None else msgspec.UNSET,
        )
