"""Search tests: the hashing embedder (deterministic, no model) unless a test asks for a real one.

The embedding worker is off (``Settings.embed_worker`` defaults to False);
tests embed explicitly with :func:`embed_all`, so "not yet embedded" is a
state a test can hold.
"""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from app.db.engine import create_engine
from app.search.worker import embed_pending
from app.settings import Settings
from tests.support import make_settings


@pytest.fixture
def settings(database_url: str, tmp_path: pathlib.Path) -> Settings:
    return make_settings(database_url, tmp_path, embedding_model="hash-64")


async def embed_all(client: AsyncTestClient[Any], **kw: Any) -> int:
    """Run the worker's loop to completion on an engine of the test's own event loop
    (the app's engine belongs to the test client's loop)."""
    runtime = client.app.state.search
    engine = create_engine(client.app.state.settings.database_url)
    try:
        return await embed_pending(engine, runtime.embedder, runtime.pgvector, **kw)
    finally:
        await engine.dispose()


async def search(actor: Any, query: str, **params: Any) -> Any:
    r = await actor.get("/api/v1/memos:search", params={"query": query, **params})
    assert r.status_code == 200, r.text
    return r.json()


def contents(body: dict[str, Any]) -> list[str]:
    return [r["memo"]["content"] for r in body["results"]]
