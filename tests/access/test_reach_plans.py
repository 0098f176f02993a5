"""A restricted key's list walks its spaces' timelines, not the whole instance.

20,000 memos, 90% of them in 20 spaces at 40 tree paths; the holder has
grants in every space and a key declaring three spaces with a subtree
ceiling each (the reach is ~1 memo in 50). The key's first page must be one
newest-first walk per declared space on ``ix_memo_space_timeline``, merged
(SQLite: ``MERGE (UNION ALL)``), and no walk of ``ix_memo_timeline``;
PostgreSQL chooses per walk between the space timeline and the space's tree
index by cost, never the whole timeline or a scan of ``memo``. The page itself
must be what the plain statement (audience predicate alone) returns.
"""

from __future__ import annotations

import random
from typing import Any

import sqlalchemy as sa

from app.access.audience import AccessMode, audience_predicate
from app.access.caller import Caller, Credential
from app.db.engine import create_engine
from app.db.schema import memo, space, space_grant, space_member, user_account
from app.memos import listing
from app.memos.listing import ListQuery, list_memos, parse_order

ROWS = 20_000
SPACES = 20
HOLDER = 1

KEY = Caller(
    HOLDER,
    "holder",
    "USER",
    Credential.PAT,
    pat_id=1,
    restriction={
        "scope": "READ",
        "personal": "NONE",
        "spaces": [
            {"space": f"spaces/s{s}", "trees": [{"path": f"t{s % 8}", "level": "READ"}]}
            for s in (1, 2, 3)
        ],
    },
)
KEY_WITH_OWN = Caller(
    HOLDER,
    "holder",
    "USER",
    Credential.PAT,
    pat_id=2,
    restriction={**(KEY.restriction.to_json() if KEY.restriction else {}), "personal": "OWN"},
)


async def _seed(conn: Any) -> None:
    rng = random.Random(7)
    await conn.execute(
        user_account.insert(),
        [
            {
                "id": u,
                "username": f"u{u}",
                "password_hash": "x",
                "role": "USER",
                "state": "NORMAL",
                "created_ts": 0,
                "updated_ts": 0,
            }
            for u in range(1, 21)
        ],
    )
    await conn.execute(
        space.insert(),
        [
            {
                "id": s,
                "uid": f"s{s}",
                "title": "",
                "creator_id": 1,
                "created_ts": 0,
                "updated_ts": 0,
            }
            for s in range(1, SPACES + 1)
        ],
    )
    await conn.execute(
        space_member.insert(),
        [
            {
                "space_id": s,
                "user_id": HOLDER,
                "role": "USER",
                "state": "ACTIVE",
                "created_ts": 0,
                "updated_ts": 0,
            }
            for s in range(1, SPACES + 1)
        ],
    )
    await conn.execute(
        space_grant.insert(),
        [
            {
                "space_id": s,
                "user_id": HOLDER,
                "path": "",
                "level": 2,
                "created_by": HOLDER,
                "created_ts": 0,
            }
            for s in range(1, SPACES + 1)
        ],
    )
    rows = []
    for i in range(1, ROWS + 1):
        in_space = i % 10 != 0
        rows.append(
            {
                "id": i,
                "uid": f"m{i}",
                "creator_id": rng.randint(1, 20),
                "content": "x",
                "visibility": "SPACE" if in_space else rng.choice(["PUBLIC", "PRIVATE"]),
                "state": "NORMAL",
                "space_id": i % SPACES + 1 if in_space else None,
                "tree": f"t{i // SPACES % 8}.s{i // (SPACES * 8) % 5}" if in_space else None,
                "created_ts": 1_600_000_000 + i * 60,
                "updated_ts": 1_600_000_000 + i * 60,
                "origin": {"kind": "session"},
            }
        )
    await conn.execute(memo.insert(), rows)


def _statement(caller: Caller) -> tuple[sa.Select[Any], dict[str, Any]]:
    query = ListQuery(caller=caller, mode=AccessMode.PRIVATE, page_size=50)
    return listing._page_statement(query, parse_order(None), None)


async def _explain(conn: Any, stmt: sa.Select[Any], params: dict[str, Any]) -> str:
    compiled = stmt.params(params).compile(
        dialect=conn.dialect, compile_kwargs={"literal_binds": True}
    )
    if conn.dialect.name == "sqlite":
        rows = await conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {compiled}")
        return "\n".join(str(r[-1]) for r in rows)
    rows = await conn.exec_driver_sql(f"EXPLAIN {compiled}")
    return "\n".join(str(r[0]) for r in rows)


async def test_key_page_merges_space_walks(database_url: str) -> None:
    engine = create_engine(database_url)
    try:
        async with engine.begin() as conn:
            await _seed(conn)
        async with engine.connect() as conn:
            await conn.exec_driver_sql("ANALYZE")
            for caller in (KEY, KEY_WITH_OWN):
                stmt, params = _statement(caller)
                plan = await _explain(conn, stmt, params)
                if conn.dialect.name == "sqlite":
                    assert "MERGE (UNION ALL)" in plan, plan
                    assert plan.count("USING INDEX ix_memo_space_timeline") >= 3, plan
                    assert "ix_memo_timeline" not in plan, plan
                else:
                    # PostgreSQL picks per walk by cost: the space timeline
                    # in order, or (for a small subtree) the space's tree
                    # index and a sort of that subtree alone.
                    walks = plan.count("ix_memo_space_timeline") + plan.count("ix_memo_space_tree")
                    assert walks >= 3, plan
                    assert "ix_memo_timeline" not in plan, plan
                    assert "Seq Scan on memo" not in plan, plan
                rows, token = await list_memos(
                    conn, ListQuery(caller=caller, mode=AccessMode.PRIVATE, page_size=50), "s"
                )
                plain = (
                    sa.select(memo.c.id)
                    .where(
                        memo.c.parent_id.is_(None),
                        memo.c.state == "NORMAL",
                        audience_predicate(caller, AccessMode.PRIVATE),
                    )
                    .order_by(memo.c.created_ts.desc(), memo.c.id.desc())
                    .limit(50)
                )
                expected = list((await conn.execute(plain)).scalars())
                assert [r.id for r in rows] == expected and len(expected) == 50
                assert token
    finally:
        await engine.dispose()
