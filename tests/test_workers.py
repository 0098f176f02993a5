"""``daybook serve --workers 2``: both workers serve, background jobs run once.

One real supervisor with two worker processes on one SQLite file (the case
where the workers share the file's write lock). Requests are answered by
both workers (their pids in the request log); the embedding worker, webhook
delivery and the trash purge each run in exactly one of them (one
``job_lease`` row per job, held by a worker's pid; one "lease.taken" per
job); a memo written through one worker is read through the other.
"""

from __future__ import annotations

import json
import os
import pathlib
import signal
import sqlite3
import subprocess
import sys
import time

import httpx

from tests.support import wait_ready
from tests.test_two_processes import free_port

PASSWORD = "password-1"


def test_two_workers_share_requests_and_run_each_job_once(tmp_path: pathlib.Path) -> None:
    port = free_port()
    db = tmp_path / "daybook.db"
    log = tmp_path / "serve.log"
    env = {
        **os.environ,
        "DAYBOOK_LOG_FORMAT": "json",
        "DAYBOOK_EMBED_WORKER": "1",
        "DAYBOOK_WEBHOOK_WORKER": "1",
    }
    env.pop("DAYBOOK_WORKERS", None)
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "app.cli",
                "serve",
                "--workers",
                "2",
                "--port",
                str(port),
                "--data",
                str(tmp_path / "data"),
                "--database-url",
                f"sqlite:///{db}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=out,
            env=env,
            start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        ready = wait_ready(base, 120, proc=proc, interval=0.2)
        assert proc.poll() is None, log.read_text()[-3000:]
        assert ready, "serve --workers 2 never became ready"
        workers = {
            int(p)
            for p in pathlib.Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        }
        # The supervisor never imports the app and migrates in a child: it
        # stays small (143 MB resident when it imported the app, 47 MB since).
        assert _rss_mb(proc.pid) < 90, _rss_mb(proc.pid)
        httpx.post(f"{base}/api/v1/users", json={"username": "alice", "password": PASSWORD})
        token = httpx.post(
            f"{base}/api/v1/auth/signin",
            json={"passwordCredentials": {"username": "alice", "password": PASSWORD}},
        ).json()["accessToken"]
        auth = {"Authorization": f"Bearer {token}"}
        names = []
        for i in range(30):  # a fresh connection each time: either worker may accept it
            r = httpx.post(f"{base}/api/v1/memos", json={"content": f"m{i} #w"}, headers=auth)
            assert r.status_code == 200, r.text
            names.append(r.json()["name"])
        for name in names:  # every memo readable whichever worker answers
            assert httpx.get(f"{base}/api/v1/{name}", headers=auth).status_code == 200
        deadline = time.monotonic() + 30
        while True:  # leases are taken in the background at start
            rows = sqlite3.connect(db).execute("SELECT name, holder FROM job_lease").fetchall()
            if len(rows) == 3:
                break
            assert time.monotonic() < deadline, rows
            time.sleep(0.3)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)
    lines = [json.loads(x) for x in log.read_text().splitlines() if x.startswith("{")]
    served = {x["pid"] for x in lines if x.get("event") == "request"}
    assert len(workers) >= 2  # a replacement may be starting beside them
    # Both workers answered requests (a worker the supervisor replaced, on a
    # starved machine, counts as another).
    assert len(served) >= 2, (served, workers)
    assert {name for name, _ in rows} == {"embedding", "webhook-delivery", "trash-retention"}
    for _, holder in rows:
        assert int(holder.split(":")[1]) in served | workers
    taken = [x["job"] for x in lines if x.get("event") == "lease.taken"]
    assert sorted(taken) == ["embedding", "trash-retention", "webhook-delivery"]  # once each
    assert proc.returncode == 0


def _rss_mb(pid: int) -> float:
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for {pid}")


def test_a_failed_migration_stops_the_supervisor(tmp_path: pathlib.Path) -> None:
    """The supervisor migrates in a child process: when the child fails, the
    supervisor exits non-zero and says why, and no worker starts."""
    db = tmp_path / "daybook.db"
    db.write_bytes(b"this is not a SQLite database" * 200)
    env = {**os.environ}
    env.pop("DAYBOOK_WORKERS", None)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "app.cli",
            "serve",
            "--workers",
            "2",
            "--port",
            str(free_port()),
            "--data",
            str(tmp_path / "data"),
            "--database-url",
            f"sqlite:///{db}",
        ],
        capture_output=True,
        env=env,
        timeout=120,
    )
    assert done.returncode != 0
    assert b"migrations failed" in done.stderr, done.stderr[-2000:]
    assert db.read_bytes().startswith(b"this is not a SQLite database")  # left as it was
