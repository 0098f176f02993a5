"""``GET /api/v1/memos:search`` on SQLite and PostgreSQL.

The security properties come first: a hidden memo is never returned and never
takes a candidate slot in either arm, so a caller with narrow access still
gets full pages.
"""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from litestar.testing import AsyncTestClient

from app.db.engine import create_engine
from app.errors import InvalidArgument
from app.search.runtime import SearchRuntime
from app.search.service import validate
from app.search.tables import memo_embedding
from app.search.worker import store_vectors
from tests.conftest import Actor
from tests.search.conftest import contents, embed_all, search

MODES = ("hybrid", "lexical", "semantic")


async def _bulk(actor: Actor, texts: list[str], visibility: str = "PRIVATE") -> list[str]:
    return [(await actor.memo(t, visibility=visibility))["name"] for t in texts]


async def test_hidden_memos_never_take_a_candidate_slot(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor
) -> None:
    """Bob's ranking for a one-word query is identical with and without alice's private matches."""
    await _bulk(bob, [f"garden note {i}: the tomatoes need water" for i in range(6)])
    await _bulk(alice, ["the public garden opens", "garden"], visibility="PROTECTED")
    await embed_all(client)
    before = {m: await search(bob, "garden", mode=m, poolSize=5) for m in MODES}

    secret = await _bulk(alice, ["garden garden garden secret"] * 30)
    await embed_all(client)
    for m in MODES:
        after = await search(bob, "garden", mode=m, poolSize=5)
        assert after["results"] == before[m]["results"], m
        names = {r["memo"]["name"] for r in after["results"]}
        assert not names & set(secret)
    # ...while alice does see her own.
    mine = await search(alice, "garden", mode="lexical", poolSize=5)
    assert {r["memo"]["name"] for r in mine["results"]} <= set(secret)


async def test_selective_audience_gets_a_full_page(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor
) -> None:
    await _bulk(alice, ["tomato tomato tomato soup"] * 40)
    await _bulk(bob, [f"tomato plant {i}" for i in range(12)])
    await embed_all(client)
    for m in MODES:
        body = await search(bob, "tomato", mode=m, poolSize=10, pageSize=10)
        assert len(body["results"]) == 10, m
        assert all(r["memo"]["creator"] == "users/bob" for r in body["results"])


async def test_memos_not_yet_embedded_are_found_lexically(
    client: AsyncTestClient[Any], alice: Actor
) -> None:
    await alice.memo("renew the passport before the trip")
    body = await search(alice, "passport")
    assert contents(body) == ["renew the passport before the trip"]
    hit = body["results"][0]
    assert (hit["lexicalRank"], hit["semanticRank"]) == (1, 0)
    assert body["pendingEmbeddings"] == 1
    await embed_all(client)
    body = await search(alice, "passport")
    assert body["pendingEmbeddings"] == 0
    assert body["results"][0]["semanticRank"] == 1


async def test_editing_content_makes_the_vector_pending(
    client: AsyncTestClient[Any], alice: Actor
) -> None:
    m = await alice.memo("draft the budget")
    await embed_all(client)
    r = await alice.patch(
        f"/api/v1/{m['name']}", json={"content": "final budget"}, params={"updateMask": "content"}
    )
    assert r.status_code == 200, r.text
    assert (await search(alice, "budget"))["pendingEmbeddings"] == 1
    assert await embed_all(client) == 1


async def test_a_model_change_never_mixes_vectors(
    client: AsyncTestClient[Any], alice: Actor
) -> None:
    await _bulk(alice, [f"holiday photo {i}" for i in range(6)])
    await embed_all(client)  # hash-64
    old = client.app.state.search
    client.app.state.search = SearchRuntime("hash-32", old.pgvector)
    await embed_all(client, batch_size=2, max_batches=1)  # two memos re-embedded
    body = await search(alice, "holiday", mode="semantic")
    assert len(body["results"]) == 2
    assert body["pendingEmbeddings"] == 4
    hybrid = await search(alice, "holiday")
    assert len(hybrid["results"]) == 6  # the rest through the lexical arm
    assert sum(1 for r in hybrid["results"] if r["semanticRank"]) == 2
    engine = create_engine(client.app.state.settings.database_url)
    async with engine.connect() as conn:
        models = dict(
            (
                await conn.execute(
                    sa.select(memo_embedding.c.model, sa.func.count()).group_by(
                        memo_embedding.c.model
                    )
                )
            ).all()
        )
    await engine.dispose()
    assert models == {"hash-64": 4, "hash-32": 2}


async def test_vector_of_changed_content_is_not_stored(
    client: AsyncTestClient[Any], alice: Actor
) -> None:
    m = await alice.memo("first words")
    runtime = client.app.state.search
    engine = create_engine(client.app.state.settings.database_url)
    from app.db.schema import memo

    async with engine.connect() as conn:
        row = (await conn.execute(sa.select(memo.c.id, memo.c.content))).one()
    await alice.patch(
        f"/api/v1/{m['name']}", json={"content": "second words"}, params={"updateMask": "content"}
    )
    vectors = runtime.embedder.embed_passages([row.content])
    async with engine.begin() as conn:
        assert await store_vectors(conn, runtime.embedder, [row], vectors, runtime.pgvector) == 0
    assert await embed_all(client) == 1  # the current content
    async with engine.begin() as conn:  # a second writer of the same vector: an upsert
        row = (await conn.execute(sa.select(memo.c.id, memo.c.content))).one()
        vectors = runtime.embedder.embed_passages([row.content])
        assert await store_vectors(conn, runtime.embedder, [row], vectors, runtime.pgvector) == 1
    await engine.dispose()


@pytest.mark.parametrize(
    "query",
    [
        '"',
        "*",
        "NEAR(",
        "NEAR(a b",
        "-",
        ":",
        "(",
        ")",
        "a OR",
        "AND",
        "NOT x",
        "x*",
        "^a",
        "col:value",
        '"unbalanced',
        "{a b}",
        "'",
        "\\",
        "%",
        "_",
        "a - -b",
        "🙂",
        "<->",
        "!",
        "a & b | c",
        "e.g. ü-ß",
    ],
)
async def test_fts_syntax_characters_give_sensible_results(
    client: AsyncTestClient[Any], alice: Actor, query: str
) -> None:
    await alice.memo("col value NEAR the x* marker (e.g. ü-ß)")
    body = await search(alice, query)
    assert isinstance(body["results"], list)


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"query": ""},
        {"query": "   "},
        {"query": "x" * 1001},
        {"query": "x" * 60_000},
        {"query": "a", "mode": "fuzzy"},
        {"query": "a", "mode": "HYBRID OR 1"},
        {"query": "a", "poolSize": 201},
        {"query": "a", "poolSize": -1},
        {"query": "a", "pageToken": "garbage"},
        {"query": "a", "filter": "content.contains("},
    ],
)
async def test_bad_input_is_400(alice: Actor, params: dict[str, Any]) -> None:
    r = await alice.get("/api/v1/memos:search", params=params)
    assert r.status_code == 400, r.text
    assert r.json()["code"] == 3


def test_a_100_kib_query_is_refused() -> None:
    with pytest.raises(InvalidArgument):
        validate("x" * 100 * 1024, "hybrid", None)


async def test_cjk_query_finds_cjk_memo(client: AsyncTestClient[Any], alice: Actor) -> None:
    await _bulk(alice, ["我今天去了北京看长城", "東京で寿司を食べた", "plain english note"])
    await embed_all(client)
    assert contents(await search(alice, "北京", mode="lexical")) == ["我今天去了北京看长城"]
    assert contents(await search(alice, "寿司", mode="lexical")) == ["東京で寿司を食べた"]
    assert contents(await search(alice, "北京"))[0] == "我今天去了北京看长城"


async def test_pages_follow_the_token(client: AsyncTestClient[Any], alice: Actor) -> None:
    await _bulk(alice, [f"invoice number {i}" for i in range(15)])
    first = await search(alice, "invoice", mode="lexical", pageSize=10)
    assert len(first["results"]) == 10 and first["nextPageToken"]
    second = await search(
        alice, "invoice", mode="lexical", pageSize=10, pageToken=first["nextPageToken"]
    )
    assert len(second["results"]) == 5 and second["nextPageToken"] == ""
    assert not set(contents(first)) & set(contents(second))
    r = await alice.get(
        "/api/v1/memos:search", params={"query": "receipt", "pageToken": first["nextPageToken"]}
    )
    assert r.status_code == 400


async def test_filter_narrows_inside_each_arm(client: AsyncTestClient[Any], alice: Actor) -> None:
    await _bulk(alice, ["river walk", "river swim"], visibility="PUBLIC")
    await _bulk(alice, [f"river note {i}" for i in range(8)])
    await embed_all(client)
    for m in MODES:
        body = await search(alice, "river", mode=m, poolSize=2, filter='visibility == "PUBLIC"')
        assert sorted(contents(body)) == ["river swim", "river walk"], m


async def test_search_route_does_not_shadow_get_memo(alice: Actor) -> None:
    m = await alice.memo("routing check")
    r = await alice.get(f"/api/v1/{m['name']}")
    assert r.status_code == 200 and r.json()["content"] == "routing check"
    assert (await search(alice, "routing"))["results"][0]["memo"]["name"] == m["name"]


async def test_anonymous_sees_public_only(client: AsyncTestClient[Any], alice: Actor) -> None:
    await alice.memo("public lighthouse", visibility="PUBLIC")
    await alice.memo("protected lighthouse", visibility="PROTECTED")
    r = await client.get("/api/v1/memos:search", params={"query": "lighthouse"})
    if r.status_code == 200:
        assert contents(r.json()) == ["public lighthouse"]
    else:
        assert r.status_code == 401


async def test_postgresql_uses_pgvector(client: AsyncTestClient[Any], dialect: str) -> None:
    """The embedded PostgreSQL has pgvector, so 0004 adds the halfvec column and HNSW index."""
    if dialect != "postgresql":
        pytest.skip("pgvector is a PostgreSQL capability")
    assert client.app.state.search.pgvector is True


@pytest.mark.parametrize("with_count", [False, True])
async def test_postgresql_semantic_arm_can_use_the_hnsw_index(
    client: AsyncTestClient[Any], dialect: str, with_count: bool
) -> None:
    """The ORDER BY expression and the partial predicate match the 0004 HNSW index,
    also inside the statement that counts pending memos in the same snapshot."""
    if dialect != "postgresql":
        pytest.skip("pgvector is a PostgreSQL capability")
    import numpy as np
    from sqlalchemy.dialects import postgresql

    from app.access.audience import AccessMode
    from app.search.semantic import pgvector_arm_statement, pgvector_statement
    from app.search.service import SearchQuery, admission

    caller_q = SearchQuery(caller=None, access_mode=AccessMode.PUBLIC, text="x")
    vector = np.ones(384, dtype=np.float32) / np.sqrt(384)
    build = pgvector_arm_statement if with_count else pgvector_statement
    stmt = build("m", vector, admission(caller_q), 50)
    sql = str(stmt.compile(dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True}))
    engine = create_engine(client.app.state.settings.database_url)
    async with engine.begin() as conn:
        await conn.exec_driver_sql("SET LOCAL enable_seqscan = off")
        plan = "\n".join(r[0] for r in await conn.exec_driver_sql("EXPLAIN " + sql))
    await engine.dispose()
    assert "ix_memo_embedding_hnsw_384" in plan, plan
