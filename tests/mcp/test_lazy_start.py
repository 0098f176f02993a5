"""The MCP protocol starts on the first MCP request (decision 0054).

A worker that serves no MCP request never imports the ``mcp`` SDK (nor
Alembic, which only migrations and the readiness probe need); the first
request starts it once however many arrive together; a start that fails is
a 503 for its requests and is retried by the next one.
"""

from __future__ import annotations

import asyncio
import json
import pathlib
import shutil
import subprocess
import sys
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


async def test_a_failed_start_is_503_and_the_next_request_retries(
    dialect: str, tmp_path: pathlib.Path, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = create_app(live_settings(database_url, tmp_path / "data"))
    async with AsyncTestClient(app=app) as client:
        monkeypatch.setattr(endpoint, "PROTOCOL_MODULE", "app.mcp.no_such_module")
        failed = await _post(client, 3)
        assert [r.status_code for r in failed] == [503] * 3
        assert all(r.json()["message"] == "MCP is not running" for r in failed)
        monkeypatch.setattr(endpoint, "PROTOCOL_MODULE", "app.mcp.server")
        again = await _post(client)
        assert again[0].status_code == 200 and again[0].json()["result"]["tools"]


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
