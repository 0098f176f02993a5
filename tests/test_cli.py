"""The ``daybook`` command line: help, migrate, user create, and a real ``serve`` process."""

from __future__ import annotations

import asyncio
import itertools
import os
import pathlib
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator

import pytest
from click.testing import CliRunner
from litestar.testing import TestClient

from app.cli import main
from app.db.migrate import head_revision
from app.server import create_app
from app.settings import Settings
from tests.conftest import _admin_exec
from tests.support import free_port, wait_ready
from tests.test_migrations import chain

_counter = itertools.count()
PASSWORD = "correct horse battery"


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    for var in list(os.environ):
        if var.startswith("DAYBOOK_"):
            monkeypatch.delenv(var)
    return CliRunner()


@pytest.fixture
async def empty_url(
    dialect: str, tmp_path: pathlib.Path, request: pytest.FixtureRequest
) -> AsyncIterator[str]:
    """A fresh database with no tables."""
    if dialect == "sqlite":
        yield f"sqlite:///{tmp_path / 'empty.db'}"
        return
    root: str = request.getfixturevalue("pg_root")
    name = f"cli_{os.getpid()}_{next(_counter)}"
    await _admin_exec(root, f"CREATE DATABASE {name}")
    yield root.format(db=name)
    await _admin_exec(root, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


# --------------------------------------------------------------------------- help


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], ["serve", "migrate", "user", "backup", "restore"]),
        (["backup"], ["DEST", "--data", "--database-url"]),
        (["restore"], ["SRC", "--yes", "--data", "--database-url"]),
        (
            ["serve"],
            ["--port", "--host", "--data", "--database-url", "--public-url", "--no-migrate"],
        ),
        (["migrate"], ["--data", "--database-url", "--revision", "--yes"]),
        (["user", "create"], ["--username", "--password-stdin", "--admin", "--data"]),
    ],
)
def test_help(runner: CliRunner, args: list[str], expected: list[str]) -> None:
    result = runner.invoke(main, [*args, "--help"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("Usage: ")
    for word in expected:
        assert word in result.output


# --------------------------------------------------------------------------- migrate


def test_migrate_creates_sqlite_at_head(runner: CliRunner, tmp_path: pathlib.Path) -> None:
    data = tmp_path / "data"
    result = runner.invoke(main, ["migrate", "--data", str(data)])
    assert result.exit_code == 0, result.output
    assert head_revision() in result.output
    db = data / "daybook.db"
    assert db.is_file()
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchall() == [
            (head_revision(),)
        ]
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"user_account", "memo", "auth_session"} <= tables
    # Idempotent: a second run is a no-op at head.
    again = runner.invoke(main, ["migrate", "--data", str(data)])
    assert again.exit_code == 0, again.output
    assert head_revision() in again.output


def test_migrate_database_url(runner: CliRunner, empty_url: str, tmp_path: pathlib.Path) -> None:
    args = ["migrate", "--data", str(tmp_path / "data"), "--database-url", empty_url]
    result = runner.invoke(main, args)
    assert result.exit_code == 0, result.output
    assert f"database at revision {head_revision()}" in result.output
    down = runner.invoke(main, [*args, "--revision", "base", "--yes"])
    assert down.exit_code == 0, down.output
    assert "database at revision None" in down.output
    up = runner.invoke(main, args)
    assert up.exit_code == 0, up.output
    assert head_revision() in up.output


def test_migrate_to_a_given_revision_up_and_down(runner: CliRunner, tmp_path: pathlib.Path) -> None:
    """``--revision`` goes up as well as down, one named revision at a time."""
    data = str(tmp_path / "data")
    revisions = chain()
    for revision in [*revisions, *reversed(revisions[:-1])]:
        result = runner.invoke(main, ["migrate", "--data", data, "--revision", revision])
        assert result.exit_code == 0, result.output
        assert f"database at revision {revision}" in result.output
    if len(revisions) > 1:
        up = runner.invoke(main, ["migrate", "--data", data, "--revision", "+1"])
        assert up.exit_code == 0, up.output
        assert f"database at revision {revisions[1]}" in up.output
        down = runner.invoke(main, ["migrate", "--data", data, "--revision", "-1"])
        assert down.exit_code == 0, down.output
        assert f"database at revision {revisions[0]}" in down.output
    base = runner.invoke(main, ["migrate", "--data", data, "--revision", "base", "--yes"])
    assert base.exit_code == 0, base.output
    assert "database at revision None" in base.output


def test_migrate_unknown_revision_is_a_clear_error(
    runner: CliRunner, tmp_path: pathlib.Path
) -> None:
    data = str(tmp_path / "data")
    # On an empty database (the upgrade path), then on a migrated one.
    for migrated in (False, True):
        if migrated:
            assert runner.invoke(main, ["migrate", "--data", data]).exit_code == 0
        result = runner.invoke(main, ["migrate", "--data", data, "--revision", "nonsense"])
        assert result.exit_code == 1
        assert result.output.startswith("Error: ") and "'nonsense'" in result.output
        assert isinstance(result.exception, SystemExit)  # handled, no traceback


def test_migrate_down_that_deletes_data_needs_yes(
    runner: CliRunner, empty_url: str, tmp_path: pathlib.Path
) -> None:
    """``--revision base`` drops everything: refused without ``--yes``, even on an empty
    database; a downgrade that deletes rows (0003 drops spaces) is refused while they exist.
    A refusal names what would go and changes nothing."""
    import asyncio

    import sqlalchemy as sa

    from app.db.engine import create_engine

    args = ["migrate", "--data", str(tmp_path / "data"), "--database-url", empty_url]
    assert runner.invoke(main, args).exit_code == 0
    base = runner.invoke(main, [*args, "--revision", "base"])
    assert base.exit_code == 1, base.output
    assert "drops the whole schema" in base.output and "--yes" in base.output
    assert "Traceback" not in base.output

    # No space yet: going below 0003 deletes nothing, so no confirmation is needed.
    assert runner.invoke(main, [*args, "--revision", "0003"]).exit_code == 0
    assert runner.invoke(main, [*args, "--revision", "0002"]).exit_code == 0
    assert runner.invoke(main, args).exit_code == 0

    async def add_space() -> None:
        engine = create_engine(empty_url)
        async with engine.begin() as conn:
            await conn.execute(
                sa.text(
                    "INSERT INTO user_account (username, role, state, nickname, email,"
                    " description, avatar_url, password_hash, created_ts, updated_ts)"
                    " VALUES ('u', 'USER', 'NORMAL', '', '', '', '', 'x', 0, 0)"
                )
            )
            await conn.execute(
                sa.text(
                    "INSERT INTO space (uid, title, description, creator_id,"
                    " default_member_grants, created_ts, updated_ts)"
                    " VALUES ('s', 'S', '', 1, '[]', 0, 0)"
                )
            )
        await engine.dispose()

    asyncio.run(add_space())
    down = runner.invoke(main, [*args, "--revision", "0002"])
    assert down.exit_code == 1, down.output
    assert "space (1 rows)" in down.output and "nothing was changed" in down.output
    assert f"database at revision {head_revision()}" in runner.invoke(main, args).output
    yes = runner.invoke(main, [*args, "--revision", "0002", "--yes"])
    assert yes.exit_code == 0, yes.output
    assert "database at revision 0002" in yes.output
    gone = runner.invoke(main, [*args, "--revision", "base", "--yes"])
    assert gone.exit_code == 0 and "database at revision None" in gone.output


# --------------------------------------------------------------------------- user create


def _sign_in(settings: Settings, username: str, password: str) -> dict[str, object]:
    with TestClient(app=create_app(settings)) as client:
        r = client.post(
            "/api/v1/auth/signin",
            json={"passwordCredentials": {"username": username, "password": password}},
        )
        assert r.status_code == 200, r.text
        token = r.json()["accessToken"]
        me = client.get("/api/v1/auth/me", headers={"Authorization": f"Bearer {token}"})
        assert me.status_code == 200, me.text
        return dict(me.json()["user"])


def test_user_create_admin_can_sign_in(
    runner: CliRunner, database_url: str, tmp_path: pathlib.Path
) -> None:
    data = tmp_path / "data"
    args = [
        "user",
        "create",
        "--username",
        "u",
        "--password-stdin",
        "--admin",
        "--data",
        str(data),
        "--database-url",
        database_url,
    ]
    result = runner.invoke(main, args, input=PASSWORD + "\n")
    assert result.exit_code == 0, result.output
    assert "created user u" in result.output
    assert PASSWORD not in result.output

    settings = Settings(data_dir=data, database_url=database_url, log_format="json")
    user = _sign_in(settings, "u", PASSWORD)
    assert user["name"] == "users/u"
    assert user["role"] == "ADMIN"

    # The same username again: a clear message, a failing exit code.
    again = runner.invoke(main, args, input="another password\n")
    assert again.exit_code != 0
    assert "already exists" in again.output
    assert "Traceback" not in again.output
    _sign_in(settings, "u", PASSWORD)  # the first password still works


def test_user_create_without_admin_is_a_user(runner: CliRunner, tmp_path: pathlib.Path) -> None:
    data = tmp_path / "data"
    result = runner.invoke(
        main,
        ["user", "create", "--username", "plain", "--password-stdin", "--data", str(data)],
        input=PASSWORD + "\n",
    )
    assert result.exit_code == 0, result.output
    assert "ADMIN" not in result.output
    user = _sign_in(Settings(data_dir=data, log_format="json"), "plain", PASSWORD)
    assert user["role"] == "USER"


@pytest.mark.parametrize(
    ("username", "password", "message"),
    [
        ("u", "short", "password"),
        ("u", "", "password"),
        ("bad name!", PASSWORD, "username"),
    ],
)
def test_user_create_refuses_bad_input(
    runner: CliRunner, tmp_path: pathlib.Path, username: str, password: str, message: str
) -> None:
    data = tmp_path / "data"
    result = runner.invoke(
        main,
        ["user", "create", "--username", username, "--password-stdin", "--data", str(data)],
        input=password + "\n",
    )
    assert result.exit_code != 0
    assert message in result.output
    assert "Traceback" not in result.output
    if password:
        assert password not in result.output.replace(f"{username!r}", "")
    db = data / "daybook.db"
    if db.exists():  # nothing was created
        with sqlite3.connect(db) as conn:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
            if "user_account" in tables:
                assert conn.execute("SELECT count(*) FROM user_account").fetchone() == (0,)


# --------------------------------------------------------------------------- serve


def _get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return int(r.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def test_serve_process_health_and_clean_sigterm(
    dialect: str, empty_url: str, tmp_path: pathlib.Path
) -> None:
    """A real ``daybook serve`` on a fresh database: it migrates at start, answers the
    probes, and stops with status 0 on SIGTERM; the instance secret stays private."""
    data = tmp_path / "data"
    port = free_port()
    # SQLite: the default, a file in the data directory that does not exist yet.
    url = [] if dialect == "sqlite" else ["--database-url", empty_url]
    env = {k: v for k, v in os.environ.items() if not k.startswith("DAYBOOK_")}
    env["DAYBOOK_WORKERS"] = "1"  # one process (tests/test_workers.py runs several)
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "app.cli",
                "serve",
                "--port",
                str(port),
                "--data",
                str(data),
                *url,
            ],
            stdout=stdout,
            stderr=stderr,
            env=env,
            cwd=tmp_path,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            ready = wait_ready(base, 30, proc=proc)
            assert proc.poll() is None, f"serve exited early:\n{err.read_text()}"
            assert ready, f"no /readyz after 30s:\n{err.read_text()}"
            assert _get(f"{base}/healthz") == 200
            assert _get(f"{base}/api/v1/auth/me") == 401

            started = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(timeout=10)
            assert code == 0, f"exit code {code}:\n{err.read_text()}"
            assert time.monotonic() - started < 6
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    if dialect == "sqlite":
        assert (data / "daybook.db").is_file()
    # The signing secret lives in the database (every process reads the same one),
    # not in the data directory, and never reaches the logs.
    assert not (data / "secret").exists()
    secret = asyncio.run(_stored_secret(empty_url if dialect != "sqlite" else data))
    assert secret is not None and len(secret) >= 32
    logs = out.read_bytes() + err.read_bytes()
    assert secret.encode() not in logs


async def _stored_secret(where: str | pathlib.Path) -> str | None:
    from app.db.engine import create_engine
    from app.instance.secret import stored_secret

    url = where if isinstance(where, str) else f"sqlite:///{where / 'daybook.db'}"
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            return await stored_secret(conn)
    finally:
        await engine.dispose()
