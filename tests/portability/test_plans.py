"""The export's page query walks the creator's timeline index: no sort, no scan per page."""

from __future__ import annotations

import sqlalchemy as sa

from app.access.audience import AccessMode
from app.access.caller import Caller, Credential
from app.db.engine import create_engine
from app.portability.export import page_statement
from app.settings import Settings
from tests.conftest import Actor


async def test_export_pages_use_the_creator_timeline_on_sqlite(
    alice: Actor, settings: Settings, dialect: str
) -> None:
    if dialect != "sqlite":
        return  # PostgreSQL's planner picks by statistics; the shape is the same index
    caller = Caller(1, "alice", "ADMIN", Credential.SESSION)
    engine = create_engine(settings.database_url)
    async with engine.connect() as conn:
        for after in (None, (1_700_000_000, 5)):
            stmt = page_statement(caller, AccessMode.PRIVATE, "NORMAL", after)
            sql = str(stmt.compile(engine.sync_engine, compile_kwargs={"literal_binds": True}))
            plan = " | ".join(r[3] for r in await conn.exec_driver_sql("EXPLAIN QUERY PLAN " + sql))
            assert "ix_memo_creator_timeline" in plan, plan
            assert "TEMP B-TREE FOR ORDER BY" not in plan, plan
            assert "SCAN memo" not in plan, plan
    await engine.dispose()
    assert sa is not None
