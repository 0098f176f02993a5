"""The signing secret comes from the database: every process agrees, old installs keep theirs.

``app.instance.secret``: processes with separate data directories accept each
other's page tokens; a ``<data>/secret`` file from before is taken into the
database on first start (tokens minted with it stay valid); processes
starting together all end with one secret; an explicit ``Settings.secret``
still overrides it.
"""

from __future__ import annotations

import asyncio
import pathlib
from dataclasses import replace
from typing import Any

from litestar.testing import AsyncTestClient

from app.db.engine import create_engine
from app.instance.secret import instance_secret, stored_secret
from app.server import create_app
from app.settings import Settings
from tests.conftest import sign_up


def _without_secret(settings: Settings, data: pathlib.Path) -> Settings:
    return replace(settings, secret="", data_dir=data)


async def _two_pages(client: AsyncTestClient[Any], headers: dict[str, str]) -> str:
    for i in range(3):
        r = await client.post("/api/v1/memos", json={"content": f"m{i}"}, headers=headers)
        assert r.status_code == 200, r.text
    r = await client.get("/api/v1/memos", params={"pageSize": 1}, headers=headers)
    token: str = r.json()["nextPageToken"]
    assert token
    return token


async def test_processes_with_separate_data_dirs_accept_each_others_tokens(
    settings: Settings, tmp_path: pathlib.Path
) -> None:
    one = create_app(_without_secret(settings, tmp_path / "one"))
    two = create_app(_without_secret(settings, tmp_path / "two"))
    async with AsyncTestClient(app=one) as a, AsyncTestClient(app=two) as b:
        alice = await sign_up(a, "alice")
        token = await _two_pages(a, alice.headers)
        r = await b.get(
            "/api/v1/memos", params={"pageSize": 1, "pageToken": token}, headers=alice.headers
        )
        assert r.status_code == 200, r.text
        assert [m["content"] for m in r.json()["memos"]] == ["m1"]
    assert not (tmp_path / "one" / "secret").exists()
    assert not (tmp_path / "two" / "secret").exists()


async def test_a_legacy_secret_file_moves_into_the_database(
    settings: Settings, tmp_path: pathlib.Path
) -> None:
    """An install from before keeps its secret: a page token it signed stays valid."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "secret").write_text("legacy-secret-value-0123456789\n")
    async with AsyncTestClient(app=create_app(_without_secret(settings, data))) as client:
        alice = await sign_up(client, "alice")
        await _two_pages(client, alice.headers)
        # A token as the old process signed it, with the file's secret.
        page = await client.get("/api/v1/memos", params={"pageSize": 1}, headers=alice.headers)
        minted = page.json()["nextPageToken"]
    engine = create_engine(settings.database_url)
    try:
        async with engine.connect() as conn:
            assert await stored_secret(conn) == "legacy-secret-value-0123456789"
    finally:
        await engine.dispose()
    # Another process, without the file, accepts the token.
    other = create_app(_without_secret(settings, tmp_path / "other"))
    async with AsyncTestClient(app=other) as client:
        r = await client.get(
            "/api/v1/memos", params={"pageSize": 1, "pageToken": minted}, headers=alice.headers
        )
        assert r.status_code == 200, r.text
        assert [m["content"] for m in r.json()["memos"]] == ["m1"]


async def test_processes_starting_together_agree_on_one_secret(
    settings: Settings, tmp_path: pathlib.Path
) -> None:
    engines = [create_engine(settings.database_url) for _ in range(8)]
    try:
        found = await asyncio.gather(
            *(instance_secret(e, tmp_path / f"d{i}") for i, e in enumerate(engines))
        )
    finally:
        for e in engines:
            await e.dispose()
    assert len(set(found)) == 1 and len(found[0]) >= 32


async def test_an_explicit_secret_overrides_the_database(settings: Settings) -> None:
    async with AsyncTestClient(app=create_app(settings)) as client:
        alice = await sign_up(client, "alice")
        token = await _two_pages(client, alice.headers)
    other = create_app(replace(settings, secret=""))
    async with AsyncTestClient(app=other) as client:
        r = await client.get(
            "/api/v1/memos", params={"pageSize": 1, "pageToken": token}, headers=alice.headers
        )
        assert r.status_code == 400, r.text  # signed with "test-secret", not the database's
