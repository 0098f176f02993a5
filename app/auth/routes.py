"""AuthService: sign-in into a server-side session, sign-out, the current user."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Controller, Request, Response, get, post
from litestar.datastructures import State

from app.api.bounds import Name, Password
from app.api.context import RequestContext
from app.api.responses import errors
from app.api.structs import In, Out, rfc3339
from app.auth import reset, sessions, throttle
from app.auth.middleware import SESSION_COOKIE
from app.auth.origin import check_json_same_origin
from app.auth.passwords import (
    PasswordTooLong,
    hash_password,
    needs_rehash,
    password_bytes,
    verify_dummy,
    verify_password,
)
from app.db.transactions import read_phase
from app.deps import requires_user
from app.errors import InvalidArgument, ResourceExhausted, Unauthenticated
from app.settings import Settings
from app.users.schemas import User, user_out
from app.users.service import valid_password


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


def _client(request: Request[Any, Any, Any]) -> str:
    """The throttled client: the peer, as resolved from trusted proxies only (app.server)."""
    return throttle.client_of(request.client.host if request.client else "")


def _policies(settings: Settings) -> tuple[throttle.Policy, throttle.Policy]:
    """Decision 0029's sign-in rows of the rate-limit table, served by the throttle:
    ``signin-user`` per (username, client), ``signin-client`` per client."""
    window = settings.signin_failure_window
    per_user = throttle.Policy(free=settings.signin_failure_limit, quiet=window)
    per_client = throttle.Policy(free=settings.signin_client_limit, quiet=window)
    return per_user, per_client


def _throttled(what: str, name: str, policy: throttle.Policy, wait: int) -> ResourceExhausted:
    """429 with the same ``RateLimit`` fields as the rate limiter's (app.limits.policy)."""
    return ResourceExhausted(
        f"too many {what} from this client: retry in {wait} s",
        retry_after=wait,
        headers={
            "RateLimit-Policy": f'"{name}";q={policy.free};w={policy.quiet}',
            "RateLimit": f'"{name}";r=0;t={wait}',
        },
    )


async def admit_password_guess(
    request: Request[Any, Any, Any], state: State, settings: Settings, username: str, now: int
) -> None:
    """Count one guess at ``username``'s password from this client (429 when throttled)."""
    per_user, _ = _policies(settings)
    key = throttle.user_key(username, _client(request))
    wait = await throttle.admit(state.engine, [(key, per_user)], now)
    if wait:
        raise _throttled("password attempts", "signin-user", per_user, wait)


def check_credential_request(request: Request[Any, Any, Any], settings: Settings) -> None:
    """JSON only, and not from another site (login CSRF; see app.auth.origin)."""
    check_json_same_origin(
        request.headers,
        scheme=request.url.scheme,
        host=request.headers.get("host", ""),
        public_url=settings.public_url,
    )


class ResetPasswordRequest(In):
    token: Name = ""
    new_password: Password = ""


class AuthController(Controller):
    path = "/api/v1/auth"
    tags = ("AuthService",)

    @post("/signin", operation_id="AuthService_SignIn", status_code=200, responses=errors())
    async def sign_in(
        self,
        request: Request[Any, Any, Any],
        ctx: RequestContext,
        state: State,
        data: SignInRequest,
    ) -> Response[SignInResponse]:
        settings, now = ctx.settings, ctx.now
        check_credential_request(request, settings)
        creds = data.password_credentials
        if isinstance(creds, msgspec.UnsetType) or not creds.username or not creds.password:
            raise InvalidArgument("passwordCredentials.username and .password are required")
        try:
            password_bytes(creds.password)
        except PasswordTooLong as exc:
            raise InvalidArgument(f"passwordCredentials.{exc}") from None
        client = _client(request)
        per_user, per_client = _policies(settings)
        user_key = throttle.user_key(creds.username, client)
        client_key = throttle.client_key(client)
        wait = await throttle.admit(
            state.engine, [(client_key, per_client), (user_key, per_user)], now
        )
        if wait:
            if (await throttle.peek(state.engine, user_key, now, per_user)).allowed:
                raise _throttled("sign-in attempts", "signin-client", per_client, wait)
            raise _throttled("sign-in attempts for this user", "signin-user", per_user, wait)
        async with read_phase(ctx.db):  # the password is checked with no write lock held
            row = await sessions.user_by_name(ctx.db, creds.username)
        if row is None:
            await verify_dummy(state.hasher, creds.password)
            ok = False
        else:
            ok = await verify_password(state.hasher, row.password_hash, creds.password)
        if not ok or row is None or row.state != "NORMAL":
            raise Unauthenticated("incorrect username or password, or the user is deactivated")
        await throttle.forget(state.engine, user_key)
        await throttle.credit(state.engine, client_key, per_client)
        await throttle.prune(state.engine, now)
        if needs_rehash(row.password_hash):  # a bcrypt hash imported from Memos: now argon2id
            rehashed = await hash_password(state.hasher, creds.password)
            await sessions.replace_password_hash(ctx.db, row.id, rehashed)
        opened = await sessions.open_session(ctx.db, row.id, now, settings.session_lifetime)
        body = SignInResponse(
            user=user_out(row, private=True),
            access_token=opened.token,
            access_token_expires_at=rfc3339(opened.expires),
            csrf_token=opened.csrf,
        )
        return Response(body, cookies=[sessions.session_cookie(opened.token, settings)])

    @post(
        "/passwordReset",
        operation_id="AuthService_ResetPassword",
        status_code=200,
        responses=errors(),
        exclude_from_auth=True,
    )
    async def reset_password(
        self,
        request: Request[Any, Any, Any],
        ctx: RequestContext,
        state: State,
        data: ResetPasswordRequest,
    ) -> User:
        """Redeem a one-time reset link: the user sets its own new password.

        Anonymous (the link is the credential). Every session of the user ends;
        the user then signs in with the new password.
        """
        check_credential_request(request, ctx.settings)
        password = valid_password(data.new_password, "newPassword")
        row = await reset.redeem(ctx.db, state.hasher, data.token, password, ctx.now)
        return user_out(row, private=True)

    @post("/signout", operation_id="AuthService_SignOut", status_code=200, responses=errors())
    async def sign_out(self, ctx: RequestContext) -> Response[dict[str, Any]]:
        if ctx.caller is not None and ctx.caller.session_id is not None:
            await sessions.close_session(ctx.db, ctx.caller.session_id)
        response: Response[dict[str, Any]] = Response({})
        response.delete_cookie(SESSION_COOKIE, path="/")
        return response

    @get(
        "/me", operation_id="AuthService_GetCurrentUser", guards=[requires_user], responses=errors()
    )
    async def me(self, ctx: RequestContext) -> CurrentUserResponse:
        caller = ctx.user
        row = await sessions.current_user(ctx.db, caller.user_id)
        csrf: str | msgspec.UnsetType = msgspec.UNSET
        if caller.session_id is not None:
            csrf = await sessions.session_csrf(ctx.db, caller.session_id) or msgspec.UNSET
        return CurrentUserResponse(
            user=user_out(row, private=True),
            csrf_token=csrf,
            restriction=(
                caller.restriction.to_json() if caller.restriction is not None else msgspec.UNSET
            ),
        )
