"""Request-scoped dependencies and guards, wired once in ``app.server``.

One request, one transaction: ``provide_request_context`` (``ctx``) opens
it and commits when the handler returns, or rolls back when it raises, so a
failed write leaves nothing behind. Handlers never commit.

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

import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

from litestar import Request
from litestar.connection import ASGIConnection
from litestar.datastructures import State
from litestar.handlers.base import BaseRouteHandler
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.caller import Caller
from app.api.context import RequestContext
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


OPEN_DB_KEY = "daybook.open_db"


class RequestAborted(Exception):
    """Passed to a request's database resources when no handler will finish them."""


async def provide_request_context(
    request: Request[Any, Any, Any], state: State
) -> AsyncIterator[RequestContext]:
    """The request's context: its slot and transaction, caller, access settings, clock.

    One provider, not one per value: Litestar resolves independent providers
    of a batch as tasks of an anyio task group, and four of them (the
    connection, caller, clock and settings) cost about as much CPU as a
    computed page's own statements (issue 15). ``db`` and ``access`` are read
    off this context (:func:`provide_db`), so a handler that asks for them and
    for ``ctx`` still has one transaction.

    The slot and transaction are held in an exit stack left in the scope.
    When a dependency resolved after this one raises, Litestar never resumes
    this generator (its cleanup group is entered only once every dependency
    is resolved), and only the garbage collector would close it: until then
    the slot, the connection and a write's lock stay taken. The stack in the
    scope lets :func:`close_abandoned_db` roll it back as soon as the request
    ends; a generator that is resumed removes it first.
    """
    kind = request_kind(request)
    stack = contextlib.AsyncExitStack()
    async with stack:
        request.scope[OPEN_DB_KEY] = stack  # type: ignore[literal-required]
        try:
            # A slot before the connection, writes first (app.db.slots, decision 0044).
            await stack.enter_async_context(state.slots.slot(kind))
            conn = await stack.enter_async_context(transaction(state.engine, kind))
            yield RequestContext(
                conn,
                provide_caller(request),
                await _access(request, conn, state),
                provide_settings(state),
                provide_now(),
            )
        finally:
            request.scope.pop(OPEN_DB_KEY, None)  # type: ignore[misc]


def provide_db(ctx: RequestContext) -> AsyncConnection:
    """The request's connection (the context's: one transaction per request)."""
    return ctx.db


def provide_access(ctx: RequestContext) -> AccessSettings:
    return ctx.access


async def close_abandoned_db(scope: Any) -> None:
    """Roll back and give back what :func:`provide_request_context` opened for a
    request whose dependency resolution failed after it yielded (called when the
    request is over)."""
    stack = scope.pop(OPEN_DB_KEY, None)
    if isinstance(stack, contextlib.AsyncExitStack):
        aborted = RequestAborted("a dependency failed after the connection was opened")
        await stack.__aexit__(RequestAborted, aborted, None)


def provide_caller(request: Request[Any, Any, Any]) -> Caller | None:
    user = request.scope.get("user")
    return user if isinstance(user, Caller) else None


def provide_now() -> int:
    """The request's clock, fixed once (CEL's ``now``, timestamps of writes)."""
    return int(time.time())


def provide_settings(state: State) -> Settings:
    settings: Settings = state.settings
    return settings


async def _access(
    request: Request[Any, Any, Any], db: AsyncConnection, state: State
) -> AccessSettings:
    """The instance's access settings: read by the caller's statement when there was one."""
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


async def requires_user(
    connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler
) -> None:
    if not isinstance(connection.scope.get("user"), Caller):
        raise Unauthenticated("authentication required")


async def requires_session(
    connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler
) -> None:
    """Keys cannot mint keys nor manage credentials: only a session or a sign-in token passes."""
    user = connection.scope.get("user")
    if not isinstance(user, Caller):
        raise Unauthenticated("authentication required")
    if user.pat_id is not None:
        raise PermissionDenied(
            "personal access tokens cannot manage tokens or credentials: sign in instead"
        )


async def management_plane(
    connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler
) -> None:
    """Restricted keys are barred from users, settings and token management."""
    user = connection.scope.get("user")
    if isinstance(user, Caller) and user.is_restricted:
        raise PermissionDenied("a restricted access token cannot use the management API")
