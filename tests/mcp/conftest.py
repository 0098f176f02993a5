"""A live Daybook on 127.0.0.1 (uvicorn in a thread) and a small world to look at.

MCP is driven the way an agent drives it: the SDK's own client over real
HTTP. One server and one seeded world per module and dialect keep the suite
fast; tests that write compare REST and MCP inside the same test, so their
writes never skew another test's comparison.

The world: alice (ADMIN) and bob; a PUBLIC instance; alice's space ``Team``
with bob an ACTIVE member; memos of every visibility, a SPACE memo at
``share`` and one in alice's home; a comment, a reaction, a relation, an
attachment, a saved view and an edit (history).
"""

from __future__ import annotations

import base64
import contextlib
import os
import pathlib
import shutil
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import httpx2
import pytest
import uvicorn
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from app.server import create_app
from app.settings import Settings
from tests.conftest import Templates, _admin_exec
from tests.support import free_port, make_settings


@contextlib.contextmanager
def serve_in_thread(app: Any) -> Iterator[str]:
    """Run ``app`` under uvicorn on a free loopback port; yields the base URL."""
    port = free_port()
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_config=None, access_log=False, lifespan="on"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(15)


@dataclass
class World:
    base: str
    headers: dict[str, dict[str, str]]  # principal → request headers
    memos: dict[str, str]  # label → memos/{id}
    space: str
    attachment: str
    reaction: str
    extra: dict[str, Any] = field(default_factory=dict)


@pytest.fixture(scope="module")
async def module_db(dialect: str, templates: Templates) -> AsyncIterator[tuple[str, pathlib.Path]]:
    """A migrated database for one module, and a data directory."""
    import tempfile

    tmp = pathlib.Path(tempfile.mkdtemp(prefix="daybook-mcp-"))
    if dialect == "sqlite":
        shutil.copyfile(templates.sqlite_file, tmp / "daybook.db")
        yield f"sqlite:///{tmp / 'daybook.db'}", tmp / "data"
    else:
        assert templates.pg_root is not None
        name = f"mcp_{os.getpid()}_{id(tmp) % 100000}"
        await _admin_exec(templates.pg_root, f"CREATE DATABASE {name} TEMPLATE daybook_template")
        yield templates.pg_root.format(db=name), tmp / "data"
        await _admin_exec(templates.pg_root, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    shutil.rmtree(tmp, ignore_errors=True)


def live_settings(database_url: str, data_dir: pathlib.Path, **kw: Any) -> Settings:
    return make_settings(
        database_url, data_dir.parent, data_dir=data_dir, embedding_model="hash-64", **kw
    )


@pytest.fixture(scope="module")
def server(module_db: tuple[str, pathlib.Path]) -> Iterator[str]:
    url, data = module_db
    with serve_in_thread(create_app(live_settings(url, data))) as base:
        yield base


async def _ok(r: httpx.Response) -> Any:
    assert r.status_code == 200, f"{r.request.method} {r.request.url}: {r.status_code} {r.text}"
    return r.json()


@pytest.fixture(scope="module")
async def world(server: str) -> World:
    async with httpx.AsyncClient(base_url=server) as http:
        creds = {"username": "alice", "password": "password-1"}
        await _ok(await http.post("/api/v1/users", json=creds))
        signin = {"passwordCredentials": creds}
        alice = {
            "Authorization": f"Bearer {(await _ok(await http.post('/api/v1/auth/signin', json=signin)))['accessToken']}"
        }
        http.cookies.clear()
        await _ok(
            await http.post(
                "/api/v1/users", json={"username": "bob", "password": "password-2"}, headers=alice
            )
        )
        signin = {"passwordCredentials": {"username": "bob", "password": "password-2"}}
        bob = {
            "Authorization": f"Bearer {(await _ok(await http.post('/api/v1/auth/signin', json=signin)))['accessToken']}"
        }
        http.cookies.clear()
        await _ok(
            await http.patch(
                "/api/v1/instance/settings/ACCESS", json={"accessMode": "PUBLIC"}, headers=alice
            )
        )

        space = (
            await _ok(await http.post("/api/v1/spaces", json={"title": "Team"}, headers=alice))
        )["name"]
        await _ok(
            await http.post(
                f"/api/v1/{space}/invitations",
                json={"invitee": "users/bob", "role": "USER"},
                headers=alice,
            )
        )
        await _ok(await http.post(f"/api/v1/{space}/invitations/bob:accept", headers=bob))

        async def memo(who: dict[str, str], content: str, **fields: Any) -> str:
            body = await _ok(
                await http.post("/api/v1/memos", json={"content": content, **fields}, headers=who)
            )
            return str(body["name"])

        memos = {
            "a_private": await memo(alice, "alice private #work"),
            "a_protected": await memo(alice, "alice protected #work", visibility="PROTECTED"),
            "a_public": await memo(alice, "alice public #work #pub", visibility="PUBLIC"),
            "a_share": await memo(
                alice, "alice in share #work", visibility="SPACE", space=space, tree="share"
            ),
            "a_home": await memo(
                alice, "alice at home #work", visibility="SPACE", space=space, tree="~"
            ),
            "b_private": await memo(bob, "bob private #work"),
            "b_protected": await memo(bob, "bob protected #work", visibility="PROTECTED"),
        }
        pub = memos["a_public"]
        comment = await _ok(
            await http.post(
                f"/api/v1/{pub}/comments",
                json={"content": "a comment", "visibility": "PUBLIC"},
                headers=alice,
            )
        )
        memos["a_comment"] = comment["name"]
        reaction = await _ok(
            await http.post(f"/api/v1/{pub}/reactions", json={"reactionType": "👍"}, headers=alice)
        )
        relations = {
            "relations": [{"relatedMemo": {"name": memos["a_protected"]}, "type": "REFERENCE"}]
        }
        await _ok(await http.patch(f"/api/v1/{pub}/relations", json=relations, headers=alice))
        upload = {
            "filename": "note.txt",
            "type": "text/plain",
            "content": base64.b64encode(b"hi").decode(),
            "memo": pub,
        }
        attachment = (
            await _ok(await http.post("/api/v1/attachments", json=upload, headers=alice))
        )["name"]
        await _ok(
            await http.post(
                "/api/v1/users/alice/views",
                json={"title": "Work", "filter": '"work" in tags'},
                headers=alice,
            )
        )
        await _ok(
            await http.patch(
                f"/api/v1/{memos['a_protected']}?updateMask=content",
                json={"content": "alice protected, edited #work"},
                headers=alice,
            )
        )

        async def key(restriction: dict[str, Any] | None) -> dict[str, str]:
            body: dict[str, Any] = {"description": "agent"}
            if restriction is not None:
                body["restriction"] = restriction
            made = await _ok(
                await http.post(
                    "/api/v1/users/alice/personalAccessTokens", json=body, headers=alice
                )
            )
            return {"Authorization": f"Bearer {made['token']}"}

        headers = {
            "session": alice,
            "bob": bob,
            "anonymous": {},
            "pat": await key(None),
            "read_key": await key(
                {
                    "scope": "READ",
                    "personal": "OWN",
                    "spaces": [{"space": space, "trees": [{"path": "share", "level": "READ"}]}],
                }
            ),
            "read_key_none": await key({"scope": "READ", "personal": "NONE", "spaces": []}),
            "write_key": await key(
                {"scope": "WRITE", "personal": "OWN", "spaces": [{"space": space}]}
            ),
        }
        return World(server, headers, memos, space, attachment, str(reaction.get("name", "")))


@contextlib.asynccontextmanager
async def mcp_session(
    base: str, headers: dict[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    """An initialised SDK client session against ``{base}/mcp``."""
    async with (
        httpx2.AsyncClient(headers=headers or {}) as http,
        streamable_http_client(f"{base}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session
