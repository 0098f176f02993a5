"""``pendingEmbeddings`` and the semantic arm's ranking describe one database state.

Another process (here: a second engine) commits a vector for the memo right
after the statement that ranks the semantic arm, before the request reads
anything else. The response must still be consistent: the memo is either
ranked and not pending, or pending and not ranked. Before the fix the count
was a later statement in its own snapshot and said "0 pending" for a memo the
arm had not ranked.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import sqlalchemy as sa
from litestar.testing import AsyncTestClient
from sqlalchemy.ext.asyncio import AsyncConnection

from app.db.engine import create_engine
from app.db.schema import memo
from app.search.worker import store_vectors
from tests.conftest import Actor
from tests.search.conftest import embed_all, search

# A statement that picks semantic candidates: the pgvector ranking, the walk's
# admission check or the exact scan's aggregate all join memo to memo_embedding.
RANKING = re.compile(r"JOIN memo_embedding\b|\bmemo_embedding JOIN memo\b")


@pytest.mark.parametrize("mode", ["hybrid", "semantic"])
async def test_a_vector_committed_after_the_ranking_is_not_counted(
    client: AsyncTestClient[Any], alice: Actor, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    await alice.memo("canoe trip on the river")
    await embed_all(client)  # something for the arm to rank
    late = (await alice.memo("kayak rental by the lake"))["name"]
    runtime = client.app.state.search
    url = client.app.state.settings.database_url
    fired: list[str] = []
    original = AsyncConnection.execute

    async def execute(self: AsyncConnection, statement: Any, *args: Any, **kw: Any) -> Any:
        result = await original(self, statement, *args, **kw)
        sql = str(statement.compile(dialect=self.dialect)) if hasattr(statement, "compile") else ""
        if not fired and RANKING.search(sql):
            fired.append(sql)
            other = create_engine(url)  # another process's worker
            try:
                async with other.begin() as conn:
                    row = (
                        await conn.execute(
                            sa.select(memo.c.id, memo.c.content).where(
                                memo.c.content == "kayak rental by the lake"
                            )
                        )
                    ).one()
                    vectors = runtime.embedder.embed_passages([row.content])
                    stored = await store_vectors(
                        conn, runtime.embedder, [row], vectors, runtime.pgvector
                    )
                    assert stored == 1
            finally:
                await other.dispose()
        return result

    monkeypatch.setattr(AsyncConnection, "execute", execute)
    body = await search(alice, "kayak", mode=mode)
    assert fired, "no ranking statement was seen"
    ranked = {r["memo"]["name"] for r in body["results"] if r["semanticRank"]}
    # One snapshot: the late vector is neither ranked nor counted as embedded.
    assert body["pendingEmbeddings"] == 1, body
    assert late not in ranked, body
    monkeypatch.setattr(AsyncConnection, "execute", original)
    body = await search(alice, "kayak", mode=mode)
    assert body["pendingEmbeddings"] == 0
    assert late in {r["memo"]["name"] for r in body["results"] if r["semanticRank"]}
