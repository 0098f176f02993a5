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

The session cookie itself is usable only from this origin
(:func:`cookie_usable`, decision 0029): CORS opens the API to other origins
for bearer tokens, and a cross-origin request that carries the cookie
(``credentials: "include"``, or a same-site sibling host that SameSite=Lax
lets through) is treated as anonymous.
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
    if origin.strip().lower() not in _own_origins(scheme, host, public_url):
        raise PermissionDenied("cross-origin sign-in refused")


def _own_origins(scheme: str, host: str, public_url: str) -> set[str]:
    allowed = {_origin_of(f"{scheme}://{host}")}
    if public_url:
        allowed.add(_origin_of(public_url))
    return allowed - {""}


def cookie_usable(headers: Mapping[str, str], *, scheme: str, host: str, public_url: str) -> bool:
    """Whether the session cookie may authenticate this request (pure).

    Not when the browser says the request is a cross-origin fetch (``Origin``
    of another origin, or ``Sec-Fetch-Mode: cors`` from another site). A
    top-level navigation (a link to an attachment from a chat) keeps it:
    browsers send no ``Origin`` on a GET navigation, and its mode is
    ``navigate``.
    """
    origin = headers.get("origin")
    if origin is not None:
        # Host only (as Memos' isAllowedCORSOrigin): behind a TLS-terminating
        # proxy the app may see http while the browser says https.
        netloc = urlsplit(origin.strip()).netloc.lower()
        own = {host.lower()} | {urlsplit(o).netloc for o in _own_origins(scheme, host, public_url)}
        if not netloc or netloc not in own - {""}:
            return False
    mode = (headers.get("sec-fetch-mode") or "").strip().lower()
    site = (headers.get("sec-fetch-site") or "").strip().lower()
    return not (mode == "cors" and site and site not in ALLOWED_FETCH_SITES)
