"""A recycled PostgreSQL test database is indistinguishable from a fresh clone.

The per-test databases (``tests.pg_recycle``) are emptied and reused. If an
emptied one kept rows, identities, planner statistics or a changed schema,
tests would depend on the order they run in. These tests check that it
keeps none of them.
"""

from __future__ import annotations

import asyncpg
import pytest

from tests.conftest import Templates
from tests.pg_recycle import WRITTEN, Recycler, fingerprint

pytestmark = pytest.mark.usefixtures("pg_root")


def _recycler(templates: Templates, prefix: str) -> Recycler:
    assert templates.pg_root is not None
    return Recycler(templates.pg_root.split("host=", 1)[1], "daybook_template", prefix)


async def _state(recycler: Recycler, name: str) -> dict[str, object]:
    conn = await asyncpg.connect(host=recycler.host, user="postgres", database=name)
    try:
        return {
            "fingerprint": await fingerprint(conn, recycler.seeded),
            "written": [r[0] for r in await conn.fetch(WRITTEN)],
            "statistics": await conn.fetchval(
                "SELECT count(*) FROM pg_statistic WHERE starelid = 'memo'::regclass"
            ),
            "reltuples": await conn.fetchval(
                "SELECT reltuples FROM pg_class WHERE oid = 'memo'::regclass"
            ),
            "next_user_id": await conn.fetchval(
                "SELECT nextval(pg_get_serial_sequence('user_account', 'id'))"
            ),
        }
    finally:
        await conn.close()


async def _use(recycler: Recycler, name: str, *statements: str) -> None:
    conn = await asyncpg.connect(host=recycler.host, user="postgres", database=name)
    try:
        for statement in statements:
            await conn.execute(statement)
    finally:
        await conn.close()


WRITE_AND_ANALYZE = (
    "INSERT INTO user_account (username, password_hash, role, state, created_ts, updated_ts)"
    " SELECT 'u' || g, 'x', 'USER', 'NORMAL', 0, 0 FROM generate_series(1, 50) g",
    "ANALYZE",
)


async def test_an_emptied_database_matches_a_fresh_clone(templates: Templates) -> None:
    recycler = _recycler(templates, "recycle_a")
    first = again = await recycler.take()
    try:
        fresh = await _state(recycler, first)
        await _use(recycler, first, *WRITE_AND_ANALYZE)
        await recycler.give_back(first)
        again = await recycler.take()
        assert again == first  # reused, not re-made
        # nextval above consumed id 1 on the fresh clone; the reset restarts it.
        assert await _state(recycler, again) == fresh
        assert fresh["written"] == []
    finally:
        await recycler.give_back(again)
        await recycler.close()


@pytest.mark.parametrize(
    "change",
    [
        "ALTER TABLE memo ADD COLUMN leftover integer",
        "CREATE INDEX leftover ON memo (content)",
        "CREATE FUNCTION leftover() RETURNS int LANGUAGE sql AS 'SELECT 1'",
        "UPDATE alembic_version SET version_num = '0001'",
        "ALTER DATABASE {db} SET plan_cache_mode = force_generic_plan",
        "GRANT SELECT ON memo TO PUBLIC",
    ],
)
async def test_a_changed_database_is_dropped_not_reused(templates: Templates, change: str) -> None:
    recycler = _recycler(templates, "recycle_b")
    try:
        first = await recycler.take()
        await _use(recycler, first, change.format(db=first))
        await recycler.give_back(first)
        assert recycler.spare == []
        admin = await asyncpg.connect(host=recycler.host, user="postgres", database="postgres")
        try:
            left = await admin.fetchval(
                "SELECT count(*) FROM pg_database WHERE datname = $1", first
            )
        finally:
            await admin.close()
        assert left == 0
    finally:
        await recycler.close()
