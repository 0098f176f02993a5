"""Login CSRF defence: credential endpoints take JSON from this origin only.

A cross-site page can POST ``text/plain`` or a form without a CORS preflight,
and the response's ``Set-Cookie`` would sign the victim's browser into the
attacker's account (login CSRF). So sign-in (and redeeming a reset link):

- accept only ``Content-Type: application/json``, which a cross-site page
  cannot send without a preflight that Daybook never answers; and
- refuse a browser's ``Sec-Fetch-Site`` other than ``same-origin`` or
  ``none`` (typed URL, bookmark), and an ``Origin`` that is not this server's
  (``--public-url`` when set, else the request's own scheme and host).

Clients that send neither header (curl, scripts, Memos apps) are unaffected.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

from app.errors import InvalidArgument, PermissionDenied

ALLOWED_FETCH_SITES = frozenset({"same-origin", "none"})


def _origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower() if parts.scheme and parts.netloc else ""


def check_json_same_origin(
    headers: Mapping[str, str], *, scheme: str, host: str, public_url: str
) -> None:
    """Raise unless the request is JSON and not from another site (pure)."""
    media = headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media != "application/json":
        raise InvalidArgument("Content-Type must be application/json")
    site = headers.get("sec-fetch-site")
    if site is not None and site.strip().lower() not in ALLOWED_FETCH_SITES:
        raise PermissionDenied("cross-site sign-in refused")
    origin = headers.get("origin")
    if origin is None:
        return
    allowed = {_origin_of(f"{scheme}://{host}")}
    if public_url:
        allowed.add(_origin_of(public_url))
    if origin.strip().lower() not in allowed - {""}:
        raise PermissionDenied("cross-origin sign-in refused")
