"""Resolve the caller from the request's credential, on every request.

Answers *who*, never *what may be seen*. Three credentials are accepted:
``Authorization: Bearer`` with a sign-in access token or a personal access
token, or the session cookie (from this origin only: ``app.auth.origin``). A
cookie-authenticated mutation must also carry
the session's CSRF token in ``X-CSRF-Token`` (double submit against the
server-side row), since the cookie is sent by the browser on its own. Headers
that claim another identity (``X-User-Id``, ``X-Impersonate`` ...) are never
read.
"""

from __future__ import annotations

import hmac
import time
from typing import Any

import sqlalchemy as sa
from litestar.connection import ASGIConnection
from litestar.middleware import AbstractAuthenticationMiddleware, AuthenticationResult
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from app.access.caller import Caller, Credential
from app.auth.caller_rows import CallerRows
from app.auth.origin import cookie_usable
from app.auth.secrets import PAT_PREFIX, digest
from app.db.generation import GENERATION_SCOPE_KEY, Generation, snapshot_token
from app.db.schema import access_token, auth_session, user_account
from app.db.transactions import write_transaction
from app.errors import PermissionDenied, Unauthenticated, Unavailable
from app.instance.store import access_value

SESSION_COOKIE = "daybook_session"
CSRF_HEADER = "x-csrf-token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
LAST_USED_GRANULARITY = 60  # seconds between last-use writes for one token
# The ACCESS setting read by the caller's statement, as ``(value,)``: the
# request's context (``app.deps``) then needs no statement of its own (issue 15).
ACCESS_SCOPE_KEY = "daybook.access_setting"


async def resolve_bearer(
    engine: AsyncEngine, secret: str, now: int, scope: dict[str, Any] | None = None
) -> Caller | None:
    """The caller for a bearer secret, or None when it is unknown or expired.

    The same statement reads the instance's ACCESS setting, left in ``scope``.
    """
    hashed = digest(secret)
    if secret.startswith(PAT_PREFIX):
        row = await _credential(engine, _KEY_ROW, "key", hashed, now, scope)
        if row is None:
            return None
        if scope is not None:
            _leave_in_scope(scope, row)
        if row.last_used_ts is None or row.last_used_ts < now - LAST_USED_GRANULARITY:
            await _touch(engine, row.id, now)
        return Caller(
            user_id=row.user_id,
            username=row.username,
            role=row.role,
            credential=Credential.PAT,
            pat_id=row.id,
            pat_description=row.description,
            restriction=row.restriction,
        )
    session_row = await _credential(engine, _SESSION_ROW, "session", hashed, now, scope)
    if session_row is None:
        return None
    if scope is not None:
        _leave_in_scope(scope, session_row)
    return Caller(
        user_id=session_row.user_id,
        username=session_row.username,
        role=session_row.role,
        credential=Credential.ACCESS_TOKEN,
        session_id=session_row.id,
    )


async def _credential(
    engine: AsyncEngine,
    statement: sa.Select[Any],
    kind: str,
    hashed: str,
    now: int,
    scope: dict[str, Any] | None,
) -> Any | None:
    """The credential's row: kept from an earlier request while the database is
    unchanged (``app.auth.caller_rows``, SQLite), else read by ``statement`` on a
    connection of its own, which is returned to the pool at once."""
    kept = None if scope is None else _kept_rows(scope)
    if kept is not None:
        rows, token = kept
        row = rows.get((kind, hashed), token, now)
        if row is not None:
            return row
    async with engine.connect() as conn:
        row = (await conn.execute(statement, {"token_hash": hashed, "now": now})).first()
    if kept is not None and row is not None:
        rows.put((kind, hashed), token, row)
    return row


def _kept_rows(scope: dict[str, Any]) -> tuple[CallerRows, str] | None:
    """The process's caller rows and the generation read now, where that is local.

    The token is left in ``scope`` too: it was read before the caller's statement,
    so before the request's snapshot, and the page cache stamps its answer with
    it (``app.db.generation``)."""
    state = getattr(scope.get("app"), "state", None)
    rows = getattr(state, "caller_rows", None)
    generation: Generation | None = getattr(state, "generation", None)
    if not isinstance(rows, CallerRows) or generation is None:
        return None
    token = generation.read_local()
    if token is None:
        return None
    scope[GENERATION_SCOPE_KEY] = token
    return rows, token


def _leave_in_scope(scope: dict[str, Any], row: Any) -> None:
    """What the caller's statement read for the rest of the request: the ACCESS
    setting (for the request context, ``app.deps``) and, on PostgreSQL, the
    database's generation (``app.api.page_cache``)."""
    scope[ACCESS_SCOPE_KEY] = (row.access_setting,)
    if row.generation is not None:
        scope[GENERATION_SCOPE_KEY] = row.generation


async def _touch(engine: AsyncEngine, token_id: int, now: int) -> None:
    """Record a key's last use in its own short write transaction (best effort:
    a busy or read-only database does not refuse the request for it)."""
    try:
        async with write_transaction(engine) as conn:
            await conn.execute(
                access_token.update()
                .where(access_token.c.id == token_id, _stale(now))
                .values(last_used_ts=now)
            )
    except (DBAPIError, Unavailable):
        return


def _stale(now: int) -> sa.ColumnElement[bool]:
    return sa.or_(
        access_token.c.last_used_ts.is_(None),
        access_token.c.last_used_ts < now - LAST_USED_GRANULARITY,
    )


def _credential_row(table: sa.Table, *columns: Any, live: Any) -> sa.Select[Any]:
    """The caller's statement for a credential stored in ``table``: its ``columns``,
    its active user, the ACCESS setting and the database's generation (what
    :func:`_leave_in_scope` leaves for the request), for ``:token_hash`` while
    ``live`` holds. Built once per credential kind, with the digest and the
    clock as bound parameters: a statement object SQLAlchemy has fingerprinted
    before costs no cache-key walk on the next request (issue 15)."""
    return (
        sa.select(
            *columns,
            user_account.c.id.label("user_id"),
            user_account.c.username,
            user_account.c.role,
            access_value().label("access_setting"),
            snapshot_token(),
        )
        .join(user_account, user_account.c.id == table.c.user_id)
        .where(
            table.c.token_hash == sa.bindparam("token_hash", type_=table.c.token_hash.type),
            live,
            user_account.c.state == "NORMAL",
        )
    )


# Both tables keep expiry as the same Timestamp type.
_NOW = sa.bindparam("now", type_=auth_session.c.expires_ts.type)
_KEY_ROW = _credential_row(
    access_token,
    access_token.c.id,
    access_token.c.description,
    access_token.c.restriction,
    access_token.c.last_used_ts,
    access_token.c.expires_ts,
    live=sa.or_(access_token.c.expires_ts.is_(None), access_token.c.expires_ts > _NOW),
)
_SESSION_ROW = _credential_row(
    auth_session,
    auth_session.c.id,
    auth_session.c.csrf_token,
    auth_session.c.expires_ts,
    live=auth_session.c.expires_ts > _NOW,
)


class AuthMiddleware(AbstractAuthenticationMiddleware):
    async def authenticate_request(
        self, connection: ASGIConnection[Any, Any, Any, Any]
    ) -> AuthenticationResult:
        engine: AsyncEngine = connection.app.state.engine
        now = int(time.time())
        header = connection.headers.get("authorization")
        if header:
            scheme, _, secret = header.partition(" ")
            if scheme.lower() != "bearer" or not secret.strip():
                raise Unauthenticated("unsupported authorization header: use 'Bearer <token>'")
            caller = await resolve_bearer(engine, secret.strip(), now, connection.scope)  # type: ignore[arg-type]
            if caller is None:
                raise Unauthenticated("invalid or expired access token")
            return AuthenticationResult(user=caller, auth=None)
        cookie = connection.cookies.get(SESSION_COOKIE)
        if cookie and not cookie_usable(
            connection.headers,
            scheme=connection.url.scheme,
            host=connection.headers.get("host", ""),
            public_url=getattr(connection.app.state.settings, "public_url", ""),
        ):
            cookie = None  # cross-origin: the cookie never authenticates (decision 0029)
        if cookie:
            scope: dict[str, Any] = connection.scope  # type: ignore[assignment]
            row = await _credential(engine, _SESSION_ROW, "session", digest(cookie), now, scope)
            if row is not None:
                _leave_in_scope(scope, row)
                if connection.scope.get("method", "GET") not in SAFE_METHODS:
                    sent = connection.headers.get(CSRF_HEADER, "")
                    if not hmac.compare_digest(sent.encode(), row.csrf_token.encode()):
                        raise PermissionDenied("CSRF token missing or invalid: send X-CSRF-Token")
                caller = Caller(
                    user_id=row.user_id,
                    username=row.username,
                    role=row.role,
                    credential=Credential.SESSION,
                    session_id=row.id,
                )
                return AuthenticationResult(user=caller, auth=None)
        return AuthenticationResult(user=None, auth=None)
