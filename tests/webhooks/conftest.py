"""A local webhook receiver, and settings that let the worker reach it.

The receiver is a real HTTP server on 127.0.0.1 (a thread), recording every
request with its arrival time; ``replies`` scripts what it answers (a status
and body, or ``HANG`` to hold the request open). The test settings allow the
loopback address (``webhook_allow_private``), the one switch the SSRF rule has.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine
from standardwebhooks import Webhook

from app.db.engine import create_engine
from app.settings import Settings
from app.webhooks.delivery import Policy
from tests.conftest import Actor

HANG = (-1, b"")


@dataclass
class Received:
    at: float
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    url: str = ""
    received: list[Received] = field(default_factory=list)
    replies: list[tuple[int, bytes]] = field(default_factory=list)  # consumed in order
    default: tuple[int, bytes] = (200, b'{"code":0}')
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def verified(self, secret: str) -> list[Any]:
        """Every received body, each checked against its Standard Webhooks signature."""
        hook = Webhook(secret)
        return [hook.verify(r.body, r.headers) for r in self.received]

    def wait_for(self, count: int, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while len(self.received) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(self.received) >= count, f"received {len(self.received)} of {count}"


def serve(receiver: Receiver) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            with receiver.lock:
                receiver.received.append(Received(time.monotonic(), dict(self.headers), body))
                status, reply = receiver.replies.pop(0) if receiver.replies else receiver.default
            if status == -1:
                receiver.release.wait(30)
                return
            self.send_response(status)
            if 300 <= status < 400:
                self.send_header("Location", reply.decode())
                reply = b""
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    server = serve(r)
    yield r
    r.release.set()
    server.shutdown()
    server.server_close()


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return replace(
        settings,
        webhook_allow_private="127.0.0.1",
        webhook_timeout=2.0,
        webhook_retry_base=0.2,
        webhook_retry_cap=5.0,
        webhook_max_attempts=5,
        webhook_poll=0.05,
    )


@pytest.fixture
async def engine(settings: Settings) -> AsyncIterator[AsyncEngine]:
    """The test's own engine on the app's database (the app runs in another event loop)."""
    eng = create_engine(settings.database_url)
    yield eng
    await eng.dispose()


def policy_of(settings: Settings, **changes: Any) -> Policy:
    return replace(Policy.from_settings(settings), **changes)


async def add_webhook(actor: Actor, url: str, **fields: Any) -> tuple[dict[str, Any], str]:
    """Create a webhook; answers its resource and its revealed secret."""
    r = await actor.post(f"/api/v1/users/{actor.username}/webhooks", json={"url": url, **fields})
    assert r.status_code == 200, r.text
    hook = r.json()
    r = await actor.get(f"/api/v1/{hook['name']}:getSigningSecret")
    assert r.status_code == 200, r.text
    return hook, r.json()["signingSecret"]
