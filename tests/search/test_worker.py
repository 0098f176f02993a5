"""The background worker (in the server's lifespan) and ``daybook reindex``."""

from __future__ import annotations

import asyncio
import dataclasses
import pathlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from click.testing import CliRunner
from litestar.testing import AsyncTestClient

from app.cli import main
from app.server import create_app
from app.settings import Settings
from tests.conftest import Actor, sign_up
from tests.search.conftest import search


@pytest.fixture
async def worker_client(settings: Settings) -> AsyncIterator[AsyncTestClient[Any]]:
    app = create_app(dataclasses.replace(settings, embed_worker=True))
    async with AsyncTestClient(app=app) as c:
        yield c


async def test_worker_embeds_new_and_edited_memos(worker_client: AsyncTestClient[Any]) -> None:
    alice = await sign_up(worker_client, "alice")
    m = await alice.memo("kayak rental by the lake")

    async def settled() -> dict[str, Any]:
        for _ in range(200):  # bounded: at most ~10 s
            body: dict[str, Any] = await search(alice, "kayak")
            hit = body["results"][0]
            # The count and the ranking come from one snapshot, so on every poll
            # the memo is either pending and unranked or embedded and ranked.
            assert (body["pendingEmbeddings"], hit["semanticRank"]) in ((1, 0), (0, 1)), body
            if body["pendingEmbeddings"] == 0:
                return body
            await asyncio.sleep(0.05)
        raise AssertionError("the worker did not embed the memo")

    assert (await settled())["results"][0]["semanticRank"] == 1
    r = await alice.patch(
        f"/api/v1/{m['name']}",
        json={"content": "kayak rental, paid"},
        params={"updateMask": "content"},
    )
    assert r.status_code == 200
    assert (await settled())["results"][0]["semanticRank"] == 1


async def test_reindex_command(
    client: AsyncTestClient[Any], alice: Actor, settings: Settings, tmp_path: pathlib.Path
) -> None:
    await alice.memo("lighthouse keeper's log")
    assert (await search(alice, "lighthouse"))["pendingEmbeddings"] == 1
    result = await asyncio.to_thread(
        CliRunner().invoke,
        main,
        [
            "reindex",
            "--database-url",
            settings.database_url,
            "--data",
            str(tmp_path / "cli"),
            "--model",
            settings.embedding_model,
        ],
    )
    assert result.exit_code == 0, result.output
    assert "1 memos embedded" in result.output
    body = await search(alice, "lighthouse")
    assert body["pendingEmbeddings"] == 0
    assert body["results"][0]["semanticRank"] == 1
