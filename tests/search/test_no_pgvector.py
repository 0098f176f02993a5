"""PostgreSQL without the ``vector`` extension: the search still works, exactly.

Migration 0004 enables pgvector only where the server has it; elsewhere
``memo_embedding`` has no ``halfvec`` column and no HNSW index, the app logs
a warning at startup, and the semantic arm is the exact scan over the
admitted ids (``semantic.exact_ranking``). Here that schema comes from a
database cloned from the migrated template with ``DROP EXTENSION vector
CASCADE`` (which drops exactly the column and the index 0004 added), and the
main search tests run against it again, plus a comparison with a brute-force
ranking.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa
from litestar.testing import AsyncTestClient

from app.db.engine import create_engine
from app.db.schema import memo
from app.search.tables import memo_embedding
from app.search.vectors import decode
from app.server import create_app
from app.settings import Settings
from tests.conftest import Actor, Templates, _admin_exec
from tests.search.conftest import embed_all, search
from tests.search.test_lexical_tiers import test_lexical_mode_is_the_lexical_arm_of_hybrid
from tests.search.test_search import (
    test_a_model_change_never_mixes_vectors,
    test_cjk_query_finds_cjk_memo,
    test_editing_content_makes_the_vector_pending,
    test_filter_narrows_inside_each_arm,
    test_hidden_memos_never_take_a_candidate_slot,
    test_memos_not_yet_embedded_are_found_lexically,
    test_pages_follow_the_token,
    test_selective_audience_gets_a_full_page,
    test_vector_of_changed_content_is_not_stored,
)
from tests.search.test_snapshot import test_a_vector_committed_after_the_ranking_is_not_counted
from tests.search.test_warm import test_a_second_process_starts_warm
from tests.search.test_worker import test_worker_embeds_new_and_edited_memos, worker_client

REUSED = (
    test_a_second_process_starts_warm,
    test_a_model_change_never_mixes_vectors,
    test_a_vector_committed_after_the_ranking_is_not_counted,
    test_cjk_query_finds_cjk_memo,
    test_editing_content_makes_the_vector_pending,
    test_filter_narrows_inside_each_arm,
    test_hidden_memos_never_take_a_candidate_slot,
    test_lexical_mode_is_the_lexical_arm_of_hybrid,
    test_memos_not_yet_embedded_are_found_lexically,
    test_pages_follow_the_token,
    test_selective_audience_gets_a_full_page,
    test_vector_of_changed_content_is_not_stored,
    test_worker_embeds_new_and_edited_memos,
    worker_client,
)
_names = iter(range(1_000_000))


@pytest.fixture
async def database_url(templates: Templates) -> AsyncIterator[str]:
    """A migrated PostgreSQL database as 0004 leaves it where pgvector is unavailable."""
    if templates.pg_root is None:
        pytest.skip("PostgreSQL is not part of this run (--db sqlite)")
    name = f"nv_{os.getpid()}_{next(_names)}"
    await _admin_exec(templates.pg_root, f"CREATE DATABASE {name} TEMPLATE daybook_template")
    url = templates.pg_root.format(db=name)
    engine = create_engine(url)
    async with engine.begin() as conn:
        await conn.exec_driver_sql("DROP EXTENSION vector CASCADE")
    await engine.dispose()
    yield url
    await _admin_exec(templates.pg_root, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


async def test_the_schema_has_no_pgvector(client: AsyncTestClient[Any], database_url: str) -> None:
    assert client.app.state.search.pgvector is False
    engine = create_engine(database_url)
    async with engine.connect() as conn:
        columns = set(
            (
                await conn.exec_driver_sql(
                    "SELECT column_name FROM information_schema.columns"
                    " WHERE table_name = 'memo_embedding'"
                )
            ).scalars()
        )
        indexes = set(
            (
                await conn.exec_driver_sql(
                    "SELECT indexname FROM pg_indexes WHERE tablename = 'memo_embedding'"
                )
            ).scalars()
        )
    await engine.dispose()
    assert columns == {"memo_id", "model", "dim", "vector", "content_hash", "updated_ts"}
    assert not any("hnsw" in name for name in indexes)


async def test_startup_logs_the_exact_scan(
    settings: Settings, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    async with AsyncTestClient(app=create_app(settings)):
        pass
    out = capsys.readouterr()
    assert "pgvector is not installed" in out.out + out.err + caplog.text


async def test_semantic_arm_is_the_exact_ranking(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor
) -> None:
    """Every admitted memo by cosine similarity, as numpy computes it over the stored
    vectors, for two callers and a filter."""
    words = ["river", "stone", "cloud", "maple", "harbor", "violet", "ember", "quartz"]
    for i in range(60):
        text = " ".join(words[(i * k + k) % len(words)] for k in range(1, 4)) + f" n{i}"
        actor = alice if i % 3 else bob
        await actor.memo(text, visibility="PROTECTED" if i % 4 == 0 else "PRIVATE")
    await embed_all(client)
    embedder = client.app.state.search.embedder
    engine = create_engine(client.app.state.settings.database_url)
    async with engine.connect() as conn:
        rows = list(
            await conn.execute(
                sa.select(memo.c.uid, memo.c.creator_id, memo.c.visibility, memo_embedding.c.vector)
                .join(memo_embedding, memo_embedding.c.memo_id == memo.c.id)
                .order_by(memo.c.id)
            )
        )
    await engine.dispose()
    for actor, user_id in ((alice, 1), (bob, 2)):
        for query in ("river stone", "ember quartz n7", "harbor"):
            for flt in (None, 'visibility == "PROTECTED"'):
                q = embedder.embed_query(query)
                seen = [
                    r
                    for r in rows
                    if (r.creator_id == user_id or r.visibility == "PROTECTED")
                    and (flt is None or r.visibility == "PROTECTED")
                ]
                sims = {r.uid: float(decode(r.vector, embedder.dim) @ q) for r in seen}
                params: dict[str, Any] = {"mode": "semantic", "poolSize": 10, "pageSize": 10}
                if flt:
                    params["filter"] = flt
                body = await search(actor, query, **params)
                got = [r["memo"]["name"].removeprefix("memos/") for r in body["results"]]
                best = sorted(sims.values(), reverse=True)[: len(got)]
                assert len(got) == min(10, len(seen))
                assert np.allclose([sims[u] for u in got], best, atol=1e-5), (query, flt)
                assert body["pendingEmbeddings"] == 0
