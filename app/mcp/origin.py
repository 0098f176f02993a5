"""The Origin check in front of ``/mcp`` (DNS rebinding and cross-site requests).

No ``Origin`` (an agent, curl, a reverse proxy's health check) is allowed. A
browser's Origin is allowed when its host equals the request's ``Host``
(same origin, whatever name the proxy forwards) or the host of the
configured public URL (a proxy that rewrites ``Host`` to the loopback
address). Anything else, ``null`` included, is refused with 403. Hosts are
compared with their ports, default ports dropped, case-folded.
"""

from __future__ import annotations

from urllib.parse import urlsplit

__all__ = ["origin_allowed"]

_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin_allowed(origin: str | None, host: str | None, public_url: str = "") -> bool:
    if origin is None:
        return True
    origin_host = _netloc(origin)
    if origin_host is None:
        return False
    scheme = urlsplit(origin.strip()).scheme.lower()
    if host and origin_host == _host_header(host, scheme):
        return True
    return bool(public_url) and origin_host == _netloc(public_url)


def _netloc(url: str) -> str | None:
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme.lower() not in _DEFAULT_PORTS or not parts.hostname:
        return None
    return _join(parts.hostname, port, parts.scheme.lower())


def _host_header(host: str, scheme: str) -> str | None:
    try:
        parts = urlsplit(f"//{host.strip()}")
        port = parts.port
    except ValueError:
        return None
    if not parts.hostname:
        return None
    return _join(parts.hostname, port, scheme)


def _join(hostname: str, port: int | None, scheme: str) -> str:
    name = hostname.lower().rstrip(".")
    if ":" in name:
        name = f"[{name}]"  # IPv6
    if port is None or port == _DEFAULT_PORTS.get(scheme):
        return name
    return f"{name}:{port}"
