"""Query plans on a seeded table: the shapes that matter use an index.

20,000 memos with realistic selectivity (a rare word in 5 memos, the "work"
tag on 1%, "coffee" and the "daily" tag on 30%, 200 creators, five years of
timestamps), statistics gathered with ANALYZE, and no planner switches: the
plans below are what production gets. Each filter is planned as a list runs
it: ANDed with the audience predicate of a signed-in user, ordered newest
first, limited to a page. EXPLAIN needs the values inline, so
the tests compile with ``literal_binds`` (tests only; the application always
binds).

The selectivity probe (``app.filter.probe.dense_needles``) is checked
here too: which needles it finds dense on this table, and that the list
statement walks ``ix_memo_timeline`` newest first for a dense needle (no
sort) while a sparse one keeps driving the plan from its index.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.sql.elements import ColumnElement

from app.access.audience import AccessMode, audience_predicate
from app.access.caller import Caller, Credential
from app.db.schema import memo, memo_tag, user_account
from app.filter import compile_filter, compile_memo_filter, memo_filter_needles
from app.filter.probe import dense_needles
from app.filter.selectivity import Needle, Span, TagNeedle, TrigramNeedle, probe_cap
from app.memos.listing import ListQuery, list_memos
from app.memos.query_filter import memo_filter_clause
from tests.filter.conftest import Db

ROWS = 20_000
START = 1_600_000_000
NOW = START + 5 * 365 * 86_400
WORDS = [f"word{i}" for i in range(300)] + ["deploy", "Привет", "café", "50%_off"]


@pytest.fixture(scope="module")
def seeded(filter_db: Db) -> Db:
    rng = random.Random(42)
    common = random.Random(7)  # its own stream, so the rows above stay as they were
    rare = set(rng.sample(range(1, ROWS + 1), 5))
    memos, tags = [], []
    for i in range(1, ROWS + 1):
        words = rng.choices(WORDS, k=12)
        if i in rare:
            words.insert(3, "RareWord")
        if common.random() < 0.3:
            words.insert(5, "Coffee")
        created = START + rng.randrange(5 * 365 * 86_400)
        memos.append(
            {
                "id": i,
                "uid": f"u{i}",
                "creator_id": rng.randint(1, 200),
                "content": " ".join(words),
                "visibility": rng.choice(["PUBLIC", "PROTECTED", "PRIVATE"]),
                "state": "NORMAL" if rng.random() < 0.95 else "ARCHIVED",
                "created_ts": created,
                "updated_ts": created,
                "origin": {"kind": "session"},
            }
        )
        names = ["work"] if rng.random() < 0.01 else []
        names += rng.sample([f"topic{j}" for j in range(50)], k=rng.randint(0, 3))
        names += ["daily"] if common.random() < 0.3 else []
        tags += [{"memo_id": i, "tag": t, "position": p} for p, t in enumerate(names)]
    users = [
        {
            "id": uid,
            "username": f"u{uid}",
            "role": "USER",
            "state": "NORMAL",
            "password_hash": "x",
            "created_ts": 0,
            "updated_ts": 0,
        }
        for uid in range(1, 201)
    ]
    filter_db.execute(
        (sa.insert(user_account), users), (sa.insert(memo), memos), (sa.insert(memo_tag), tags)
    )
    # What autovacuum does in production: statistics, and on PostgreSQL the GIN
    # pending list flushed into the index proper.
    filter_db.maintenance("ANALYZE" if filter_db.dialect_name == "sqlite" else "VACUUM ANALYZE")
    return filter_db


def _plan(db: Db, text: str) -> str:
    """The plan of the filter ANDed with the audience predicate, as a list runs it."""
    where = compile_memo_filter(text, now=NOW, dialect_name=db.dialect_name)
    query = (
        sa.select(memo.c.id)
        .where(
            memo.c.parent_id.is_(None),
            memo.c.state == "NORMAL",
            audience_predicate(CALLER, AccessMode.PRIVATE),
            where,
        )
        .order_by(memo.c.created_ts.desc(), memo.c.id.desc())
        .limit(51)
    )
    sql = str(query.compile(dialect=db.engine.dialect, compile_kwargs={"literal_binds": True}))
    prefix = "EXPLAIN QUERY PLAN " if db.dialect_name == "sqlite" else "EXPLAIN "
    rows = db.execute(prefix + sql)[0]
    return "\n".join(" ".join(str(c) for c in row) for row in rows)


EXPECTED = {
    # filter: (SQLite plan fragment, PostgreSQL plan fragment)
    'content.contains("rareword")': ("VIRTUAL TABLE INDEX", "ix_memo_content_trgm"),
    '"work" in tags': ("ix_memo_tag_tag", "ix_memo_tag_tag"),
    "creator_id == 17": ("ix_memo_creator_timeline", "ix_memo_creator_timeline"),
    'created_ts >= timestamp("2023-03-01T00:00:00Z")'
    ' && created_ts < timestamp("2023-03-02T00:00:00Z")': (
        "ix_memo_timeline",
        "ix_memo_timeline",
    ),
    'created_ts > now - duration("24h")': ("ix_memo_timeline", "ix_memo_timeline"),
}


@pytest.mark.parametrize("text", list(EXPECTED))
def test_uses_index(seeded: Db, text: str) -> None:
    fragment = EXPECTED[text][0 if seeded.dialect_name == "sqlite" else 1]
    plan = _plan(seeded, text)
    assert fragment in plan, plan
    if text == '"work" in tags' and seeded.dialect_name == "postgresql":
        return  # 1% of rows: PostgreSQL hash-joins the index probe with a scan of memo
    if seeded.dialect_name == "sqlite":
        assert "SCAN memo\n" not in plan + "\n", plan
    else:
        assert "Seq Scan on memo " not in plan, plan


def test_rare_word_found_case_insensitively(seeded: Db) -> None:
    where = compile_memo_filter(
        'content.contains("rAREWORD")', now=NOW, dialect_name=seeded.dialect_name
    )
    ids = seeded.scalars(sa.select(memo.c.id).where(where))
    assert len(ids) == 5


# ---- the selectivity probe and the two renderings --------------------------------

CALLER = Caller(user_id=1, username="u1", role="USER", credential=Credential.SESSION, session_id=1)


def _probe(db: Db, text: str) -> frozenset[Needle]:
    async def go() -> frozenset[Needle]:
        async with db.engine.connect() as conn:
            return await dense_needles(conn, compile_filter(text))

    return db.runner.run(go())


def _list_plan(db: Db, where: ColumnElement[bool]) -> str:
    """EXPLAIN QUERY PLAN of the statement ``list_memos`` runs for a first page."""
    captured: list[tuple[str, Any]] = []

    def capture(_c: Any, _cur: Any, statement: str, parameters: Any, *_: Any) -> None:
        if statement.lstrip().startswith(("SELECT", "WITH")) and "ORDER BY" in statement:
            captured.append((statement, parameters))

    query = ListQuery(caller=CALLER, mode=AccessMode.PRIVATE, filter_clause=where)

    async def go() -> str:
        sa.event.listen(db.engine.sync_engine, "before_cursor_execute", capture)
        try:
            async with db.engine.connect() as conn:
                await list_memos(conn, query, "secret")
        finally:
            sa.event.remove(db.engine.sync_engine, "before_cursor_execute", capture)
        statement, parameters = captured[-1]
        async with db.engine.connect() as conn:
            rows = (await conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters)).all()
        return "\n".join(str(row[-1]) for row in rows)

    return db.runner.run(go())


def _rendered(db: Db, text: str, *, dense: bool) -> ColumnElement[bool]:
    needles = frozenset(memo_filter_needles(text)) if dense else frozenset()
    return compile_memo_filter(text, now=NOW, dialect_name=db.dialect_name, dense=needles)


def test_probe_finds_common_needles(seeded: Db) -> None:
    if seeded.dialect_name != "sqlite":
        assert _probe(seeded, 'content.contains("coffee") && "daily" in tags') == frozenset()
        return
    assert _probe(seeded, 'content.contains("COFFEE")') == {TrigramNeedle("coffee")}
    assert _probe(seeded, 'content.contains("rareword")') == frozenset()
    assert _probe(seeded, '"daily" in tags') == {TagNeedle("==", ("daily",))}
    assert _probe(seeded, 'tag in ["daily", "work"]') == {TagNeedle("in", ("daily", "work"))}
    assert _probe(seeded, 'tags.exists(t, t.startsWith("dai"))') == {
        TagNeedle("startsWith", ("dai",))
    }
    assert _probe(seeded, '"work" in tags') == frozenset()
    # 30% and 30% ANDed: 9% of 20,000 memos, still dense enough to walk.
    assert _probe(seeded, 'content.contains("coffee") && "daily" in tags') == {
        TrigramNeedle("coffee"),
        TagNeedle("==", ("daily",)),
    }
    assert _probe(seeded, 'content.contains("coffee") && "work" in tags') == {
        TrigramNeedle("coffee")
    }


def test_probe_reads_the_id_range_once_per_connection(seeded: Db) -> None:
    if seeded.dialect_name != "sqlite":
        pytest.skip("SQLite only")
    statements: list[str] = []

    def count(_c: Any, _cur: Any, statement: str, *_: Any) -> None:
        statements.append(statement)

    async def go() -> Any:
        async with seeded.engine.connect() as conn:
            conn.info.pop("daybook.filter.memo_span", None)
            sa.event.listen(seeded.engine.sync_engine, "before_cursor_execute", count)
            conn.info.pop("daybook.filter.probes", None)
            try:
                await dense_needles(conn, compile_filter('"daily" in tags'))
                first = len(statements)
                await dense_needles(conn, compile_filter('"work" in tags'))
                second = len(statements) - first
            finally:
                sa.event.remove(seeded.engine.sync_engine, "before_cursor_execute", count)
            return first, second, conn.info["daybook.filter.memo_span"]

    first, second, span = seeded.runner.run(go())
    assert (first, second) == (2, 1)
    assert span == Span(1, ROWS)
    assert probe_cap(span.size) == 1141


def test_a_probe_is_kept_for_its_ttl_then_run_again(
    seeded: Db, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same needles again on the same connection: no statement, the same
    choice; once ``PROBE_TTL`` has passed, the probe runs again."""
    if seeded.dialect_name != "sqlite":
        pytest.skip("SQLite only")
    from app.filter import probe

    clock = [1000.0]
    monkeypatch.setattr(probe.time, "monotonic", lambda: clock[0])
    statements: list[str] = []

    def count(_c: Any, _cur: Any, statement: str, *_: Any) -> None:
        statements.append(statement)

    text = 'content.contains("coffee") && "daily" in tags'

    async def go() -> list[tuple[int, frozenset[Needle]]]:
        seen = []
        async with seeded.engine.connect() as conn:
            conn.info.pop("daybook.filter.probes", None)
            sa.event.listen(seeded.engine.sync_engine, "before_cursor_execute", count)
            try:
                for step in (0.0, probe.PROBE_TTL - 1, 2.0):
                    clock[0] += step
                    before = len(statements)
                    chosen = await dense_needles(conn, compile_filter(text))
                    seen.append((len(statements) - before, chosen))
            finally:
                sa.event.remove(seeded.engine.sync_engine, "before_cursor_execute", count)
        return seen

    (ran, chosen), (kept, again), (expired, fresh) = seeded.runner.run(go())
    assert ran >= 1 and kept == 0 and expired == 1
    assert chosen == again == fresh == {TrigramNeedle("coffee"), TagNeedle("==", ("daily",))}


def test_filter_clause_renders_what_the_probe_chose(seeded: Db) -> None:
    if seeded.dialect_name != "sqlite":
        pytest.skip("SQLite only")

    def sql(text: str) -> str:
        async def go() -> str:
            async with seeded.engine.connect() as conn:
                clause = await memo_filter_clause(conn, text, now=NOW)
            assert clause is not None
            return str(clause.compile(dialect=seeded.engine.dialect))

        return seeded.runner.run(go())

    assert "memo_trgm" not in sql('content.contains("coffee")')
    assert "memo_trgm" in sql('content.contains("rareword")')
    assert "EXISTS" in sql('"daily" in tags')
    assert "EXISTS" not in sql('"work" in tags')


@pytest.mark.parametrize(
    ("text", "sparse_index"),
    [
        ('content.contains("coffee")', "VIRTUAL TABLE INDEX"),
        ('content.startsWith("word1")', "VIRTUAL TABLE INDEX"),
        ('"daily" in tags', "ix_memo_tag_tag"),
        ('tag in ["daily", "work"]', "ix_memo_tag_tag"),
        ('tags.exists(t, t.startsWith("dai"))', "ix_memo_tag_tag"),
        ('content.contains("coffee") && "daily" in tags', "ix_memo_tag_tag"),
    ],
)
def test_dense_walks_the_timeline_sparse_drives(seeded: Db, text: str, sparse_index: str) -> None:
    if seeded.dialect_name != "sqlite":
        pytest.skip("the probe and the per-row rendering are for SQLite's planner")
    dense = _list_plan(seeded, _rendered(seeded, text, dense=True))
    assert "ix_memo_timeline" in dense, dense
    assert "USE TEMP B-TREE FOR ORDER BY" not in dense, dense
    assert "memo_trgm" not in dense, dense
    # A tag is a point lookup per walked memo, never a scan of the tag's index entries.
    assert all("memo_id=?" in line for line in dense.splitlines() if "memo_tag" in line), dense
    sparse = _list_plan(seeded, _rendered(seeded, text, dense=False))
    assert sparse_index in sparse, sparse
    assert "USE TEMP B-TREE FOR ORDER BY" in sparse, sparse
