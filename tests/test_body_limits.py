"""Request bodies bounded per route and read before any connection is spent (issue 12).

In-process: oversized bodies answer 413 on the routes that cannot need
them, valid bodies at each route's size still pass. Against a real server:
slow attachment uploads (bodies trickling in) hold no database connection,
so normal traffic beside them is served at once.
"""

from __future__ import annotations

import asyncio
import base64
import socket
import threading
import time
from typing import Any

import httpx
import pytest
from litestar.testing import AsyncTestClient

from tests.conftest import Actor
from tests.test_backup import PASSWORD, Server, Target, fresh

__all__ = ["fresh"]  # the fixture, re-exported for pytest


async def test_sign_in_body_is_small(client: AsyncTestClient[Any], alice: Actor) -> None:
    big = "p" * (100 * 1024)
    r = await client.post(
        "/api/v1/auth/signin",
        json={"passwordCredentials": {"username": "alice", "password": big}},
    )
    assert r.status_code == 413, r.text
    assert "limit" in r.json()["message"]


async def test_memo_body_near_the_content_limit(alice: Actor) -> None:
    ok = await alice.post("/api/v1/memos", json={"content": "\u0001" * 8000})  # escapes 6x
    assert ok.status_code == 200, ok.text
    r = await alice.post("/api/v1/memos", json={"content": "x" * (1024 * 1024)})
    assert r.status_code == 413, r.text
    patch = await alice.patch(
        f"/api/v1/{ok.json()['name']}?updateMask=content", json={"content": "y" * 600_000}
    )
    assert patch.status_code == 413


async def test_attachment_body_at_the_attachment_limit(alice: Actor) -> None:
    payload = base64.b64encode(b"z" * (2 * 1024 * 1024)).decode()
    r = await alice.post("/api/v1/attachments", json={"filename": "a.bin", "content": payload})
    assert r.status_code == 200, r.text
    assert int(r.json()["size"]) == 2 * 1024 * 1024


def _slow_upload(port: int, token: str, stop: threading.Event, started: threading.Event) -> None:
    """An attachment upload that sends its 1 MiB body a few bytes at a time."""
    body_len = 1024 * 1024
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(
            (
                "POST /api/v1/attachments HTTP/1.1\r\nHost: x\r\n"
                f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {body_len}\r\n\r\n"
            ).encode()
            + b'{"filename":"s.bin","content":"'
        )
        started.set()
        while not stop.wait(0.05):
            s.sendall(b"AAAA")


def test_slow_uploads_do_not_starve_others(
    fresh: Any,
) -> None:
    target: Target = fresh("slow")
    server = Server(target)
    stop = threading.Event()
    threads: list[threading.Thread] = []
    try:
        with httpx.Client(base_url=server.base, timeout=30) as http:
            r = http.post("/api/v1/users", json={"username": "alice", "password": PASSWORD})
            assert r.status_code == 200, r.text
            r = http.post(
                "/api/v1/auth/signin",
                json={"passwordCredentials": {"username": "alice", "password": PASSWORD}},
            )
            token = r.json()["accessToken"]
        for _ in range(40):  # more than either dialect's pool holds connections
            started = threading.Event()
            t = threading.Thread(target=_slow_upload, args=(server.port, token, stop, started))
            t.start()
            threads.append(t)
            assert started.wait(10)
        time.sleep(0.5)

        async def normal() -> list[int]:
            auth = {"Authorization": f"Bearer {token}"}
            async with httpx.AsyncClient(base_url=server.base, headers=auth, timeout=20) as h:
                calls = [h.post("/api/v1/memos", json={"content": f"n{i}"}) for i in range(15)]
                calls += [h.get("/api/v1/memos") for _ in range(15)]
                return [r.status_code for r in await asyncio.gather(*calls)]

        began = time.monotonic()
        statuses = asyncio.run(normal())
        took = time.monotonic() - began
        assert statuses == [200] * 30
        assert took < 10, f"normal requests took {took:.1f} s beside slow uploads"
    finally:
        stop.set()
        for t in threads:
            t.join(5)
        server.stop()


@pytest.mark.parametrize("path", ["/api/v1/auth/signin", "/api/v1/memos", "/api/v1/users"])
async def test_declared_oversize_is_refused_without_reading(
    client: AsyncTestClient[Any], path: str
) -> None:
    r = await client.post(path, content=b"{}", headers={"Content-Length": str(60 * 1024 * 1024)})
    assert r.status_code == 413
