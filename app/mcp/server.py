"""The protocol side of ``/mcp``: the SDK's stateless streamable HTTP, JSON responses, tools only.

This is the only module of the endpoint that imports the ``mcp`` SDK (with
``invoke``), and ``endpoint`` imports it on the first MCP request, so a
worker that never serves MCP never holds the SDK (about 33 MB resident per
process; decision 0054).

For one POST, after ``endpoint`` has checked the method and the Origin and
dropped ``Mcp-Session-Id``: the SDK's session manager (stateless, so
``tools/call`` needs no earlier ``initialize``) dispatches JSON-RPC to the
low-level ``Server``, which only has tool handlers and so only announces the
tools capability; ``tools/call`` validates the arguments (``arguments.py``)
and replays them as one REST request through the same app (``invoke.py``).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from litestar import Litestar
from litestar.types import Scope
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
from app.mcp.arguments import ArgumentError, ToolArguments
from app.mcp.invoke import credential_headers, error_result, invoke, to_result
from app.mcp.tools import ToolSpec, build_tool_specs
from app.settings import Settings

__all__ = ["INSTRUCTIONS", "McpProtocol"]

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


class McpProtocol:
    """The tools of one app and the SDK session manager that serves them."""

    def __init__(
        self,
        app: Litestar,
        settings: Settings,
        document: Callable[[Litestar], dict[str, Any]],
        allowlist: Sequence[str],
    ) -> None:
        self._app = app
        self._settings = settings
        # The full tool specs need the rendered OpenAPI document (about 0.3 s), built
        # here, once per start of the protocol (the first MCP request of a process).
        specs = build_tool_specs(document(app), allowlist)
        self._tools = {spec.name: _Tool(spec) for spec in specs}

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[StreamableHTTPSessionManager]:
        """The session manager, running until the context exits (once per instance)."""
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
            max_request_body_size=self._settings.max_request_body,
        )
        async with manager.run():
            yield manager

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        return ListToolsResult(tools=[tool.announced for tool in self._tools.values()])

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: CallToolRequestParams
    ) -> CallToolResult:
        tool = self._tools.get(params.name)
        if tool is None:
            return error_result(f'unknown tool "{params.name}"')
        try:
            call = tool.arguments.to_call(params.arguments)
        except ArgumentError as exc:
            return error_result(str(exc))
        request = ctx.request
        outer: Scope = getattr(request, "scope", None) or {}  # type: ignore[assignment]
        status, body = await invoke(self._app, outer, call, credential_headers(outer))
        return to_result(status, body)
