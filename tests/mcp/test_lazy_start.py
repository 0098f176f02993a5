"""The MCP protocol starts on the first MCP request (decision 0054).

A worker that serves no MCP request never imports the ``mcp`` SDK (nor
Alembic, which only migrations and the readiness probe need); the first
request starts it once however many arrive together; a start that fails is
a 503 for its requests and is retried by the next one.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import pathlib
import shutil
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from app.mcp import endpoint
from app.server import create_app
from tests.conftest import Templates
from tests.mcp.conftest import live_settings

RPC = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}

CHILD = """
import asyncio, json, pathlib, sys
from litestar.testing import AsyncTestClient
from app.server import create_app
from app.settings import Settings

async def main(url, data):
    seen = {}
    settings = Settings(data_dir=pathlib.Path(data), database_url=url, password_hasher="cheap",
                        secret="test-secret", log_format="json", embedding_model="hash-64",
                        migrate_on_start=False)  # as a worker: the supervisor migrated
    app = create_app(settings)
    async with AsyncTestClient(app=app) as client:
        # What a user does first: sign up, sign in, write a long memo (the Markdown
        # pool), list with a filter, search (the query model), probe readiness.
        statuses = [(await client.post("/api/v1/users",
                                       json={"username": "ann", "password": "pw-12345678"})).status_code]
        r = await client.post("/api/v1/auth/signin", json={
            "passwordCredentials": {"username": "ann", "password": "pw-12345678"}})
        statuses.append(r.status_code)
        client.cookies.clear()
        auth = {"Authorization": "Bearer " + r.json()["accessToken"]}
        body = {"content": "#work a long memo " + "with **words** " * 40}
        for method, path, kw in [
            ("POST", "/api/v1/memos", {"json": body}),
            ("GET", "/api/v1/memos", {"params": {"filter": '"work" in tags'}}),
            ("GET", "/api/v1/memos:search", {"params": {"query": "words"}}),
            ("GET", "/healthz", {}),
            ("GET", "/readyz", {}),
        ]:
            statuses.append((await client.request(method, path, headers=auth, **kw)).status_code)
        seen["before"] = sorted({m.split(".")[0] for m in sys.modules} & {"mcp", "alembic"})
        rpc = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        r = await client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                              headers=rpc)
        statuses.append(r.status_code)
        seen["tools"] = len(r.json()["result"]["tools"])
        seen["after"] = sorted({m.split(".")[0] for m in sys.modules} & {"mcp", "alembic"})
    seen["statuses"] = statuses
    print(json.dumps(seen))

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


def test_a_worker_without_mcp_requests_never_imports_the_sdk(
    tmp_path: pathlib.Path, templates: Templates
) -> None:
    db = tmp_path / "daybook.db"
    shutil.copyfile(templates.sqlite_file, db)
    root = pathlib.Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", CHILD, f"sqlite+aiosqlite:///{db}", str(tmp_path / "data")],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["statuses"] == [200, 200, 200, 200, 200, 200, 200, 200]
    assert seen["before"] == []  # neither the SDK nor Alembic after a user's requests
    assert seen["after"] == ["mcp"]  # the first MCP request brought the SDK only
    assert seen["tools"] > 10


async def _post(client: AsyncTestClient[Any], n: int = 1) -> list[Any]:
    return list(
        await asyncio.gather(*(client.post("/mcp", json=LIST, headers=RPC) for _ in range(n)))
    )


async def test_concurrent_first_requests_start_one_protocol(
    dialect: str, tmp_path: pathlib.Path, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.mcp import server

    starts: list[int] = []
    original = server.McpProtocol.__init__

    def counted(self: Any, *args: Any, **kw: Any) -> None:
        starts.append(1)
        original(self, *args, **kw)

    monkeypatch.setattr(server.McpProtocol, "__init__", counted)
    app = create_app(live_settings(database_url, tmp_path / "data"))
    async with AsyncTestClient(app=app) as client:
        answers = await _post(client, 12)
        assert [r.status_code for r in answers] == [200] * 12
        assert len({len(r.json()["result"]["tools"]) for r in answers}) == 1
        assert len(starts) == 1
        assert (await _post(client))[0].status_code == 200
        assert len(starts) == 1


async def test_a_failed_start_is_503_held_off_then_retried(
    dialect: str, tmp_path: pathlib.Path, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    tries: list[str] = []

    def counted() -> Any:
        tries.append(endpoint.PROTOCOL_MODULE)
        return importlib.import_module(endpoint.PROTOCOL_MODULE)

    monkeypatch.setattr(endpoint, "_import_protocol", counted)
    app = create_app(live_settings(database_url, tmp_path / "data"))
    async with AsyncTestClient(app=app) as client:
        monkeypatch.setattr(endpoint, "PROTOCOL_MODULE", "app.mcp.no_such_module")
        failed = await _post(client, 3)
        assert [r.status_code for r in failed] == [503] * 3
        assert all(r.json()["message"] == "MCP is not running" for r in failed)
        assert all(r.headers["retry-after"] == str(endpoint.RETRY_SECONDS) for r in failed)
        assert len(tries) == 1  # the three awaited one start
        monkeypatch.setattr(endpoint, "PROTOCOL_MODULE", "app.mcp.server")
        held = await _post(client, 5)
        assert [r.status_code for r in held] == [503] * 5
        assert len(tries) == 1  # no import (and no logged traceback) per request meanwhile
        monkeypatch.setattr(endpoint, "RETRY_SECONDS", 0)
        again = await _post(client)
        assert again[0].status_code == 200 and again[0].json()["result"]["tools"]
        assert tries == ["app.mcp.no_such_module", "app.mcp.server"]


# The edges of the app's lifespan, driven on the endpoint itself (review of 0054).

BODY = json.dumps(LIST).encode()


def _bare_endpoint(tmp_path: pathlib.Path) -> tuple[Any, endpoint.McpEndpoint]:
    settings = live_settings(f"sqlite+aiosqlite:///{tmp_path}/d.db", tmp_path / "data")
    app = create_app(settings)
    route = next(r for r in app.routes if r.path == "/mcp")
    return app, route.route_handler.fn.__self__  # type: ignore[attr-defined]


async def _handle(ep: endpoint.McpEndpoint) -> int | str:
    """POST tools/list straight to the endpoint: its status, or the exception's name
    (what Litestar would answer 500)."""
    scope: Any = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "query_string": b"",
        "root_path": "",
        "scheme": "http",
        "http_version": "1.1",
        "server": ("127.0.0.1", 80),
        "client": ("127.0.0.1", 1),
        "headers": [
            (b"host", b"127.0.0.1"),
            (b"content-type", b"application/json"),
            (b"accept", b"application/json, text/event-stream"),
        ],
    }
    sent = False

    async def receive() -> Any:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": BODY, "more_body": False}
        await asyncio.Event().wait()

    status: list[int] = []

    async def send(message: Any) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])

    try:
        await ep.handle(scope, receive, send)
    except Exception as exc:
        return type(exc).__name__
    return status[0]


@pytest.fixture
def slow_protocol(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A protocol module whose import takes 0.6 s."""
    (tmp_path / "slow_mcp_protocol.py").write_text(
        "import time\ntime.sleep(0.6)\nfrom app.mcp.server import McpProtocol\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(endpoint, "PROTOCOL_MODULE", "slow_mcp_protocol")
    yield
    sys.modules.pop("slow_mcp_protocol", None)


async def _in_lifespan(
    app: Any, ep: endpoint.McpEndpoint
) -> tuple[asyncio.Task[None], asyncio.Event]:
    ready, go = asyncio.Event(), asyncio.Event()

    async def life() -> None:
        async with ep.lifespan(app):
            ready.set()
            await go.wait()

    task = asyncio.create_task(life())
    await ready.wait()
    return task, go


async def test_a_request_arriving_while_the_app_stops_is_503(tmp_path: pathlib.Path) -> None:
    app, ep = _bare_endpoint(tmp_path)
    life, go = await _in_lifespan(app, ep)
    assert await _handle(ep) == 200
    inflight = asyncio.create_task(_handle(ep))  # keeps the SDK's task group busy as it stops
    await asyncio.sleep(0)
    go.set()
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert await _handle(ep) == 503  # not the stopped manager's RuntimeError
    await life
    await asyncio.gather(inflight, return_exceptions=True)


async def test_requests_awaiting_a_start_that_shutdown_overtakes_are_503(
    tmp_path: pathlib.Path, slow_protocol: None
) -> None:
    app, ep = _bare_endpoint(tmp_path)
    life, go = await _in_lifespan(app, ep)
    waiting = [asyncio.create_task(_handle(ep)) for _ in range(3)]
    await asyncio.sleep(0.1)
    go.set()
    await life
    assert await asyncio.gather(*waiting) == [503, 503, 503]


async def test_requests_awaiting_a_start_whose_owner_is_cancelled_get_an_answer(
    tmp_path: pathlib.Path, slow_protocol: None
) -> None:
    app, ep = _bare_endpoint(tmp_path)
    life, go = await _in_lifespan(app, ep)
    waiter = asyncio.create_task(_handle(ep))
    await asyncio.sleep(0.1)
    go.set()
    # A shutdown given up on (a timeout around the lifespan's exit) cancels the owner
    # task while the import thread runs.
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(life, 0.1)
    done, _ = await asyncio.wait([waiter], timeout=2)
    assert done, "the request awaits a start that will never be resolved"
    assert waiter.result() == 503


async def test_the_protocol_stops_with_the_app_and_starts_again_with_it(
    dialect: str, tmp_path: pathlib.Path, database_url: str
) -> None:
    app = create_app(live_settings(database_url, tmp_path / "data"))
    for _ in range(2):  # the same app's lifespan run twice, as tests and restarts do
        async with AsyncTestClient(app=app) as client:
            assert (await _post(client))[0].status_code == 200
        route = next(r for r in app.routes if r.path == "/mcp")
        owner = route.route_handler.fn.__self__  # type: ignore[attr-defined]
        assert isinstance(owner, endpoint.McpEndpoint)
        assert owner._owner is None and owner._manager is None
