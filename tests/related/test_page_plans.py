"""A page's related loads reach ``memo`` by primary key only, with or without statistics.

Issue 15: on a fresh install (no ``sqlite_stat1``) SQLite guessed that
``state = ?`` on a timeline index returns a few rows and drove the page's
relation load from ``memo`` through ``ix_memo_updated_timeline``: a walk over
every memo per page. Every statement a page runs after its page statement
(tags, reactions, attachments, relations and their other ends, comments'
parents, search's admitted re-read of its page) is planned here on a freshly
migrated SQLite file, then again after ``ANALYZE`` on a seeded one, and each
access to a ``memo`` table (or alias) must be an INTEGER PRIMARY KEY search:
no SCAN and no secondary index of ``memo``.

SQLite only: PostgreSQL plans from its own statistics (autovacuum keeps
them) and has no ten-rows-per-equality guess to fear.
"""

from __future__ import annotations

import asyncio
import pathlib
import random
import re
from typing import Any

import sqlalchemy as sa

from app.access.audience import AccessMode
from app.access.caller import Caller, Credential
from app.db.engine import create_engine
from app.db.migrate import upgrade
from app.db.schema import memo, memo_relation, memo_tag, user_account
from app.memos.present import (
    attachments_statement,
    parents_statement,
    reactions_statement,
    tags_statement,
)
from app.relations.visible import relations_statement
from app.search.service import SearchQuery, page_rows_statement

MEMO_ALIASES = ("memo", "page_memo", "other_memo", "parent_memo", "page_keys")
ALICE = Caller(user_id=1, username="u1", role="USER", credential=Credential.SESSION)
KEY = Caller(
    user_id=1,
    username="u1",
    role="USER",
    credential=Credential.PAT,
    pat_id=1,
    restriction={"personal": "OWN", "spaces": []},
)
IDS = list(range(1, 51))


def _statements() -> dict[str, Any]:
    out: dict[str, Any] = {
        "tags": tags_statement(IDS),
        "reactions": reactions_statement(IDS),
        "attachments": attachments_statement(IDS),
    }
    for label, caller, mode in (
        ("user", ALICE, AccessMode.PRIVATE),
        ("key", KEY, AccessMode.PRIVATE),
        ("anonymous", None, AccessMode.PUBLIC),
    ):
        out[f"relations/{label}"] = relations_statement(IDS, caller, mode)
        out[f"parents/{label}"] = parents_statement(set(IDS), caller, mode)
        out[f"search page/{label}"] = page_rows_statement(SearchQuery(caller, mode, text="x"), IDS)
    out["search page/filtered"] = page_rows_statement(
        SearchQuery(ALICE, AccessMode.PRIVATE, text="x", filter_clause=memo.c.pinned.is_(True)),
        IDS,
    )
    return out


def _memo_access(line: str) -> bool:
    return any(re.search(rf"\b(SCAN|SEARCH) {name}\b", line) for name in MEMO_ALIASES)


def _bad_lines(url: str) -> dict[str, list[str]]:
    async def go() -> dict[str, list[str]]:
        engine = create_engine(url)
        bad: dict[str, list[str]] = {}
        try:
            async with engine.connect() as conn:
                for label, stmt in _statements().items():
                    sql = str(
                        stmt.compile(dialect=conn.dialect, compile_kwargs={"literal_binds": True})
                    )
                    rows = (await conn.exec_driver_sql("EXPLAIN QUERY PLAN " + sql)).all()
                    lines = [str(r[3]) for r in rows]
                    assert any(_memo_access(x) for x in lines), (label, lines)
                    wrong = [x for x in lines if _memo_access(x) and "INTEGER PRIMARY KEY" not in x]
                    if wrong:
                        bad[label] = wrong
        finally:
            await engine.dispose()
        return bad

    return asyncio.run(go())


def _migrated(path: pathlib.Path) -> str:
    url = f"sqlite:///{path}"

    async def migrate() -> None:
        engine = create_engine(url)
        try:
            await upgrade(engine)
            async with engine.connect() as conn:
                stat = await conn.exec_driver_sql(
                    "SELECT count(*) FROM sqlite_master WHERE name = 'sqlite_stat1'"
                )
                assert stat.scalar_one() == 0  # as installed: no statistics
        finally:
            await engine.dispose()

    asyncio.run(migrate())
    return url


def test_fresh_database_plans(tmp_path: pathlib.Path) -> None:
    assert _bad_lines(_migrated(tmp_path / "fresh.db")) == {}


def test_analysed_database_plans(tmp_path: pathlib.Path) -> None:
    fresh = _migrated(tmp_path / "analysed.db")
    rng = random.Random(3)
    users = [
        {
            "id": i,
            "username": f"u{i}",
            "role": "USER",
            "state": "NORMAL",
            "password_hash": "x",
            "created_ts": 0,
            "updated_ts": 0,
        }
        for i in range(1, 21)
    ]
    memos = [
        {
            "id": i,
            "uid": f"m{i}",
            "creator_id": rng.randint(1, 20),
            "content": "x",
            "visibility": rng.choice(["PUBLIC", "PROTECTED", "PRIVATE"]),
            "state": "NORMAL" if rng.random() < 0.95 else "ARCHIVED",
            "created_ts": i,
            "updated_ts": i,
            "origin": {"kind": "session"},
        }
        for i in range(1, 3001)
    ]
    tags = [{"memo_id": i, "tag": f"t{i % 40}", "position": 0} for i in range(1, 3001)]
    relations = [
        {"memo_id": i, "related_memo_id": rng.randint(1, 3000), "type": "REFERENCE"}
        for i in range(1, 3001, 3)
    ]

    async def seed() -> None:
        engine = create_engine(fresh)
        try:
            async with engine.begin() as conn:
                await conn.execute(sa.insert(user_account), users)
                await conn.execute(sa.insert(memo), memos)
                await conn.execute(sa.insert(memo_tag), tags)
                await conn.execute(sa.insert(memo_relation).prefix_with("OR IGNORE"), relations)
            async with engine.connect() as conn:
                await conn.exec_driver_sql("ANALYZE")
                await conn.commit()
        finally:
            await engine.dispose()

    asyncio.run(seed())
    assert _bad_lines(fresh) == {}
