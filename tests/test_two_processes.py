"""Two Daybook processes on one database behave as one service.

Sessions, sign-in failure counts, instance settings, memos and the signing
secret live in the database, so a load balancer may send consecutive requests
of one client to different processes, each with its own data directory. Runs real server processes (uvicorn) against the
embedded PostgreSQL and against one SQLite file.
"""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest

from tests.support import free_port, wait_ready


def start(url: str, data: pathlib.Path, migrate: bool) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    args = [
        sys.executable,
        "-m",
        "app.cli",
        "serve",
        "--port",
        str(port),
        "--data",
        str(data),
        "--database-url",
        url,
    ]
    if not migrate:
        args.append("--no-migrate")
    proc = subprocess.Popen(
        args,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "DAYBOOK_LOG_FORMAT": "json"},
    )
    base = f"http://127.0.0.1:{port}"
    if wait_ready(base, 30):
        return proc, base
    proc.kill()
    raise RuntimeError("server did not become ready")


@pytest.fixture(params=["sqlite", "postgresql"])
def two_servers(
    request: pytest.FixtureRequest, tmp_path: pathlib.Path
) -> Iterator[tuple[str, str]]:
    chosen = request.config.getoption("--db") or ["sqlite", "postgresql"]
    if request.param not in chosen:
        pytest.skip(f"--db excludes {request.param}")
    # Separate data directories: the signing secret comes from the database.
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'shared.db'}"
    else:
        root = request.getfixturevalue("pg_root")
        import asyncio

        from tests.conftest import _admin_exec

        asyncio.run(_admin_exec(root, "CREATE DATABASE two_processes"))
        url = root.format(db="two_processes")
    first, a = start(url, tmp_path / "data-a", migrate=True)
    second, b = start(url, tmp_path / "data-b", migrate=False)
    try:
        yield a, b
    finally:
        for proc in (first, second):
            proc.send_signal(signal.SIGTERM)
        for proc in (first, second):
            assert proc.wait(timeout=15) == 0, "server did not exit cleanly on SIGTERM"


def test_state_is_shared_between_processes(two_servers: tuple[str, str]) -> None:
    a, b = two_servers
    creds = {"passwordCredentials": {"username": "alice", "password": "password-1"}}
    assert (
        httpx.post(
            f"{a}/api/v1/users", json={"username": "alice", "password": "password-1"}
        ).status_code
        == 200
    )
    token = httpx.post(f"{a}/api/v1/auth/signin", json=creds).json()["accessToken"]
    auth = {"Authorization": f"Bearer {token}"}
    # A session made on one process works on the other; so does a memo.
    memo = httpx.post(f"{b}/api/v1/memos", json={"content": "from b"}, headers=auth).json()
    assert [m["name"] for m in httpx.get(f"{a}/api/v1/memos", headers=auth).json()["memos"]] == [
        memo["name"]
    ]
    # A page token minted by one process is accepted by the other.
    httpx.post(f"{a}/api/v1/memos", json={"content": "from a"}, headers=auth)
    page = httpx.get(f"{a}/api/v1/memos?pageSize=1", headers=auth).json()
    rest = httpx.get(f"{b}/api/v1/memos?pageSize=1&pageToken={page['nextPageToken']}", headers=auth)
    assert rest.status_code == 200 and rest.json()["memos"][0]["name"] == memo["name"]
    # Settings changed through one process apply at once in the other.
    httpx.patch(
        f"{a}/api/v1/instance/settings/ACCESS",
        json={"disallowPublicVisibility": True},
        headers=auth,
    )
    denied = httpx.post(
        f"{b}/api/v1/memos", json={"content": "x", "visibility": "PUBLIC"}, headers=auth
    )
    assert denied.status_code == 403
    # Failed sign-ins are counted across processes: 10 free guesses in all,
    # then a back-off that doubles from 1 s (app.auth.throttle). The first
    # refusal may come one or two guesses late on a slow machine (a 1 s or 2 s
    # wait can pass between two requests), never before the 11th guess, and by
    # the 14th at the latest (an 8 s wait cannot); counted per process, the
    # guesses split 7/7 and none would be refused.
    bad = {"passwordCredentials": {"username": "alice", "password": "wrong-password"}}
    statuses = [
        httpx.post(f"{(a, b)[i % 2]}/api/v1/auth/signin", json=bad).status_code for i in range(14)
    ]
    assert statuses[:10] == [401] * 10
    assert 429 in statuses, statuses
    # Sign-out on one process revokes the token on the other.
    assert httpx.post(f"{b}/api/v1/auth/signout", headers=auth).status_code == 200
    assert httpx.get(f"{a}/api/v1/auth/me", headers=auth).status_code == 401
