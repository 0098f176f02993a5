"""The request context: one provided dependency instead of five in every handler.

``app.deps.provide_request_context`` resolves ``ctx`` in one provider (the
request's transaction, caller, access settings, settings and clock), so a
handler declares one parameter and hands the services what they need from
it. That provider owns the transaction: the context holds its connection,
and nothing here opens or commits one.

``ctx.write`` is the ``WriteContext`` the memo services take (the signed-in
caller, the instance's access settings, the request's clock), so no handler
builds one by hand.

``writable_key`` is the guard for mutating routes: a restricted key whose
restriction does not allow writes is refused before the handler runs, with
the same 403 the services used to raise one by one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from litestar.connection import ASGIConnection
from litestar.handlers.base import BaseRouteHandler
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.caller import Caller
from app.access.vocab import AccessMode
from app.access.writes import READ_ONLY, key_may_write
from app.errors import PermissionDenied, Unauthenticated
from app.instance.store import AccessSettings
from app.settings import Settings

__all__ = ["RequestContext", "WriteContext", "writable_key"]


@dataclass(frozen=True, slots=True)
class WriteContext:
    """Who writes, under which instance settings, at what time: what a memo write needs."""

    caller: Caller
    access: AccessSettings
    now: int


@dataclass(frozen=True, slots=True)
class RequestContext:
    """What every handler needs about its request, resolved once."""

    db: AsyncConnection
    caller: Caller | None
    access: AccessSettings
    settings: Settings
    now: int

    @property
    def mode(self) -> AccessMode:
        return self.access.access_mode

    @property
    def user(self) -> Caller:
        """The signed-in caller; routes that reach this sit behind ``requires_user``."""
        if self.caller is None:
            raise Unauthenticated("authentication required")
        return self.caller

    @property
    def write(self) -> WriteContext:
        return WriteContext(self.user, self.access, self.now)


async def writable_key(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    """Refuse a read-only restricted key on a mutating route (sessions always pass)."""
    user = connection.scope.get("user")
    if isinstance(user, Caller) and not key_may_write(user):
        raise PermissionDenied(READ_ONLY)
