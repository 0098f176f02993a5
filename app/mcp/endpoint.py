"""The ``/mcp`` route: HTTP checks here, the protocol (``server``) started on first use.

For one request, in order:

1. Litestar's authentication middleware has already resolved the credential
   (a bad token is a 401 before MCP sees anything).
2. ``McpEndpoint.handle`` answers anything but POST with 405 (a GET would open
   an SSE stream in the SDK), refuses a foreign ``Origin`` with 403, and drops
   ``Mcp-Session-Id``: there are no sessions.
3. The SDK's session manager (``server.McpProtocol``) answers the JSON-RPC.

Why the protocol starts on first use: the ``mcp`` SDK, and what only it
imports, is about 33 MB resident in every worker (decision 0054), and most
workers of most instances never see an MCP request. The first one imports it
in a thread, then builds the tools from the app's OpenAPI document on the
event loop (as the first ``tools/list`` always did) and starts the session
manager in a task the app's lifespan stops: about 0.7 s for that request.
A failed start is logged and answered 503 with ``Retry-After`` for
:data:`RETRY_SECONDS`, then tried again by the next request; requests
arriving while the app stops are 503 too. The allowlist is still checked at
startup, against the app's operation ids, so a bad allowlist stops the
server before it serves.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Any

import structlog
from litestar import Litestar
from litestar.enums import ScopeType
from litestar.handlers import asgi
from litestar.handlers.asgi_handlers import ASGIRouteHandler
from litestar.types import Receive, Scope, Send

from app.api.raw_errors import send_error
from app.mcp.allowlist import ALLOWLIST
from app.mcp.origin import origin_allowed
from app.mcp.tools import check_allowlist
from app.settings import Settings

if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

__all__ = ["McpEndpoint", "schema_operation_ids"]

log = structlog.get_logger("daybook.mcp")

PROTOCOL_MODULE = "app.mcp.server"
RETRY_SECONDS = 5  # after a failed start, requests are 503 this long before the next try


def _import_protocol() -> Any:
    return importlib.import_module(PROTOCOL_MODULE)


def schema_operation_ids(app: Litestar) -> set[str]:
    """The operationIds the app's OpenAPI document will list, without rendering it."""
    ids: set[str] = set()
    for route in app.routes:
        for handler in getattr(route, "route_handlers", ()):
            if isinstance(handler.operation_id, str) and handler.resolve_include_in_schema():
                ids.add(handler.operation_id)
    return ids


class McpEndpoint:
    """``/mcp`` for one app: its route handler and its lifespan."""

    def __init__(
        self,
        settings: Settings,
        document: Callable[[Litestar], dict[str, Any]],
        allowlist: Sequence[str] = ALLOWLIST,
    ) -> None:
        self.settings = settings
        self.allowlist = tuple(allowlist)
        self._document = document
        self._app: Litestar | None = None
        self._stop: asyncio.Event | None = None
        self._owner: asyncio.Task[None] | None = None
        self._started: asyncio.Future[None] | None = None
        self._manager: StreamableHTTPSessionManager | None = None
        self._failed_at = -float(RETRY_SECONDS)  # monotonic time of the last failed start
        self.route_handler: ASGIRouteHandler = asgi(
            "/mcp", copy_scope=True, include_in_schema=False
        )(self.handle)

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Litestar) -> AsyncIterator[None]:
        # Refuse to start, cheaply: a bad allowlist fails here, before serving.
        check_allowlist(self.allowlist, schema_operation_ids(app))
        self._app, self._stop = app, asyncio.Event()
        try:
            yield
        finally:
            self._stop.set()
            owner, self._owner = self._owner, None
            if owner is not None:
                with contextlib.suppress(Exception):
                    await owner
            self._app = self._started = self._manager = None

    async def _running_manager(self) -> StreamableHTTPSessionManager | None:
        """The session manager, started by the first request that needs it; None
        when the app is stopping or the start failed (logged)."""
        if self._manager is not None:
            return self._manager
        app, stop = self._app, self._stop
        if app is None or stop is None or stop.is_set():
            return None
        if self._owner is None or self._owner.done():
            if time.monotonic() - self._failed_at < RETRY_SECONDS:
                return None  # a start just failed: no import and traceback per request
            # No await between the check and the assignment: one start at a time.
            self._started = asyncio.get_running_loop().create_future()
            self._owner = asyncio.create_task(
                self._own(app, stop, self._started), name="daybook-mcp"
            )
        assert self._started is not None
        try:
            # Shielded: a cancelled request must not cancel the start other requests await.
            await asyncio.shield(self._started)
        except Exception:
            return None
        return self._manager

    async def _own(self, app: Litestar, stop: asyncio.Event, started: asyncio.Future[None]) -> None:
        """Import the protocol, run its session manager until the app stops."""
        try:
            module = await asyncio.to_thread(_import_protocol)
            if stop.is_set():
                raise _Stopping("the app stopped while the MCP protocol was imported")
            protocol = module.McpProtocol(app, self.settings, self._document, self.allowlist)
            async with protocol.running() as manager:
                self._manager = manager
                started.set_result(None)
                try:
                    await stop.wait()
                finally:
                    # Before the manager stops: a request arriving now is a 503, not a
                    # RuntimeError from a session manager whose task group is gone.
                    self._manager = None
        except _Stopping as exc:
            started.set_exception(exc)
            started.exception()
        except Exception as exc:
            if started.done():
                log.exception("the MCP endpoint stopped on an error")
            else:
                log.exception("the MCP endpoint failed to start")
                self._failed_at = time.monotonic()
                started.set_exception(exc)
                started.exception()  # retrieved: awaiting requests have their answer
        finally:
            self._manager = None
            if not started.done():  # cancelled: release the requests awaiting the start
                started.set_exception(_Stopping("the MCP start was cancelled"))
                started.exception()

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            return
        if scope.get("method") != "POST":
            await send_error(send, 405, 12, "MCP accepts POST only", [(b"allow", b"POST")])
            return
        headers = list(scope["headers"])
        origin = _first(headers, b"origin")
        if not origin_allowed(origin, _first(headers, b"host"), self.settings.public_url):
            await send_error(send, 403, 7, f"origin {origin!r} is not allowed")
            return
        manager = await self._running_manager()
        if manager is None:
            retry = str(RETRY_SECONDS).encode()
            await send_error(send, 503, 14, "MCP is not running", [(b"retry-after", retry)])
            return
        scope["headers"] = [(k, v) for k, v in headers if k != b"mcp-session-id"]
        await manager.handle_request(scope, receive, send)  # type: ignore[arg-type]


class _Stopping(Exception):
    """The app stopped before the protocol started: its waiting requests are 503."""


def _first(headers: Sequence[tuple[bytes, bytes]], name: bytes) -> str | None:
    for key, value in headers:
        if key == name:
            return value.decode("latin-1")
    return None
