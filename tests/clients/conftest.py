"""Real Memos clients from PyPI, run by their own entry points against a live Daybook."""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from app.server import create_app
from tests.conftest import Templates

# A live Daybook (uvicorn on loopback), one per module and dialect.
from tests.mcp.conftest import live_settings, module_db, serve_in_thread, server  # noqa: F401


@pytest.fixture(scope="module")
def sqlite_server(templates: Templates) -> Iterator[str]:
    """A live Daybook on SQLite only, for clients whose runs cost more than the
    dialect matters: they go through the same REST handlers as the contract
    tests, which run on both dialects."""
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="daybook-clients-"))
    shutil.copyfile(templates.sqlite_file, tmp / "daybook.db")
    settings = live_settings(f"sqlite:///{tmp / 'daybook.db'}", tmp / "data")
    with serve_in_thread(create_app(settings)) as base:
        yield base
    shutil.rmtree(tmp, ignore_errors=True)


@dataclass(frozen=True)
class Account:
    base: str
    username: str
    session: dict[str, str]  # bearer headers of a signed-in session
    pat: str  # a personal access token, what a client is configured with

    def get(self, path: str, **params: Any) -> Any:
        r = httpx.get(f"{self.base}{path}", params=params, headers=self.session, timeout=30)
        assert r.status_code == 200, (path, r.status_code, r.text)
        return r.json()

    def raw(self, path: str) -> bytes:
        r = httpx.get(f"{self.base}{path}", headers=self.session, timeout=30)
        assert r.status_code == 200, (path, r.status_code, r.text)
        return r.content

    def post(self, path: str, body: Any) -> Any:
        r = httpx.post(f"{self.base}{path}", json=body, headers=self.session, timeout=30)
        assert r.status_code == 200, (path, r.status_code, r.text)
        return r.json()


def account(base: str, username: str, admin: Account | None = None) -> Account:
    """Sign up ``username`` (the first becomes the admin; later ones are created
    by ``admin``) and mint a PAT."""
    with httpx.Client(base_url=base, timeout=30) as http:
        creds = {"username": username, "password": "password-1"}
        r = http.post("/api/v1/users", json=creds, headers=admin.session if admin else {})
        assert r.status_code == 200, r.text
        signin = http.post("/api/v1/auth/signin", json={"passwordCredentials": creds})
        assert signin.status_code == 200, signin.text
        session = {"Authorization": f"Bearer {signin.json()['accessToken']}"}
        pat = http.post(
            f"/api/v1/users/{username}/personalAccessTokens",
            json={"description": "client"},
            headers=session,
        )
        assert pat.status_code == 200, pat.text
        return Account(base, username, session, pat.json()["token"])


@contextlib.asynccontextmanager
async def stdio_mcp(
    script: pathlib.Path, env: dict[str, str], workdir: pathlib.Path
) -> AsyncIterator[ClientSession]:
    """The MCP server's console script as an agent host runs it: a child process
    speaking MCP on stdio, configured by environment; driven by the SDK's client."""
    environment = {"PATH": os.environ.get("PATH", ""), "HOME": str(workdir), **env}
    with (workdir / "server.stderr").open("w") as errlog:
        async with (
            stdio_client(
                StdioServerParameters(
                    command=str(script), args=[], env=environment, cwd=str(workdir)
                ),
                errlog=errlog,
            ) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


async def call(session: ClientSession, tool: str, **arguments: Any) -> str:
    """A tool call that must succeed; its text."""
    result = await session.call_tool(tool, arguments)
    text = "\n".join(getattr(part, "text", "") for part in result.content)
    assert not result.is_error, (tool, arguments, text)
    return text


async def call_json(session: ClientSession, tool: str, **arguments: Any) -> Any:
    return json.loads(await call(session, tool, **arguments))


async def call_error(session: ClientSession, tool: str, **arguments: Any) -> str:
    """A tool call that must fail (the server's answer passed on as the tool's error)."""
    result = await session.call_tool(tool, arguments)
    text = "\n".join(getattr(part, "text", "") for part in result.content)
    assert result.is_error, (tool, arguments, text)
    return text
