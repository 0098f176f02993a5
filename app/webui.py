"""The web client: ``/`` and ``/assets/*`` from ``web/``, plus an SPA fallback.

The client is static files (ES modules, CSS, no build step) talking to the
public REST API only. Every page and asset carries a strict Content-Security-
Policy: scripts and styles from this origin only, no inline code, no plugins,
no framing. The fallback answers ``index.html`` for client routes but never
for the server's own prefixes, so ``/api/v1/nope`` stays a JSON 404.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any

from litestar import Request, Response, get
from litestar.params import Parameter

from app.errors import NotFound

WEB_ROOT = Path(__file__).resolve().parent.parent / "web"

CSP = (
    "default-src 'self'; img-src 'self' data: blob: https:; script-src 'self'; "
    "style-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}
MEDIA_TYPES = {
    ".js": "text/javascript",
    ".css": "text/css",
    ".html": "text/html",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".json": "application/json",
    ".webmanifest": "application/manifest+json",
}
# Prefixes the server owns; the SPA fallback must never answer them.
RESERVED = ("api/", "file/", "healthz", "readyz", "mcp", "schema", "explore/rss.xml", "assets/")


def _is_reserved(path: str) -> bool:
    path = path.lstrip("/")
    if path.startswith(RESERVED) or path in ("api", "file", "mcp", "schema", "assets"):
        return True
    return path.startswith("u/") and path.endswith("/rss.xml")


@lru_cache(maxsize=128)
def _load(path: Path, mtime_ns: int, size: int) -> tuple[bytes, str]:
    """File bytes and ETag, cached until the file changes (mtime or size)."""
    body = path.read_bytes()
    return body, '"' + hashlib.sha256(body).hexdigest()[:20] + '"'


def _serve(path: Path, request: Request[Any, Any, Any]) -> Response[bytes]:
    stat = path.stat()
    body, tag = _load(path, stat.st_mtime_ns, stat.st_size)
    headers = {**SECURITY_HEADERS, "ETag": tag, "Cache-Control": "no-cache"}
    media_type = MEDIA_TYPES.get(path.suffix, "application/octet-stream")
    if request.headers.get("if-none-match") == tag:
        return Response(b"", status_code=304, headers=headers, media_type=media_type)
    return Response(body, headers=headers, media_type=media_type)


def _index(request: Request[Any, Any, Any]) -> Response[bytes]:
    return _serve(WEB_ROOT / "index.html", request)


@get("/", exclude_from_auth=True, include_in_schema=False, sync_to_thread=False)
def web_index(request: Request[Any, Any, Any]) -> Response[bytes]:
    return _index(request)


@get("/assets/{asset:path}", exclude_from_auth=True, include_in_schema=False, sync_to_thread=False)
def web_asset(
    request: Request[Any, Any, Any],
    asset: Annotated[str, Parameter(max_length=256)],
) -> Response[bytes]:
    root = (WEB_ROOT / "assets").resolve()
    target = (root / asset.lstrip("/")).resolve()
    if root not in target.parents or not target.is_file() or target.suffix not in MEDIA_TYPES:
        raise NotFound(f"asset {asset!r} not found")
    return _serve(target, request)


@get("/reset-password", exclude_from_auth=True, include_in_schema=False, sync_to_thread=False)
def web_reset_password(request: Request[Any, Any, Any]) -> Response[bytes]:
    """The page a one-time reset link opens (``app.auth.reset``); the token is in the fragment."""
    return _serve(WEB_ROOT / "reset-password.html", request)


@get("/sw.js", exclude_from_auth=True, include_in_schema=False, sync_to_thread=False)
def web_service_worker(request: Request[Any, Any, Any]) -> Response[bytes]:
    """The service worker, at the root so its scope is the whole app (decision 0034)."""
    return _serve(WEB_ROOT / "sw.js", request)


@get("/{spa:path}", exclude_from_auth=True, include_in_schema=False, sync_to_thread=False)
def web_fallback(
    request: Request[Any, Any, Any],
    spa: Annotated[str, Parameter(max_length=1024)],
) -> Response[bytes]:
    if _is_reserved(spa) or "." in spa.rsplit("/", 1)[-1]:
        raise NotFound(f"{spa!r} not found")
    return _index(request)


WEB_HANDLERS = [web_index, web_asset, web_reset_password, web_service_worker, web_fallback]
