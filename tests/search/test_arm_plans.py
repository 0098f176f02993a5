"""The semantic arm's statements on a SQLite database without statistics.

The product never runs ``ANALYZE``; without ``sqlite_stat1`` SQLite planned the
walk's admission check (``memo.id IN (<100 ids>) AND <audience>``) and the
pending count as a walk of every NORMAL memo through ``ix_memo_updated_timeline``
(``bench/search_latency.py --profile`` at 100k memos: most of a broad caller's
search). Both are now driven from their ids (the batch, the queue).
"""

from __future__ import annotations

from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from app.access.audience import AccessMode
from app.access.caller import Caller, Credential
from app.db.engine import create_engine
from app.search.semantic import _admitted_batch, queued_statement
from app.search.service import SearchQuery, admission


async def test_walk_batch_and_pending_count_are_key_lookups_without_statistics(
    client: AsyncTestClient[Any],
) -> None:
    engine = create_engine(client.app.state.settings.database_url)
    if engine.dialect.name != "sqlite":
        await engine.dispose()
        pytest.skip("SQLite's planner without statistics")
    caller = Caller(user_id=1, username="alice", role="USER", credential=Credential.SESSION)
    admitted = admission(SearchQuery(caller=caller, access_mode=AccessMode.PRIVATE, text="x"))
    statements = (
        _admitted_batch("m", 384, list(range(1, 101)), admitted),
        queued_statement(admitted),
    )
    try:
        async with engine.connect() as conn:
            found = await conn.exec_driver_sql(
                "SELECT count(*) FROM sqlite_master WHERE name = 'sqlite_stat1'"
            )
            assert found.scalar_one() == 0
            for stmt in statements:
                sql = str(
                    stmt.compile(dialect=conn.dialect, compile_kwargs={"literal_binds": True})
                )
                rows = await conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}")
                plan = "\n".join(str(r[-1]) for r in rows)
                assert "SEARCH memo USING INTEGER PRIMARY KEY" in plan, plan
                assert "SEARCH memo USING INDEX" not in plan, plan
                assert "SCAN memo\n" not in plan + "\n", plan
    finally:
        await engine.dispose()
