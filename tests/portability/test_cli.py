"""``daybook export``, ``daybook import`` and ``daybook import-memos-db`` on the command line.

Both dialects: the commands operate on the database directly, for a named
user, and agree with the API (same archive shape, same plan, all or nothing).
"""

from __future__ import annotations

import io
import os
import pathlib
import zipfile
from typing import Any

import anyio.to_thread
import pytest
from click.testing import CliRunner, Result

from app.cli import main
from app.settings import Settings
from tests.conftest import Actor
from tests.portability import memos_fixture as mf
from tests.portability.archives import archive, record
from tests.portability.conftest import Instance
from tests.portability.state import memos_of, table_counts


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    for var in list(os.environ):
        if var.startswith("DAYBOOK_"):
            monkeypatch.delenv(var)
    return CliRunner()


def _db(settings: Settings) -> list[str]:
    return ["--database-url", settings.database_url, "--data", str(settings.data_dir)]


async def invoke(runner: CliRunner, args: list[str]) -> Result:
    return await anyio.to_thread.run_sync(lambda: runner.invoke(main, args, catch_exceptions=False))


async def test_export_then_import_on_the_command_line(
    runner: CliRunner, alice: Actor, settings: Settings, other: Instance, tmp_path: pathlib.Path
) -> None:
    await alice.memo("from the shell #cli", visibility="PROTECTED", pinned=True)
    await alice.memo("second")
    target = tmp_path / "out.zip"
    result = await invoke(runner, ["export", *_db(settings), "--user", "alice", "-o", str(target)])
    assert result.exit_code == 0, result.output
    assert "exported 2 memos and 0 attachments" in result.output
    names = zipfile.ZipFile(io.BytesIO(target.read_bytes())).namelist()
    assert names[0] == "manifest.json" and len(names) == 6

    from tests.conftest import sign_up

    await sign_up(other.client, "alice")
    result = await invoke(
        runner, ["import", *_db(other.settings), "--user", "alice", "--validate-only", str(target)]
    )
    assert result.exit_code == 0, result.output
    assert "would import 2 memos" in result.output and "new 2" in result.output
    assert (await table_counts(other.settings.database_url))["memo"] == 0
    result = await invoke(runner, ["import", *_db(other.settings), "--user", "alice", str(target)])
    assert result.exit_code == 0, result.output
    assert "inserted 2" in result.output
    source = await memos_of(settings.database_url, settings.data_dir, "alice")
    copied = await memos_of(other.settings.database_url, other.settings.data_dir, "alice")
    assert copied == source
    result = await invoke(runner, ["import", *_db(other.settings), "--user", "alice", str(target)])
    assert "inserted 0" in result.output and "skipped 2" in result.output


async def test_import_refuses_a_bad_archive_and_writes_nothing(
    runner: CliRunner, alice: Actor, settings: Settings, tmp_path: pathlib.Path
) -> None:
    bad = tmp_path / "bad.zip"
    bad.write_bytes(archive({"good1": (record("good1"), b"x")}, counts=True)[:-40])
    before = await table_counts(settings.database_url)
    result = await invoke(runner, ["import", *_db(settings), "--user", "alice", str(bad)])
    assert result.exit_code != 0, result.output
    assert "nothing was imported" in result.output
    assert await table_counts(settings.database_url) == before
    result = await invoke(runner, ["import", *_db(settings), "--user", "nobody", str(bad)])
    assert result.exit_code != 0 and "user 'nobody' not found" in result.output


async def test_import_memos_db_command(
    runner: CliRunner, settings: Settings, tmp_path: pathlib.Path, client: Any
) -> None:
    memos_dir = tmp_path / "memos"
    memos_dir.mkdir()
    source = memos_dir / "memos_prod.db"
    mf.build_sqlite(source, "0.26", memos_dir)
    result = await invoke(runner, ["import-memos-db", *_db(settings), "--dry-run", str(source)])
    assert result.exit_code == 0, result.output
    assert "dry run, nothing written: Memos 0.26.0" in result.output
    assert (await table_counts(settings.database_url))["memo"] == 0
    result = await invoke(
        runner, ["import-memos-db", *_db(settings), "--access-mode", "PUBLIC", str(source)]
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    memos_line = next(line for line in lines if line.strip().startswith("memos "))
    assert "carried       3" in memos_line
    assert "att-s3" in result.output  # the report names what could not be carried
    result = await invoke(runner, ["import-memos-db", *_db(settings), str(source)])
    memos_line = next(
        line for line in result.output.splitlines() if line.strip().startswith("memos ")
    )
    assert "carried       0" in memos_line and "already here       3" in memos_line
    result = await invoke(runner, ["import-memos-db", *_db(settings)])
    assert result.exit_code != 0 and "one of them" in result.output
