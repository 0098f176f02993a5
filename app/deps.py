"""Request-scoped dependencies and guards, wired once in ``app.server``.

One request, one transaction: ``provide_db`` opens it and commits when the
handler returns, or rolls back when it raises, so a failed write leaves
nothing behind. Handlers never commit.

A request is a read or a write by its method (GET, HEAD and OPTIONS read;
a handler may say otherwise with ``opt={"tx": "read"}`` or ``"write"``). A
read is one snapshot (:func:`app.db.transactions.read_transaction`). A
write's transaction opens at its first statement (:func:`~app.db.
transactions.lazy_write`), after the body was read and parsed (Litestar
decodes ``data`` before it resolves dependencies); what validation needs
first is read in :func:`~app.db.transactions.read_phase`, so the write lock
is held only for the write itself.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

from litestar import Request
from litestar.connection import ASGIConnection
from litestar.datastructures import State
from litestar.handlers.base import BaseRouteHandler
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.caller import Caller
from app.auth.middleware import ACCESS_SCOPE_KEY
from app.db.transactions import TxKind, read_phase, transaction
from app.errors import PermissionDenied, Unauthenticated
from app.instance.store import AccessSettings, access_from, load_access
from app.settings import Settings

READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def request_kind(request: Request[Any, Any, Any]) -> TxKind:
    """Read or write, by the handler's ``opt["tx"]`` or else by the HTTP method."""
    declared = request.route_handler.opt.get("tx")
    if declared in ("read", "write"):
        return TxKind(declared)
    return TxKind.READ if request.method in READ_METHODS else TxKind.WRITE


async def provide_db(
    request: Request[Any, Any, Any], state: State
) -> AsyncIterator[AsyncConnection]:
    kind = request_kind(request)
    # A slot before the connection, writes first (app.db.slots, decision 0044).
    async with state.slots.slot(kind), transaction(state.engine, kind) as conn:
        yield conn


def provide_caller(request: Request[Any, Any, Any]) -> Caller | None:
    user = request.scope.get("user")
    return user if isinstance(user, Caller) else None


def provide_now() -> int:
    """The request's clock, fixed once (CEL's ``now``, timestamps of writes)."""
    return int(time.time())


def provide_settings(state: State) -> Settings:
    settings: Settings = state.settings
    return settings


async def provide_access(
    request: Request[Any, Any, Any], db: AsyncConnection, state: State
) -> AccessSettings:
    settings: Settings = state.settings
    default = AccessSettings(content_length_limit=settings.content_length_limit)
    read = request.scope.get(ACCESS_SCOPE_KEY)
    if isinstance(read, tuple):  # the caller's statement read it (app.auth.middleware)
        access = access_from(read[0], default)
    else:
        async with read_phase(db):  # a write's lock is not taken for the settings
            access = await load_access(db, default)
    # The body limit of memo routes (app.api.body_limits) follows the largest limit seen.
    if access.content_length_limit > getattr(state, "content_length_seen", 0):
        state.content_length_seen = access.content_length_limit
    return access


def requires_user(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    if not isinstance(connection.scope.get("user"), Caller):
        raise Unauthenticated("authentication required")


def requires_session(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    """Keys cannot mint keys nor manage credentials: only a session or a sign-in token passes."""
    user = connection.scope.get("user")
    if not isinstance(user, Caller):
        raise Unauthenticated("authentication required")
    if user.pat_id is not None:
        raise PermissionDenied(
            "personal access tokens cannot manage tokens or credentials: sign in instead"
        )


def management_plane(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    """Restricted keys are barred from users, settings and token management."""
    user = connection.scope.get("user")
    if isinstance(user, Caller) and user.is_restricted:
        raise PermissionDenied("a restricted access token cannot use the management API")
