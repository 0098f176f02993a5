"""CORS for browser clients that call the API with a bearer token (decision 0029).

Memos 0.31 reflects every origin (``server/cors.go``) and adds
``Access-Control-Allow-Credentials`` for its own origin only. Daybook never
sends ``Access-Control-Allow-Credentials`` at all: a cross-origin page gets
the API with the token it holds in ``Authorization``, never with the
browser's session cookie. The cookie is refused cross-origin on the server
side too (``app.auth.origin.cookie_usable``), so a credentialed
cross-origin request runs as anonymous even before the browser hides the
answer.

Allowed origins (``--cors-origins`` / ``DAYBOOK_CORS_ORIGINS``): ``*`` (the
default: any origin, answered with the literal ``*``, which browsers never
combine with credentials), ``""`` (no CORS), or a list of exact origins
(each answered by echoing it, with ``Vary: Origin``). The opaque origin
``null`` (sandboxed frames, ``file:``) is never matched by a list.

Preflights (``OPTIONS`` with ``Access-Control-Request-Method``) on the API
are answered here, before routing: 204 with the allowed methods and headers
for an allowed origin, 403 in Memos' error shape otherwise.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from litestar.types import Message, Scope, Send

__all__ = ["CorsPolicy", "cors_headers", "parse_origins", "preflight"]

ALLOW_METHODS = "GET, HEAD, POST, PUT, PATCH, DELETE"
# Request headers a bearer client may send. Not X-CSRF-Token: it only serves cookie auth.
ALLOW_HEADERS = frozenset(
    {
        "authorization",
        "content-type",
        "accept",
        "accept-language",
        "if-match",
        "if-none-match",
        "connect-protocol-version",
        "connect-timeout-ms",
        "x-requested-with",
        "cache-control",
    }
)
EXPOSE_HEADERS = (
    "Retry-After, RateLimit, RateLimit-Policy, ETag, Content-Disposition, WWW-Authenticate"
)
MAX_AGE = "600"
_CORS_PATHS = re.compile(r"^(/api/|/file/|/mcp)")


@dataclass(frozen=True, slots=True)
class CorsPolicy:
    any_origin: bool
    origins: frozenset[str]

    @property
    def enabled(self) -> bool:
        return self.any_origin or bool(self.origins)


def _normal(origin: str) -> str:
    parts = urlsplit(origin.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.path not in ("", "/"):
        raise ValueError(f"CORS origin {origin!r}: expected scheme://host[:port]")
    return f"{parts.scheme}://{parts.netloc}".lower()


def parse_origins(text: str) -> CorsPolicy:
    """``*``, empty, or comma-separated origins; ValueError naming a bad one."""
    items = [item.strip() for item in text.split(",") if item.strip()]
    if "*" in items:
        return CorsPolicy(True, frozenset())
    return CorsPolicy(False, frozenset(_normal(item) for item in items))


def _allow_origin(policy: CorsPolicy, origin: str) -> str | None:
    """The ``Access-Control-Allow-Origin`` value for ``origin``, or None (pure)."""
    if policy.any_origin:
        return "*"
    if origin.strip().lower() in policy.origins:
        return origin.strip().lower()
    return None


def cors_headers(policy: CorsPolicy, origin: str | None) -> list[tuple[str, str]]:
    """Headers for an actual (non-preflight) response to ``origin`` (pure)."""
    if origin is None or not policy.enabled:
        return []
    allowed = _allow_origin(policy, origin)
    vary = [] if policy.any_origin else [("Vary", "Origin")]
    if allowed is None:
        return vary
    return [
        ("Access-Control-Allow-Origin", allowed),
        ("Access-Control-Expose-Headers", EXPOSE_HEADERS),
        *vary,
    ]


def preflight(
    policy: CorsPolicy, origin: str, method: str, requested: str
) -> tuple[int, list[tuple[str, str]]]:
    """Status and headers answering a preflight (pure). Never allows credentials."""
    allowed = _allow_origin(policy, origin) if policy.enabled else None
    vary = [] if policy.any_origin else [("Vary", "Origin")]
    if allowed is None or method.strip().upper() not in ALLOW_METHODS.split(", "):
        return 403, vary
    asked = [h.strip().lower() for h in requested.split(",") if h.strip()]
    headers = [
        ("Access-Control-Allow-Origin", allowed),
        ("Access-Control-Allow-Methods", ALLOW_METHODS),
        ("Access-Control-Max-Age", MAX_AGE),
        *vary,
    ]
    granted = [h for h in asked if h in ALLOW_HEADERS]
    if granted:
        headers.append(("Access-Control-Allow-Headers", ", ".join(granted)))
    return 204, headers


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if bytes(key).lower() == name:
            return bytes(value).decode("latin-1")
    return None


def applies(scope: Scope) -> bool:
    return _CORS_PATHS.match(scope["path"]) is not None


async def answer_preflight(policy: CorsPolicy, scope: Scope, send: Send) -> bool:
    """Answer ``scope`` if it is a CORS preflight on the API; False otherwise."""
    origin = _header(scope, b"origin")
    method = _header(scope, b"access-control-request-method")
    if scope.get("method") != "OPTIONS" or origin is None or method is None or not applies(scope):
        return False
    status, headers = preflight(
        policy, origin, method, _header(scope, b"access-control-request-headers") or ""
    )
    body = b""
    raw = [(k.lower().encode(), v.encode()) for k, v in headers]
    if status != 204:
        body = json.dumps(
            {"code": 7, "message": f"CORS: origin {origin!r} is not allowed", "details": []}
        ).encode()
        raw.append((b"content-type", b"application/json"))
    raw.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body, "more_body": False})
    return True


def with_cors(policy: CorsPolicy, scope: Scope, send: Send) -> Send:
    """``send``, adding the CORS response headers for the request's origin."""
    extra = cors_headers(policy, _header(scope, b"origin")) if applies(scope) else []
    if not extra:
        return send
    raw = [(k.lower().encode(), v.encode()) for k, v in extra]

    async def send_with_cors(message: Message) -> None:
        if message["type"] == "http.response.start":
            names = {bytes(n).lower() for n, _ in message.get("headers", [])}
            added = [(n, v) for n, v in raw if n not in names or n == b"vary"]
            message = {**message, "headers": [*message.get("headers", []), *added]}
        await send(message)

    return send_with_cors
