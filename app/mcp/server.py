"""The ``/mcp`` endpoint: the SDK's stateless streamable HTTP, JSON responses, tools only.

Wiring, in order, for one POST:

1. Litestar's authentication middleware has already resolved the credential
   (a bad token is a 401 before MCP sees anything).
2. ``McpEndpoint.handle`` answers anything but POST with 405 (a GET would open
   an SSE stream in the SDK), refuses a foreign ``Origin`` with 403, and drops
   ``Mcp-Session-Id``: there are no sessions.
3. The SDK's session manager (stateless, so ``tools/call`` needs no earlier
   ``initialize``) dispatches JSON-RPC to the low-level ``Server``, which only
   has tool handlers and so only announces the tools capability.
4. ``tools/call`` validates the arguments (``arguments.py``) and replays them
   as one REST request through the same app (``invoke.py``).

The session manager can run once per instance, so a new one is made in each
lifespan (tests start the same app's lifespan many times).
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from litestar import Litestar
from litestar.enums import ScopeType
from litestar.handlers import asgi
from litestar.handlers.asgi_handlers import ASGIRouteHandler
from litestar.types import Receive, Scope, Send
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    Tool,
    ToolAnnotations,
)

from app import __version__
from app.mcp.allowlist import ALLOWLIST
from app.mcp.arguments import ArgumentError, ToolArguments
from app.mcp.invoke import credential_headers, error_result, invoke, to_result
from app.mcp.origin import origin_allowed
from app.mcp.tools import McpConfigError, ToolSpec, build_tool_specs, check_allowlist
from app.settings import Settings

__all__ = ["INSTRUCTIONS", "McpEndpoint", "schema_operation_ids"]

log = logging.getLogger("daybook.mcp")

INSTRUCTIONS = """\
Daybook: a notes service with a Memos-compatible API. Each tool is one REST \
operation, run with your own token, so you can do exactly what the token allows.
Start with auth_get_current_user (who you are; for a restricted key, its \
ceiling), then space_list_spaces and space_get_access (your effective tree \
grants in a space).
Filters are CEL over memo fields. tags is a list: write "work" in tags, not \
tag == "work" (tag only supports tag in ["a", "b"]). Other examples: \
visibility == "PUBLIC", pinned, created_ts > now - duration("24h"), \
content.contains("x").
memo_list_memos and memo_search_memos return top-level memos only; read \
comments with memo_list_memo_comments.
A write into a space needs an explicit tree path in the body together with \
space (e.g. {"visibility": "SPACE", "space": "spaces/abc", "tree": "share"}); \
there is no default path. Placement decides who may write a memo, visibility \
who reads it: a PUBLIC memo placed in a space is still PUBLIC.
Ids: pass a bare id or the resource name (memos/abc) where a tool asks for one.
Errors read like "404 Not Found: memo not found"; a denied read is "not found".
"""


def schema_operation_ids(app: Litestar) -> set[str]:
    """The operationIds the app's OpenAPI document will list, without rendering it."""
    ids: set[str] = set()
    for route in app.routes:
        for handler in getattr(route, "route_handlers", ()):
            if isinstance(handler.operation_id, str) and handler.resolve_include_in_schema():
                ids.add(handler.operation_id)
    return ids


class _Tool:
    """A tool as announced, plus what calling it needs."""

    def __init__(self, spec: ToolSpec) -> None:
        self.spec = spec
        self.arguments = ToolArguments(spec)
        self.announced = Tool(
            name=spec.name,
            description=spec.description,
            input_schema=spec.input_schema,
            output_schema=spec.output_schema,
            annotations=ToolAnnotations(
                read_only_hint=spec.read_only,
                destructive_hint=spec.destructive,
                idempotent_hint=spec.idempotent,
                open_world_hint=False,
            ),
        )


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
        self._tools: dict[str, _Tool] | None = None
        self._manager: StreamableHTTPSessionManager | None = None
        self.route_handler: ASGIRouteHandler = asgi(
            "/mcp", copy_scope=True, include_in_schema=False
        )(self.handle)

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Litestar) -> AsyncIterator[None]:
        # Refuse to start, cheaply: the full tool specs need the rendered
        # OpenAPI document (~0.1 s), which is built on the first MCP request.
        check_allowlist(self.allowlist, schema_operation_ids(app))
        self._app = app
        server: Server[Any] = Server(
            "daybook",
            version=__version__,
            title="Daybook",
            instructions=INSTRUCTIONS,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )
        manager = StreamableHTTPSessionManager(
            app=server,
            json_response=True,
            stateless=True,
            security_settings=None,  # the Origin check is ours (origin.py); Host is not checked
            max_request_body_size=self.settings.max_request_body,
        )
        async with manager.run():
            self._manager = manager
            try:
                yield
            finally:
                self._manager = None

    def tools(self) -> dict[str, _Tool]:
        """The tools, built from the app's OpenAPI document on first use."""
        if self._tools is None:
            if self._app is None:
                raise McpConfigError("the MCP endpoint is used before the app started")
            specs = build_tool_specs(self._document(self._app), self.allowlist)
            self._tools = {spec.name: _Tool(spec) for spec in specs}
        return self._tools

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            return
        if scope.get("method") != "POST":
            await _reply(send, 405, 12, "MCP accepts POST only", [(b"allow", b"POST")])
            return
        headers = list(scope["headers"])
        origin = _first(headers, b"origin")
        if not origin_allowed(origin, _first(headers, b"host"), self.settings.public_url):
            await _reply(send, 403, 7, f"origin {origin!r} is not allowed")
            return
        manager = self._manager
        if manager is None:
            await _reply(send, 503, 14, "MCP is not running")
            return
        scope["headers"] = [(k, v) for k, v in headers if k != b"mcp-session-id"]
        await manager.handle_request(scope, receive, send)  # type: ignore[arg-type]

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        return ListToolsResult(tools=[tool.announced for tool in self.tools().values()])

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: CallToolRequestParams
    ) -> CallToolResult:
        tool = self.tools().get(params.name)
        if tool is None:
            return error_result(f'unknown tool "{params.name}"')
        try:
            call = tool.arguments.to_call(params.arguments)
        except ArgumentError as exc:
            return error_result(str(exc))
        request = ctx.request
        outer: Scope = getattr(request, "scope", None) or {}  # type: ignore[assignment]
        app = self._app
        if app is None:
            return error_result("503 Service Unavailable: MCP is not running")
        status, body = await invoke(app, outer, call, credential_headers(outer))
        return to_result(status, body)


def _first(headers: Sequence[tuple[bytes, bytes]], name: bytes) -> str | None:
    for key, value in headers:
        if key == name:
            return value.decode("latin-1")
    return None


async def _reply(
    send: Send,
    status: int,
    code: int,
    message: str,
    extra: Sequence[tuple[bytes, bytes]] = (),
) -> None:
    body = json.dumps({"code": code, "message": message, "details": []}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *extra,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body, "more_body": False})
