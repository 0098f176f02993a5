"""PostgreSQL's lexical arm ranks stored tsvectors (``memo_tsv``, migration 0019, decision 0046).

Ranking needs every match's tsvector. Computed from the content (the
expression index of 0004 only found the matches), it cost 250-330 ms of a
search at 22,000 memos for a word in 5,000 of them. These tests hold the two
things that fix depends on: the triggers keep ``memo_tsv`` equal to
``to_tsvector('simple', left(content, 65536))`` for every memo, and the
statement a search runs ranks from it and parses no content, with the same
ranking as before.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import sqlalchemy as sa
from litestar.testing import AsyncTestClient

from app.db.engine import create_engine
from app.search.ddl import PG_TSVECTOR
from tests.conftest import Actor
from tests.search.conftest import embed_all, search

# Memos whose stored tsvector is not what the content gives (or is missing).
OUT_OF_STEP = (
    "SELECT count(*) FROM memo m LEFT JOIN memo_tsv t ON t.memo_id = m.id"
    f" WHERE t.tsv IS DISTINCT FROM {PG_TSVECTOR.replace('content', 'm.content')}"
)


@pytest.fixture
def pg_only(dialect: str) -> None:
    if dialect != "postgresql":
        pytest.skip("memo_tsv is PostgreSQL's (SQLite ranks with FTS5)")


async def test_triggers_keep_memo_tsv_in_step(
    pg_only: None, client: AsyncTestClient[Any], alice: Actor
) -> None:
    kept = await alice.memo("otter river notes")
    gone = await alice.memo("heron lake notes")
    r = await alice.patch(f"/api/v1/{kept['name']}", json={"content": "beaver dam notes"})
    assert r.status_code == 200, r.text
    engine = create_engine(client.app.state.settings.database_url)
    try:
        async with engine.begin() as conn:
            await conn.execute(sa.text("DELETE FROM memo WHERE uid = :u"), {"u": gone["name"][6:]})
            assert (await conn.execute(sa.text(OUT_OF_STEP))).scalar_one() == 0
            rows = await conn.execute(sa.text("SELECT count(*) FROM memo_tsv"))
            assert rows.scalar_one() == 1
    finally:
        await engine.dispose()
    await embed_all(client)
    found = await search(alice, "beaver", mode="lexical")
    assert [r["memo"]["content"] for r in found["results"]] == ["beaver dam notes"]
    assert (await search(alice, "otter", mode="lexical"))["results"] == []


def _nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    return [plan, *(n for child in plan.get("Plans", []) for n in _nodes(child))]


async def test_the_lexical_statement_ranks_stored_tsvectors(
    pg_only: None, client: AsyncTestClient[Any], alice: Actor
) -> None:
    """2,700 memos, "kestrel" in about half, repeated one to four times (so the
    ranks differ); the captured statement, explained with its values, reads
    ``memo_tsv`` and computes no ``to_tsvector``, and its ranking is the one
    computed from the content. (With about 1,000 memos holding the word twice
    or more, the one statement is the one over the repeated words, 0020.)"""
    await alice.memo("kestrel")  # alice's id for the insert below
    engine = create_engine(client.app.state.settings.database_url)
    captured: list[tuple[str, Any]] = []

    def grab(_c: Any, _cur: Any, statement: str, params: Any, *_: Any) -> None:
        if "ts_rank_cd" in statement:
            captured.append((statement, params))

    try:
        async with engine.begin() as conn:
            await conn.exec_driver_sql(
                "INSERT INTO memo (uid, creator_id, content, visibility, state, created_ts,"
                " updated_ts, origin, version, pinned, title, snippet, has_link,"
                " has_task_list, has_code, has_incomplete_tasks)"
                " SELECT 'k' || g, m.creator_id,"
                " repeat('kestrel ', 1 + g % 4) || 'hovering over field ' || g, 'PRIVATE',"
                " 'NORMAL', g, g, '{}', 1, false, '', '', false, false, false, false"
                " FROM generate_series(1, 2000) AS g, (SELECT creator_id FROM memo LIMIT 1) AS m"
                " WHERE g % 3 <> 0"
            )
            await conn.exec_driver_sql(
                "INSERT INTO memo (uid, creator_id, content, visibility, state, created_ts,"
                " updated_ts, origin, version, pinned, title, snippet, has_link,"
                " has_task_list, has_code, has_incomplete_tasks)"
                " SELECT 'f' || g, m.creator_id, 'field notes ' || g, 'PRIVATE', 'NORMAL',"
                " g, g, '{}', 1, false, '', '', false, false, false, false"
                " FROM generate_series(1, 700) AS g, (SELECT creator_id FROM memo LIMIT 1) AS m"
            )
        async with engine.connect() as conn:
            conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
            await conn.exec_driver_sql("ANALYZE")
        sa.event.listen(client.app.state.engine.sync_engine, "before_cursor_execute", grab)
        try:
            body = await search(alice, "kestrel", mode="lexical", pageSize=50)
        finally:
            sa.event.remove(client.app.state.engine.sync_engine, "before_cursor_execute", grab)
        assert len(captured) == 1
        sql, params = captured[0]
        assert "daybook_tsv_repeated(memo_tsv.tsv)" in sql, sql
        async with engine.connect() as conn:
            raw = (await conn.get_raw_connection()).driver_connection
            text = await raw.fetchval("EXPLAIN (VERBOSE, FORMAT JSON) " + sql, *params)
            plan = (json.loads(text) if isinstance(text, str) else text)[0]["Plan"]
            expected = await raw.fetch(
                f"SELECT id FROM memo WHERE {PG_TSVECTOR} @@ plainto_tsquery('simple', 'kestrel')"
                f" ORDER BY ts_rank_cd({PG_TSVECTOR}, plainto_tsquery('simple', 'kestrel')) DESC,"
                " id DESC LIMIT 50"
            )
            uids = await raw.fetch(
                "SELECT id, uid FROM memo WHERE id = ANY($1::int[])", [r[0] for r in expected]
            )
    finally:
        await engine.dispose()
    nodes = _nodes(plan)
    # Which access reads it (its GIN index or, for a word in most memos of a
    # small table, a scan) is the planner's; a parse of the content never is.
    assert any(n.get("Relation Name") == "memo_tsv" for n in nodes), json.dumps(plan)
    parsed = [n["Node Type"] for n in nodes if "to_tsvector" in json.dumps({**n, "Plans": []})]
    assert parsed == [], json.dumps(plan)
    by_id = {r[0]: r[1] for r in uids}
    assert [r["memo"]["name"] for r in body["results"]] == [
        f"memos/{by_id[r[0]]}" for r in expected
    ]


async def test_daybook_tsv_repeated_holds_the_words_of_two_positions_or_more(
    pg_only: None, client: AsyncTestClient[Any]
) -> None:
    engine = create_engine(client.app.state.settings.database_url)
    try:
        async with engine.connect() as conn:
            got = (
                await conn.exec_driver_sql(
                    "SELECT daybook_tsv_repeated(to_tsvector('simple',"
                    " 'Otter heron otter lake heron otter river'))::text,"
                    " daybook_tsv_repeated(to_tsvector('simple', 'one two three'))::text"
                )
            ).one()
    finally:
        await engine.dispose()
    assert tuple(got) == ("'heron' 'otter'", "")


_INSERT = (
    "INSERT INTO memo (uid, creator_id, content, visibility, state, created_ts,"
    " updated_ts, origin, version, pinned, title, snippet, has_link,"
    " has_task_list, has_code, has_incomplete_tasks)"
    " SELECT '{prefix}' || g, m.creator_id, {content}, '{visibility}',"
    " 'NORMAL', g, g, '{{}}', 1, false, '', '', false, false, false, false"
    " FROM generate_series(1, {n}) AS g, (SELECT creator_id FROM memo LIMIT 1) AS m"
)


async def _pages_and_statements(
    client: AsyncTestClient[Any],
    alice: Actor,
    bob: Actor,
    query: str,
    private: str,
    public: str,
) -> dict[str, tuple[list[str], list[str], list[str]]]:
    """Alice's memos (``private``: 600 of that content, ``public``: 120), then
    ``query`` searched by alice and by bob: per reader, the page's names, the
    ranking computed from the content under the reader's audience, and the
    lexical statements the search ran."""
    await alice.memo("kestrel")  # alice's id for the inserts below (private)
    engine = create_engine(client.app.state.settings.database_url)
    captured: list[str] = []

    def grab(_c: Any, _cur: Any, statement: str, *_: Any) -> None:
        if "ts_rank_cd" in statement:
            captured.append(statement)

    out = {}
    try:
        async with engine.begin() as conn:
            for prefix, content, visibility, n in (
                ("p", private, "PRIVATE", 600),
                ("u", public, "PUBLIC", 120),
            ):
                await conn.exec_driver_sql(
                    _INSERT.format(prefix=prefix, content=content, visibility=visibility, n=n)
                )
        async with engine.connect() as conn:
            conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
            await conn.exec_driver_sql("ANALYZE")
        q = " && ".join(f"plainto_tsquery('simple', '{w}')" for w in query.split())
        engine_app = client.app.state.engine.sync_engine
        for actor, audience in ((alice, "true"), (bob, "visibility IN ('PUBLIC', 'PROTECTED')")):
            captured.clear()
            sa.event.listen(engine_app, "before_cursor_execute", grab)
            try:
                body = await search(actor, query, mode="lexical", pageSize=50)
            finally:
                sa.event.remove(engine_app, "before_cursor_execute", grab)
            async with engine.connect() as conn:
                rows = await conn.exec_driver_sql(
                    f"SELECT uid FROM memo WHERE {PG_TSVECTOR} @@ ({q}) AND {audience}"
                    f" ORDER BY ts_rank_cd({PG_TSVECTOR}, {q}) DESC, id DESC LIMIT 50"
                )
                expected = [f"memos/{r[0]}" for r in rows]
            names = [r["memo"]["name"] for r in body["results"]]
            out[actor.username] = (names, expected, list(captured))
    finally:
        await engine.dispose()
    return out


async def test_one_word_page_is_the_full_ranking_with_or_without_enough_repeats(
    pg_only: None, client: AsyncTestClient[Any], alice: Actor, bob: Actor
) -> None:
    """A one-word search first ranks the memos holding the word twice or more
    (0020). Alice sees 400 of them: that statement alone makes her page. Bob
    sees 24 (alice's public memos), fewer than the pool: the full statement
    ranks every match he may see. Both pages are the ranking computed from the
    content, under each reader's audience."""
    pages = await _pages_and_statements(
        client,
        alice,
        bob,
        "kestrel",
        private="repeat('kestrel ', 1 + g % 3) || 'over field ' || g",
        public="repeat('kestrel ', CASE WHEN g % 5 = 0 THEN 2 ELSE 1 END) || 'in the rain ' || g",
    )
    for names, expected, _ in pages.values():
        assert names == expected
        assert len(names) == 50  # bob: 24 repeated, then 26 of the 96 holding it once
    assert [("daybook_tsv_repeated" in s) for s in pages["alice"][2]] == [True]
    bob_statements = pages["bob"][2]
    assert [("daybook_tsv_repeated" in s) for s in bob_statements] == [True, False]
    assert re.search(r"\bFROM memo_tsv JOIN memo\b", bob_statements[1]), bob_statements[1]


async def test_two_word_page_is_the_full_ranking_with_or_without_enough_repeats(
    pg_only: None, client: AsyncTestClient[Any], alice: Actor, bob: Actor
) -> None:
    """Two words: a memo holding each once ranks at most 0.1 (one cover), so
    the memos holding either twice or more and ranked above 0.1 make the page
    when they fill it. Alice's private memos hold "kestrel hover" two or three
    times in a row (0.3, 0.5); bob sees 30 memos holding them as "kestrel
    hover kestrel" (0.2) and 90 holding each once, 0-4 words apart (0.1 to
    0.02): fewer than the pool above 0.1, so every match is ranked."""
    pages = await _pages_and_statements(
        client,
        alice,
        bob,
        "kestrel hover",
        private="repeat('kestrel hover ', 1 + g % 3) || 'field ' || g",
        public="CASE WHEN g % 4 = 0 THEN 'kestrel hover kestrel '"
        " ELSE 'kestrel ' || repeat('over ', g % 5) || 'hover ' END || g",
    )
    for names, expected, _ in pages.values():
        assert names == expected
        assert len(names) == 50
    assert [("daybook_tsv_repeated" in s) for s in pages["alice"][2]] == [True]
    assert [("daybook_tsv_repeated" in s) for s in pages["bob"][2]] == [True, False]
