"""The one SSRF-guarded client (app/net/guarded.py), with both callers' limits.

A loopback server stands in for "the server's own network": it counts what
reaches it, so a refusal is shown to happen before any request is sent.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from app.net import guarded
from app.settings import Settings, load_settings
from app.webhooks.delivery import Policy as WebhookPolicy

PREVIEW = guarded.Limits(deadline=2.0, max_bytes=1024, max_redirects=3)
OPEN = guarded.Policy()


class _Inside:
    """Requests that reached the loopback server (path list); /to?u=URL redirects there."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        inside = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                inside.paths.append(self.path)
                if self.path.startswith("/to?u="):
                    self.send_response(302)
                    self.send_header("Location", self.path.split("=", 1)[1])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", "6")
                self.end_headers()
                self.wfile.write(b"inside")

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = int(self.server.server_address[1])


@pytest.fixture(scope="module")
def inside() -> Iterator[_Inside]:
    server = _Inside()
    thread = threading.Thread(target=server.server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.server.shutdown()
    server.server.server_close()


def resolving(table: dict[str, str]) -> guarded.Resolver:
    async def resolver(host: str, port: int) -> list[str]:
        return [table[host]]

    return resolver


async def test_a_hostname_that_resolves_to_a_private_address_is_refused(inside: _Inside) -> None:
    before = len(inside.paths)
    for address in ("127.0.0.1", "10.1.2.3", "169.254.169.254"):
        with pytest.raises(guarded.Refused, match="private, loopback or link-local"):
            await guarded.request(
                "GET",
                f"http://public.example:{inside.port}/secret",
                policy=OPEN,
                limits=PREVIEW,
                resolver=resolving({"public.example": address}),
            )
    assert inside.paths[before:] == []  # refused before connecting
    # The same name, once an operator allows it, reaches the address that was checked.
    allowed = guarded.Policy.parse("public.example")
    reply = await guarded.request(
        "GET",
        f"http://public.example:{inside.port}/ok",
        policy=allowed,
        limits=PREVIEW,
        resolver=resolving({"public.example": "127.0.0.1"}),
    )
    assert (reply.status_code, reply.body) == (200, b"inside")


async def test_a_redirect_to_a_loopback_address_is_refused(inside: _Inside) -> None:
    """An allowed host answers with a redirect into loopback: by literal and by a name
    that resolves there. Each hop is checked at connect time, so neither is followed."""
    allowed = guarded.Policy.parse("pages.example")
    resolver = resolving({"pages.example": "127.0.0.1", "sneaky.example": "127.0.0.1"})
    for target in (
        f"http://127.0.0.1:{inside.port}/secret",
        f"http://[::ffff:127.0.0.1]:{inside.port}/secret",
        f"http://sneaky.example:{inside.port}/secret",
    ):
        before = len(inside.paths)
        with pytest.raises(guarded.Refused):
            await guarded.request(
                "GET",
                f"http://pages.example:{inside.port}/to?u={target}",
                policy=allowed,
                limits=PREVIEW,
                resolver=resolver,
            )
        assert inside.paths[before:] == [f"/to?u={target}"], target  # only the first hop


async def test_redirect_limits_per_caller(inside: _Inside) -> None:
    allowed = guarded.Policy.parse("127.0.0.1")
    base = f"http://127.0.0.1:{inside.port}"
    hop = f"{base}/to?u={base}/final"
    followed = await guarded.request("GET", hop, policy=allowed, limits=PREVIEW)
    assert (followed.status_code, followed.url, followed.body) == (200, f"{base}/final", b"inside")
    # A webhook's limits: the redirect is the answer, its target never requested.
    webhook = WebhookPolicy(allowed).limits
    before = len(inside.paths)
    answer = await guarded.request("GET", hop, policy=allowed, limits=webhook)
    assert answer.status_code == 302 and inside.paths[before:] == [hop.removeprefix(base)]
    # More hops than the caller allows: refused, not followed forever.
    chain = f"{base}/final"
    for _ in range(PREVIEW.max_redirects + 1):
        chain = f"{base}/to?u={chain}"
    with pytest.raises(guarded.Refused, match="more than 3 redirects"):
        await guarded.request("GET", chain, policy=allowed, limits=PREVIEW)


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "ftp://example.com/", "http://u:p@example.com/", "http:///x"]
)
async def test_only_plain_http_urls_are_sent(url: str) -> None:
    with pytest.raises(guarded.BadUrl):
        await guarded.request("GET", url, policy=OPEN, limits=PREVIEW)


def test_allowlists_name_their_setting_on_a_bad_entry() -> None:
    with pytest.raises(ValueError, match="DAYBOOK_LINK_PREVIEW_ALLOW_PRIVATE: 'http://x/'"):
        guarded.Policy.parse("http://x/", setting="DAYBOOK_LINK_PREVIEW_ALLOW_PRIVATE")
    settings = Settings(webhook_allow_private="10.0.0.0/8, hooks.internal")
    policy = WebhookPolicy.from_settings(settings).destinations
    assert policy.hostnames == frozenset({"hooks.internal"}) and len(policy.networks) == 1
    with pytest.raises(ValueError, match="DAYBOOK_WEBHOOK_ALLOW_PRIVATE: 'hooks internal'"):
        load_settings({"DAYBOOK_WEBHOOK_ALLOW_PRIVATE": "10.0.0.0/8, hooks internal"})
    assert load_settings({"DAYBOOK_LINK_PREVIEW_ALLOW_PRIVATE": "localhost, 10.0.0.0/8"})
