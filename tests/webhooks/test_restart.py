"""Deliveries survive a crash: a server killed (SIGKILL) with deliveries in flight
and pending delivers them after it restarts, with the same ``webhook-id``s.

Real server processes (``daybook serve``) on one SQLite file and on the
embedded PostgreSQL. The lease of a claim is ``2 * timeout + 1`` seconds, so
with a 1 s timeout the restarted server re-claims the killed attempts after 3 s.
"""

from __future__ import annotations

import asyncio
import os
import pathlib
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.support import free_port, wait_ready
from tests.webhooks.conftest import HANG, Receiver

ENV = {
    "DAYBOOK_LOG_FORMAT": "json",
    "DAYBOOK_EMBED_WORKER": "0",
    "DAYBOOK_RATE_LIMITS": "0",  # one client address drives every test (decision 0029)
    "DAYBOOK_WEBHOOK_ALLOW_PRIVATE": "127.0.0.1",
    "DAYBOOK_WEBHOOK_TIMEOUT": "1",
    "DAYBOOK_WEBHOOK_POLL": "0.1",
    "DAYBOOK_WEBHOOK_RETRY_BASE": "0.2",
    # The killed server's delivery lease runs out after 3 s, not 15: the restart
    # takes the job over sooner (the takeover itself is what is tested).
    "DAYBOOK_JOB_LEASE_SECONDS": "3",
}


def start(url: str, data: pathlib.Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "app.cli", "serve", "--port", str(port)),
            *("--data", str(data), "--database-url", url),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **ENV},
    )
    base = f"http://127.0.0.1:{port}"
    if wait_ready(base, 120):  # a loaded 2-core machine takes a while to import
        return proc, base
    proc.kill()
    raise RuntimeError("server did not become ready")


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[str]:
    chosen = request.config.getoption("--db") or ["sqlite", "postgresql"]
    if request.param not in chosen:
        pytest.skip(f"--db excludes {request.param}")
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'daybook.db'}"
        return
    from tests.conftest import _admin_exec

    root = request.getfixturevalue("pg_root")
    asyncio.run(_admin_exec(root, "CREATE DATABASE webhook_restart"))
    yield root.format(db="webhook_restart")
    asyncio.run(_admin_exec(root, "DROP DATABASE IF EXISTS webhook_restart WITH (FORCE)"))


def test_deliveries_pending_at_a_kill_arrive_after_restart(
    database: str, tmp_path: pathlib.Path, receiver: Receiver
) -> None:
    receiver.default = HANG  # every delivery hangs: in flight when the server dies
    proc, base = start(database, tmp_path / "data")
    try:
        assert httpx.post(
            f"{base}/api/v1/users", json={"username": "alice", "password": "password-1"}
        ).is_success
        token = httpx.post(
            f"{base}/api/v1/auth/signin",
            json={"passwordCredentials": {"username": "alice", "password": "password-1"}},
        ).json()["accessToken"]
        auth = {"Authorization": f"Bearer {token}"}
        hook = httpx.post(
            f"{base}/api/v1/users/alice/webhooks", json={"url": receiver.url}, headers=auth
        ).json()
        secret = httpx.get(f"{base}/api/v1/{hook['name']}:getSigningSecret", headers=auth).json()[
            "signingSecret"
        ]
        names = [
            httpx.post(f"{base}/api/v1/memos", json={"content": f"m{i}"}, headers=auth).json()[
                "name"
            ]
            for i in range(3)
        ]
        receiver.wait_for(1)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    receiver.default = (200, b'{"code":0}')
    receiver.release.set()  # the hung handlers return; nothing reached the dead server
    killed_at = len(receiver.received)

    proc, base = start(database, tmp_path / "data")
    try:
        delivered: dict[str, str] = {}
        deadline = time.monotonic() + 20
        while len(delivered) < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
            with receiver.lock:
                later = list(receiver.received[killed_at:])
            for r in later:
                body = r.json
                delivered[r.headers["webhook-id"]] = body["memo"]["name"]
        assert sorted(delivered.values()) == sorted(names)
        receiver.verified(secret)
        first_ids = {r.headers["webhook-id"] for r in receiver.received[:killed_at]}
        assert first_ids <= set(delivered)  # re-sent with the same webhook-id
        log = httpx.get(f"{base}/api/v1/{hook['name']}/deliveries", headers=auth).json()
        assert {d["eventState"] for d in log["deliveries"]} == {"DELIVERED"}
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
