"""PostgreSQL with pgvector: a selective audience is ranked exactly, not by walking HNSW.

``hnsw.iterative_scan = relaxed_order`` walks the graph until the pool is full
or ``hnsw.max_scan_tuples`` vectors were visited. For a key that sees few
memos most visited vectors are hidden ones, each checked for admission: slow
and once the budget is spent the ranking is short. The
arm's statement counts the admitted memos (up to ``EXACT_MAX + 1``) and, for
an audience that small, ranks every admitted vector exactly instead.

The test makes the walk both attractive and short: the hidden vectors sit
next to the query, the caller's far from it, ``enable_sort = off`` leads the
planner to the index order wherever it can, and ``hnsw.max_scan_tuples = 40``
stands for a large graph. The walk (the statement before the change) returned
none or a few of the caller's 30 memos; the exact ranking returns all 30 in
distance order.
"""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
import sqlalchemy as sa
from litestar.testing import AsyncTestClient
from sqlalchemy.dialects import postgresql

from app.access.audience import AccessMode
from app.access.caller import Caller, Credential
from app.access.restriction import Restriction
from app.db.engine import create_engine
from app.db.schema import memo
from app.search.pgvector_arm import EXACT_MAX, pgvector_arm, pgvector_arm_statement
from app.search.service import SearchQuery, admission
from app.search.tables import memo_embedding_pgvector
from app.search.vectors import encode, pgvector_text
from tests.conftest import Actor

MODEL = "test-384"
DIM = 384


def _unit(v: npt.NDArray[Any]) -> npt.NDArray[np.float32]:
    unit: npt.NDArray[np.float32] = (v / np.linalg.norm(v)).astype(np.float32)
    return unit


async def _seed(url: str, alice: Actor, bob: Actor, rng: np.random.Generator) -> Any:
    """30 PRIVATE memos of alice's far from the query, 400 PUBLIC of bob's next to it."""
    await alice.memo("alice seed", visibility="PRIVATE")
    await bob.memo("bob seed", visibility="PUBLIC")
    query = _unit(rng.standard_normal(DIM))
    engine = create_engine(url)
    try:
        async with engine.begin() as conn:
            seeds = {
                r.content: dict(r._mapping)
                for r in await conn.execute(
                    sa.select(memo).where(memo.c.content.in_(["alice seed", "bob seed"]))
                )
            }
            rows: list[tuple[dict[str, Any], np.ndarray]] = []
            for content, n, near in (("alice seed", 30, False), ("bob seed", 400, True)):
                for _ in range(n):
                    row = {k: v for k, v in seeds[content].items() if k != "id"}
                    row["uid"] = str(uuid.uuid4())
                    noise = _unit(rng.standard_normal(DIM))
                    rows.append((row, _unit(query + 0.3 * noise) if near else noise))
            ids = (
                (await conn.execute(sa.insert(memo).returning(memo.c.id), [r for r, _ in rows]))
                .scalars()
                .all()
            )
            await conn.execute(
                sa.insert(memo_embedding_pgvector),
                [
                    {
                        "memo_id": i,
                        "model": MODEL,
                        "dim": DIM,
                        "vector": encode(v),
                        "content_hash": 0,
                        "updated_ts": 0,
                        "embedding": pgvector_text(v),
                    }
                    for i, (_, v) in zip(ids, rows, strict=True)
                ],
            )
            await conn.exec_driver_sql("DELETE FROM memo_embedding_queue")
            alice_id = seeds["alice seed"]["creator_id"]
        own = {
            int(i): v for i, (r, v) in zip(ids, rows, strict=True) if r["creator_id"] == alice_id
        }
        return query, alice_id, own
    finally:
        await engine.dispose()


async def test_postgresql_selective_audience_is_ranked_exactly(
    client: AsyncTestClient[Any], dialect: str, alice: Actor, bob: Actor
) -> None:
    if dialect != "postgresql" or not client.app.state.search.pgvector:
        pytest.skip("pgvector is a PostgreSQL capability")
    url = client.app.state.settings.database_url
    query, alice_id, own = await _seed(url, alice, bob, np.random.default_rng(7))
    assert len(own) == 30 <= EXACT_MAX
    caller = Caller(
        user_id=alice_id,
        username="alice",
        role="USER",
        credential=Credential.PAT,
        pat_id=1,
        restriction=Restriction.parse({"personal": "OWN"}),
    )
    admitted = admission(SearchQuery(caller=caller, access_mode=AccessMode.PRIVATE, text="x"))
    engine = create_engine(url)
    try:
        async with engine.connect() as conn, conn.begin():
            await conn.exec_driver_sql("SET LOCAL enable_sort = off")
            await conn.exec_driver_sql("SET LOCAL hnsw.max_scan_tuples = 40")
            arm = await pgvector_arm(conn, MODEL, DIM, query, admitted, 50)
    finally:
        await engine.dispose()
    exact = sorted(own, key=lambda i: -float(own[i] @ query))
    assert sorted(arm.ranking) == sorted(exact), (len(arm.ranking), len(exact))
    similarity = dict(zip(arm.ranking, arm.similarity, strict=True))
    for i in exact:  # halfvec stores 16-bit floats
        assert abs(similarity[i] - float(own[i] @ query)) < 5e-3
    assert list(arm.similarity) == sorted(arm.similarity, reverse=True)


async def test_postgresql_arm_statement_keeps_the_audience_in_both_rankings(
    client: AsyncTestClient[Any], dialect: str
) -> None:
    """The exact ranking and the walk each carry the admission conditions and are gated
    on the same count; the query vector is one bound parameter."""
    if dialect != "postgresql":
        pytest.skip("pgvector is a PostgreSQL capability")
    caller = Caller(user_id=7, username="u", role="USER", credential=Credential.SESSION)
    admitted = admission(SearchQuery(caller=caller, access_mode=AccessMode.PRIVATE, text="x"))
    stmt = pgvector_arm_statement(
        MODEL, np.ones(DIM, dtype=np.float32) / np.sqrt(DIM), admitted, 50
    )
    compiled = stmt.compile(dialect=postgresql.dialect())  # type: ignore[no-untyped-call]
    sql = compiled.string
    assert sql.count(f"<= {EXACT_MAX}") == 1 and sql.count(f"> {EXACT_MAX}") == 1, sql
    assert f"LIMIT {EXACT_MAX + 1}" in sql, sql
    # the audience: in the admitted ids (the exact ranking's rows), the walk, the count
    few = sql[sql.index("few AS MATERIALIZED") : sql.index(f"LIMIT {EXACT_MAX + 1}")]
    queued = sql[sql.index("FROM memo_embedding_queue") : sql.index(") AS queued")]
    walked = sql[sql.index("UNION ALL") :]
    for part in (few, queued, walked):
        assert "memo.creator_id = %(creator_id" in part, part
    assert [k for k in compiled.params if k.startswith("query_vector")] == ["query_vector"]
