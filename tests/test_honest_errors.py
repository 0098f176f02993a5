"""Honest errors (issue 12): 503/507 instead of 500, the real status in the request log,
``/readyz`` that fails when the database cannot write or is damaged.

The PostgreSQL outage test runs its own embedded server (the session's is
shared by every other test), stops it with ``pg_ctl stop -m fast`` while the
app runs, and starts it again: requests answer 503 with ``Retry-After``
during the outage and succeed afterwards, without restarting the app.
"""

from __future__ import annotations

import contextlib
import json
import pathlib
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from app.db.engine import create_engine
from app.db.migrate import upgrade
from app.server import create_app
from app.settings import Settings
from tests.conftest import Actor, sign_up
from tests.support import make_settings, start_embedded_postgres


async def test_readyz_ready(client: AsyncTestClient[Any]) -> None:
    r = await client.get("/readyz")
    assert r.status_code == 200, r.text
    assert r.json() == {"status": "ready"}


def _scribble(db: pathlib.Path) -> None:
    """Garbage over pages in the second half of the file (not the schema page)."""
    size = db.stat().st_size
    with db.open("r+b") as f:
        f.seek(size // 2)
        f.write(b"\xa5" * 8192)


async def test_readyz_fails_on_a_malformed_sqlite_database(
    dialect: str, settings: Settings, tmp_path: pathlib.Path
) -> None:
    if dialect != "sqlite":
        pytest.skip("a SQLite file's pages")
    app = create_app(settings)
    async with AsyncTestClient(app=app) as c:
        alice = await sign_up(c, "alice")
        for i in range(40):
            await alice.memo(f"memo {i} " + "x" * 3000)
    db = pathlib.Path(settings.database_url.removeprefix("sqlite:///"))
    engine = create_engine(settings.database_url)
    async with engine.connect() as conn:
        await conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    await engine.dispose()
    _scribble(db)
    async with AsyncTestClient(app=create_app(settings)) as c:
        r = await c.get("/readyz")
    assert r.status_code == 503, r.text
    assert "integrity" in r.json()["status"]


async def test_unauthenticated_is_logged_as_401(
    client: AsyncTestClient[Any], capsys: pytest.CaptureFixture[str]
) -> None:
    r = await client.get("/api/v1/memos", headers={"Authorization": "Bearer nope"})
    assert r.status_code == 401
    lines = [json.loads(x) for x in capsys.readouterr().err.splitlines() if x.startswith("{")]
    logged = [x for x in lines if x.get("event") == "request" and x.get("path") == "/api/v1/memos"]
    assert [x["status"] for x in logged] == [401]


@pytest.fixture
def own_pg() -> Iterator[Any]:
    """A private embedded PostgreSQL server this test may stop and start."""
    workdir = pathlib.Path(tempfile.mkdtemp(prefix="daybook-pg-outage-"))
    server, _ = start_embedded_postgres(workdir / "pg")
    yield server
    server.cleanup()
    shutil.rmtree(workdir, ignore_errors=True)


def _pg_ctl(server: Any, *args: str) -> None:
    from embedded_postgres._commands import pg_ctl

    pg_ctl(list(args), pgdata=server.pgdata, user=server.system_user, timeout=30)


async def test_postgresql_stopped_is_503_then_recovers(
    dialect: str,
    request: pytest.FixtureRequest,
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    if dialect != "postgresql":
        pytest.skip("a PostgreSQL server's outage")
    own_pg = request.getfixturevalue("own_pg")
    uri = own_pg.get_uri("postgres")
    host = uri.split("host=", 1)[1]
    url = f"postgresql://postgres@/postgres?host={host}"
    engine = create_engine(url)
    await upgrade(engine)
    await engine.dispose()
    settings = make_settings(url, tmp_path)
    async with AsyncTestClient(app=create_app(settings)) as c:
        alice: Actor = await sign_up(c, "alice")
        await alice.memo("before")
        capsys.readouterr()
        _pg_ctl(own_pg, "-w", "stop", "-m", "fast")
        try:
            statuses = []
            for _ in range(3):
                r = await alice.get("/api/v1/memos")
                statuses.append(r.status_code)
                assert r.status_code == 503, capsys.readouterr().err[-3000:]
                assert int(r.headers["retry-after"]) >= 1
                assert "retry" in r.json()["message"]
                w = await alice.post("/api/v1/memos", json={"content": "during"})
                assert w.status_code == 503, w.text
            ready = await c.get("/readyz")
            assert ready.status_code == 503
        finally:
            own_pg._postmaster_info = None
            with own_pg._lock:
                own_pg.ensure_postgres_running()
        err = capsys.readouterr().err
        assert "Traceback" not in err
        r = await alice.get("/api/v1/memos")
        assert r.status_code == 200, r.text
        assert [m["content"] for m in r.json()["memos"]] == ["before"]
        assert (await alice.post("/api/v1/memos", json={"content": "after"})).status_code == 200
        assert (await c.get("/readyz")).status_code == 200


@contextlib.contextmanager
def _tmpfs(mount: pathlib.Path, size: str) -> Iterator[pathlib.Path]:
    """A tmpfs of ``size`` mounted on ``mount`` for the block (root only; the test is
    skipped where mounting is not allowed)."""
    import subprocess

    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.fixture
def small_disk(tmp_path: pathlib.Path) -> Iterator[pathlib.Path]:
    """A 3 MiB tmpfs."""
    mount = tmp_path / "small"
    mount.mkdir()
    with _tmpfs(mount, "3m"):
        yield mount


async def test_disk_full_is_507_not_500(
    dialect: str, templates: Any, request: pytest.FixtureRequest, tmp_path: pathlib.Path
) -> None:
    if dialect != "sqlite":
        pytest.skip("the database file on a small tmpfs")
    disk = request.getfixturevalue("small_disk")
    shutil.copyfile(templates.sqlite_file, disk / "daybook.db")
    settings = make_settings(f"sqlite:///{disk / 'daybook.db'}", tmp_path)
    async with AsyncTestClient(app=create_app(settings)) as c:
        alice = await sign_up(c, "alice")
        statuses: list[int] = []
        for i in range(400):
            r = await alice.post("/api/v1/memos", json={"content": f"{i} " + "y" * 7000})
            statuses.append(r.status_code)
            if r.status_code != 200:
                break
        assert statuses[-1] == 507, statuses[-5:]
        assert set(statuses[:-1]) == {200}
        assert "full" in r.json()["message"]
        ready = await c.get("/readyz")
        assert ready.status_code == 503
        # Reads still work, and every acknowledged memo is there.
        listed = await alice.get("/api/v1/memos", params={"pageSize": 1000})
        assert listed.status_code == 200
        assert len(listed.json()["memos"]) == len(statuses) - 1


@pytest.fixture
def small_tablespace_disk() -> Iterator[pathlib.Path]:
    """A 48 MiB tmpfs for a PostgreSQL tablespace, outside pytest's private temporary
    directory so that the server's own user can reach it."""
    mount = pathlib.Path(tempfile.mkdtemp(prefix="daybook-pgsmall-"))
    mount.chmod(0o755)
    try:
        with _tmpfs(mount, "48m"):
            yield mount
    finally:
        shutil.rmtree(mount, ignore_errors=True)


async def test_postgresql_disk_full_is_507_then_recovers(
    dialect: str, request: pytest.FixtureRequest, tmp_path: pathlib.Path
) -> None:
    """The database's files on a tablespace whose disk fills up: every create is 200
    until a 507 that says the disk is full (PostgreSQL's 53100), never a 500;
    reads go on, every acknowledged memo is there, and once space is freed
    writes succeed again without a restart."""
    if dialect != "postgresql":
        pytest.skip("a PostgreSQL tablespace on a small disk")
    import os
    import random
    import string

    import asyncpg

    disk = request.getfixturevalue("small_tablespace_disk")
    own_pg = request.getfixturevalue("own_pg")
    place = disk / "tablespace"
    place.mkdir()
    shutil.chown(place, user=own_pg.system_user)
    host = own_pg.get_uri("postgres").split("host=", 1)[1]
    admin = await asyncpg.connect(host=host, user="postgres", database="postgres")
    try:
        await admin.execute(f"CREATE TABLESPACE small LOCATION '{place}'")
        await admin.execute("CREATE DATABASE onsmall TABLESPACE small")
    finally:
        await admin.close()
    url = f"postgresql://postgres@/onsmall?host={host}"
    engine = create_engine(url)
    await upgrade(engine)
    await engine.dispose()
    filler = disk / "filler"
    free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
    with filler.open("wb") as f:  # leave about 1.5 MiB for the memos
        f.write(b"\0" * max(0, free - 1536 * 1024))
    rng = random.Random(12)
    settings = make_settings(url, tmp_path)
    async with AsyncTestClient(app=create_app(settings)) as c:
        alice = await sign_up(c, "alice")
        statuses: list[int] = []
        for i in range(1000):
            body = "".join(rng.choices(string.ascii_letters + " ", k=7000))  # incompressible
            r = await alice.post("/api/v1/memos", json={"content": f"{i} {body}"})
            statuses.append(r.status_code)
            if r.status_code != 200:
                break
        assert statuses[-1] == 507, statuses[-5:]
        assert set(statuses[:-1]) == {200} and len(statuses) > 1
        assert "full" in r.json()["message"]
        listed = await alice.get("/api/v1/memos", params={"pageSize": 1000})
        assert listed.status_code == 200
        assert len(listed.json()["memos"]) == len(statuses) - 1
        filler.unlink()
        again = await alice.post("/api/v1/memos", json={"content": "after the disk was freed"})
        assert again.status_code == 200, again.text
        assert (await c.get("/readyz")).status_code == 200


async def test_sqlite_locked_by_another_process_is_503(
    dialect: str, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Busy past the wait budget: 503 with Retry-After, and the write succeeds once free."""
    if dialect != "sqlite":
        pytest.skip("SQLite's single write lock")
    import sqlite3

    from app.db import transactions

    monkeypatch.setattr(transactions, "WRITE_WAIT", 0.5)
    async with AsyncTestClient(app=create_app(settings)) as c:
        alice = await sign_up(c, "alice")
        other = sqlite3.connect(
            settings.database_url.removeprefix("sqlite:///"), isolation_level=None
        )
        other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
        try:
            r = await alice.post("/api/v1/memos", json={"content": "blocked"})
            assert r.status_code == 503, r.text
            assert r.headers["retry-after"] == "1"
            listed = await alice.get("/api/v1/memos")  # reads are not blocked
            assert listed.status_code == 200
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert (await alice.post("/api/v1/memos", json={"content": "free"})).status_code == 200


def test_classify_postgresql_conditions() -> None:
    from sqlalchemy.exc import OperationalError

    from app.db.faults import classify

    class PgError(Exception):
        def __init__(self, sqlstate: str) -> None:
            super().__init__(sqlstate)
            self.sqlstate = sqlstate

    def wrapped(code: str) -> OperationalError:
        return OperationalError("INSERT ...", {}, PgError(code))

    full = classify(wrapped("53100"))
    assert full is not None and full.status == 507 and "full" in full.message
    for code in ("57P03", "57P01", "08006", "53300"):
        got = classify(wrapped(code))
        assert got is not None and got.status == 503, code
    assert classify(wrapped("23505")) is None  # a unique violation is not an outage
    assert classify(ValueError("bug")) is None
