"""Run one REST call in-process through the whole application, as the caller.

The request enters the same ASGI app a socket request would (the custom-method
rewrite, request log, authentication middleware, guards, handlers), carrying
the MCP request's own credential headers and nothing else a client sent, so
every access rule is the REST rule. The response is normalised for MCP: a 2xx
becomes ``structuredContent`` (always an object) plus the same JSON as text;
anything else is an ``isError`` result reading ``404 Not Found: memo not found``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from http import HTTPStatus
from typing import Any, cast

import anyio
from litestar.types import ASGIApp, Receive, Scope, Send
from mcp.types import CallToolResult, TextContent

from app.mcp.arguments import Call

__all__ = ["CREDENTIAL_HEADERS", "error_result", "invoke", "to_result"]

# What the authentication middleware reads (bearer, session cookie and its
# CSRF token). Identity claims such as X-User-Id are not forwarded, and the
# app would ignore them anyway.
CREDENTIAL_HEADERS = (b"authorization", b"cookie", b"x-csrf-token")


async def invoke(
    app: ASGIApp, outer: Scope, call: Call, credentials: Iterable[tuple[bytes, bytes]]
) -> tuple[int, bytes]:
    """Send ``call`` to ``app`` with the caller's credential headers; (status, body)."""
    headers = [(b"host", _header(outer, b"host") or b"localhost"), *credentials]
    if call.body is not None:
        headers.append((b"content-type", b"application/json"))
        headers.append((b"content-length", str(len(call.body)).encode()))
    headers.append((b"accept", b"application/json"))
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": call.method,
        "scheme": outer.get("scheme", "http"),
        "path": call.path,
        "raw_path": call.path.encode(),
        "root_path": "",
        "query_string": call.query_string,
        "headers": headers,
        "client": outer.get("client"),
        "server": outer.get("server"),
        "state": {},
    }
    body = call.body or b""
    sent = False
    done = anyio.Event()
    status = 500
    chunks: list[bytes] = []

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = int(message["status"])
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                done.set()

    try:
        await app(cast(Scope, scope), cast(Receive, receive), cast(Send, send))
    finally:
        done.set()
    return status, b"".join(chunks)


def credential_headers(outer: Scope) -> list[tuple[bytes, bytes]]:
    return [(k, v) for k, v in outer.get("headers", []) if k.lower() in CREDENTIAL_HEADERS]


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return bytes(value)
    return None


def to_result(status: int, body: bytes) -> CallToolResult:
    """An MCP result for a REST response."""
    if 200 <= status < 300:
        structured = _structured(body)
        text = json.dumps(structured, ensure_ascii=False, separators=(",", ":"))
        return CallToolResult(
            content=[TextContent(type="text", text=text)], structured_content=structured
        )
    message = ""
    try:
        decoded = json.loads(body) if body else None
    except ValueError:
        decoded = None
    if isinstance(decoded, Mapping):
        message = str(decoded.get("message") or decoded.get("detail") or "")
    elif body:
        message = body.decode("utf-8", "replace")[:500]
    return error_result(
        f"{status} {_phrase(status)}: {message}" if message else f"{status} {_phrase(status)}"
    )


def error_result(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def _structured(body: bytes) -> dict[str, Any]:
    if not body.strip():
        return {"ok": True}
    try:
        decoded = json.loads(body)
    except ValueError:
        return {"result": body.decode("utf-8", "replace")}
    if isinstance(decoded, dict):
        return decoded or {"ok": True}
    if decoded is None:
        return {"ok": True}
    return {"result": decoded}


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"
