"""Benchmark: the first page of a filtered memo list, ours against Memos' query shape.

Run: ``python -m bench.filter_memos --dialect sqlite --memos 1000000``
(or ``--dialect postgresql``). See ``bench/README.md``. With ``--db-dir DIR``
(SQLite only) the seeded database is kept in DIR and reused by later runs
with the same ``--memos``, ``--users`` and ``--seed``. With
``--sparse-baseline`` our SQL is also timed with every needle as an IN-list
(the rendering before the selectivity probe), in the same run.

Per filter (a rare word, a common word, a tag, the last week, a combination),
first page, ``pageSize`` 50, in one run on one seeded database:

- ours over HTTP: ``GET /api/v1/memos?pageSize=50&filter=...`` through the
  whole stack in-process, signed in as the measured user;
- ours in SQL: ``app.memos.query_filter.memo_filter_clause`` (the selectivity
  probe, then the render; the IR is cached as in the server) and
  ``app.memos.listing.list_memos`` on one connection, both inside the timed
  call, as a request does;
- Memos in SQL: Memos' shape on ``memo_baseline`` (a copy of ``memo`` with
  only the primary key and unique ``uid``, plus a ``payload`` column holding
  ``{"tags": [...]}`` built from ``memo_tag``, as Memos keeps tags in JSON):
  ``content LIKE '%w%'`` (SQLite) / ``content ILIKE '%w%'`` (PostgreSQL),
  tags by a per-row JSON scan (SQLite ``json_each``, PostgreSQL ``@>``),
  time by a plain comparison, the audience OR, ``ORDER BY created_ts DESC,
  id DESC LIMIT 50 OFFSET 0``.

Also the compile time of each expression (``app.filter.compile_memo_filter``):
cold (LRU cache cleared before each call: parse, lower, render) and warm
(cached IR, render only); and per filter the selectivity probe alone
(``app.filter.probe.dense_needles``) with the rendering it chose.

The ratio columns compare like with like: SQL with SQL.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from litestar.testing import AsyncTestClient
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.sql.elements import ColumnElement

import app.filter
from app.access.audience import AccessMode
from app.access.caller import Caller, Credential
from app.db.engine import create_engine
from app.db.schema import memo, memo_tag
from app.filter import compile_filter, compile_memo_filter, memo_filter_needles
from app.filter.probe import dense_needles
from app.filter.render import like_escape
from app.filter.selectivity import Needle, TrigramNeedle
from app.memos.listing import ListQuery, list_memos
from app.memos.query_filter import memo_filter_clause
from bench.corpus import WORDS, CorpusSpec, SeedReport, tag_pool
from bench.databases import BenchDatabase, fresh_database, migrate, server_version
from bench.harness import add_options, bench_settings, in_process
from bench.list_memos import seed
from bench.timing import Progress, Stats, markdown_table, measure, ratio, step

PAGE_SIZE = 50
SECRET = "bench"
RESULTS = Path(__file__).resolve().parent / "results"
TARGET_RARE_RATIO = 20.0  # Memos ÷ ours (SQL p50), rare word, 1M memos
TARGET_COMPILE_MS = 1.0
WEEK_S = 168 * 3600

# The corpus draws every word uniformly from a ~200-word vocabulary, so each
# vocabulary word sits in ~22% of memos: no plain word is rare. The rarest
# strings are the ``name_name()`` identifiers of the code extras (one pool
# content in 4,000 ≈ 0.025% of memos), but pg_trgm splits words at ``_``, so
# on PostgreSQL such a needle is only as selective as its two common words.
# So the rare *word* is planted: after seeding, every PLANT_EVERY-th memo gets
# `` zeppelin`` appended (0.05% of memos; ``title``/``snippet`` are left as they
# were). Both frequencies are re-counted per run.
RARE_WORD = "zeppelin"
PLANT_EVERY = 2_000
RARE_IDENTIFIER = "snow_latency"
COMMON_WORD = "coffee"  # a vocabulary word: ~23% of memos
MEDIUM_WORD = "link"  # "Link: https://..." lines: ~6% of memos
TAG = "work"  # a root of bench.corpus.tag_pool; memo_tag holds ancestors

Call = Callable[[], Awaitable[object]]


@dataclass(frozen=True, slots=True)
class Options:
    dialect: str
    memos: int
    users: int
    requests: int
    warmup: int
    compiles: int
    budget_s: float
    seed: int
    keep: bool
    db_dir: Path | None = None
    sparse_baseline: bool = False


@dataclass(frozen=True, slots=True)
class Shape:
    """One filter: its CEL text and Memos' equivalent WHERE terms on ``memo_baseline``."""

    name: str
    cel: str
    word: str | None = None  # content substring, for Memos' LIKE / ILIKE
    tag: str | None = None
    since_s: int | None = None  # created_ts >= now - since_s
    not_pinned: bool = False


SHAPES = (
    Shape("rare word", f'content.contains("{RARE_WORD}")', word=RARE_WORD),
    Shape("rare identifier", f'content.contains("{RARE_IDENTIFIER}")', word=RARE_IDENTIFIER),
    Shape("common word", f'content.contains("{COMMON_WORD}")', word=COMMON_WORD),
    Shape("tag", f'"{TAG}" in tags', tag=TAG),
    Shape("last week", 'created_ts >= now - duration("168h")', since_s=WEEK_S),
    Shape(
        "combined",
        f'"{TAG}" in tags && content.contains("{MEDIUM_WORD}") && !pinned',
        word=MEDIUM_WORD,
        tag=TAG,
        not_pinned=True,
    ),
)

# Extra expressions for the compile-time table only (typical UI filters).
COMPILE_ONLY = (
    'creator == "users/user0500" && visibility in ["PUBLIC", "PROTECTED"]',
    "has_task_list && has_incomplete_tasks",
    'tags.exists(t, t.startsWith("work/")) || content.contains("deadline")',
    'pinned && updated_ts >= now - duration("720h")',
)


# --- the Memos baseline ---------------------------------------------------------------------

baseline_metadata = sa.MetaData()
memo_baseline = sa.Table(
    "memo_baseline",
    baseline_metadata,
    # Columns only: no secondary index; uid keeps its UNIQUE, id its primary key.
    *[c._copy() for c in memo.columns],
    # Memos' payload: TEXT on SQLite, JSONB on PostgreSQL.
    sa.Column("payload", sa.Text().with_variant(JSONB(), "postgresql"), nullable=False),
)


async def plant_rare_word(engine: AsyncEngine) -> int:
    """Append RARE_WORD to every PLANT_EVERY-th memo (triggers / GIN keep the indexes right).

    Idempotent, for a reused database: a memo that already ends with the word is left alone.
    """
    planted = memo.c.id % PLANT_EVERY == 7
    async with engine.begin() as conn:
        await conn.execute(
            memo.update()
            .where(planted, sa.not_(memo.c.content.endswith(f" {RARE_WORD}", autoescape=True)))
            .values(content=memo.c.content + f" {RARE_WORD}")
        )
        count = (
            await conn.execute(sa.select(sa.func.count()).select_from(memo).where(planted))
        ).scalar_one()
    # No ANALYZE memo: the product never runs one after such a change (issue 15).
    return int(count)


async def create_baseline(engine: AsyncEngine) -> float:
    """Copy ``memo`` into ``memo_baseline`` with a ``{"tags": [...]}`` payload, and analyze it."""
    started = time.perf_counter()
    sqlite = engine.dialect.name == "sqlite"
    t = memo_tag.c
    if sqlite:
        tags = sa.func.json_group_array(t.tag)
        payload: ColumnElement[Any] = sa.func.json_object("tags", tags)
    else:
        payload = sa.func.jsonb_build_object(
            "tags", sa.func.jsonb_agg(sa.text("tag ORDER BY position"))
        )
    tag_payload = sa.select(payload).where(t.memo_id == memo.c.id).correlate(memo).scalar_subquery()
    columns = [c.name for c in memo.columns]
    async with engine.begin() as conn:
        await conn.run_sync(baseline_metadata.drop_all)
        await conn.run_sync(baseline_metadata.create_all)
        await conn.execute(
            memo_baseline.insert().from_select(
                [*columns, "payload"], sa.select(*memo.columns, tag_payload)
            )
        )
    async with engine.connect() as conn:
        conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
        await conn.execute(sa.text("ANALYZE memo_baseline"))
    return time.perf_counter() - started


def memos_query(engine: AsyncEngine, shape: Shape, user_id: int, now: int) -> sa.Select[Any]:
    """Memos' ListMemos shape with the filter: full scans, OFFSET 0."""
    m = memo_baseline.c
    sqlite = engine.dialect.name == "sqlite"
    where: list[ColumnElement[bool]] = [
        sa.or_(m.creator_id == user_id, m.visibility.in_(("PUBLIC", "PROTECTED"))),
        m.state == "NORMAL",
    ]
    if shape.tag is not None:
        if sqlite:
            each = sa.func.json_each(m.payload, "$.tags").table_valued("value")
            where.append(sa.exists(sa.select(1).select_from(each).where(each.c.value == shape.tag)))
        else:
            tags = sa.type_coerce(m.payload, JSONB)["tags"]
            where.append(tags.op("@>")(sa.func.jsonb_build_array(shape.tag)))
    if shape.word is not None:
        # Escaped so ``_`` is literal, as in our filter (``snow_latency`` must not
        # match ``snow latency``); the cost is the same full scan.
        pattern = f"%{like_escape(shape.word)}%"
        like = m.content.like if sqlite else m.content.ilike
        where.append(like(pattern, escape="\\"))
    if shape.since_s is not None:
        where.append(m.created_ts >= now - shape.since_s)
    if shape.not_pinned:
        where.append(sa.not_(m.pinned))
    return (
        sa.select(memo_baseline)
        .where(*where)
        .order_by(m.created_ts.desc(), m.id.desc())
        .limit(PAGE_SIZE)
        .offset(0)
    )


# --- calls ----------------------------------------------------------------------------------


def http_call(client: AsyncTestClient[Any], headers: dict[str, str], shape: Shape) -> Call:
    params = {"pageSize": PAGE_SIZE, "filter": shape.cel}

    async def call() -> None:
        response = await client.get("/api/v1/memos", params=params, headers=headers)
        if response.status_code != 200:
            raise RuntimeError(f"list failed: {response.status_code} {response.text[:200]}")

    return call


async def our_page(conn: AsyncConnection, caller: Caller, shape: Shape, now: int) -> list[Any]:
    """What ``GET /api/v1/memos`` does below HTTP: probe, render, list (one connection)."""
    clause = await memo_filter_clause(conn, shape.cel, now=now)
    query = ListQuery(
        caller=caller,
        mode=AccessMode.PRIVATE,
        page_size=PAGE_SIZE,
        filter_text=shape.cel,
        filter_clause=clause,
    )
    rows, _ = await list_memos(conn, query, SECRET)
    return rows


def ours_sql_call(engine: AsyncEngine, caller: Caller, shape: Shape, now: int) -> Call:
    async def call() -> None:
        async with engine.connect() as conn:
            await our_page(conn, caller, shape, now)

    return call


def sparse_sql_call(engine: AsyncEngine, caller: Caller, shape: Shape, now: int) -> Call:
    """Ours without the probe: every needle as an IN-list (the rendering before the probe)."""

    async def call() -> None:
        async with engine.connect() as conn:
            clause = compile_memo_filter(shape.cel, now=now, dialect_name=engine.dialect.name)
            query = ListQuery(
                caller=caller,
                mode=AccessMode.PRIVATE,
                page_size=PAGE_SIZE,
                filter_text=shape.cel,
                filter_clause=clause,
            )
            await list_memos(conn, query, SECRET)

    return call


def probe_call(engine: AsyncEngine, shape: Shape) -> Call:
    """The selectivity probe alone (the IR is cached, as in the server)."""
    compiled = compile_filter(shape.cel)

    async def call() -> None:
        async with engine.connect() as conn:
            await dense_needles(conn, compiled)

    return call


def describe(needle: Needle) -> str:
    if isinstance(needle, TrigramNeedle):
        return f"content {needle.text!r}"
    return f"tag {needle.op} {', '.join(needle.values)}"


def memos_sql_call(engine: AsyncEngine, shape: Shape, user_id: int, now: int) -> Call:
    stmt = memos_query(engine, shape, user_id, now)

    async def call() -> None:
        async with engine.connect() as conn:
            (await conn.execute(stmt)).all()

    return call


async def check(engine: AsyncEngine, caller: Caller, shape: Shape, now: int) -> dict[str, Any]:
    """Matching memos in the corpus, and whether both first pages hold the same memos."""
    found = memo_filter_needles(shape.cel)
    async with engine.connect() as conn:
        ours = await our_page(conn, caller, shape, now)
        theirs = (await conn.execute(memos_query(engine, shape, caller.user_id, now))).all()
        dense = await dense_needles(conn, compile_filter(shape.cel))
        # Both renderings must select the same memos.
        sparse_clause = compile_memo_filter(shape.cel, now=now, dialect_name=engine.dialect.name)
        dense_clause = compile_memo_filter(
            shape.cel, now=now, dialect_name=engine.dialect.name, dense=frozenset(found)
        )
        counts = [
            (await conn.execute(sa.select(sa.func.count()).select_from(memo).where(c))).scalar_one()
            for c in (sparse_clause, dense_clause)
        ]
        total = (await conn.execute(sa.select(sa.func.count()).select_from(memo))).scalar_one()
    if counts[0] != counts[1]:
        raise RuntimeError(f"{shape.name}: sparse and dense renderings differ: {counts}")
    matching = counts[0]
    return {
        "matching_memos": matching,
        "matching_share_pct": round(100 * matching / max(total, 1), 4),
        "first_page_rows": len(ours),
        "same_rows": [r.id for r in ours] == [r.id for r in theirs],
        "dense": [describe(n) for n in found if n in dense],
        "sparse": [describe(n) for n in found if n not in dense],
    }


# --- plans ----------------------------------------------------------------------------------


async def plans(engine: AsyncEngine, caller: Caller, shape: Shape, now: int) -> dict[str, str]:
    """EXPLAIN QUERY PLAN (SQLite) / EXPLAIN ANALYZE (PostgreSQL) of both statements."""
    captured: list[tuple[str, Any]] = []

    def capture(_c: Any, _cur: Any, statement: str, parameters: Any, *_: Any) -> None:
        if (
            statement.lstrip().startswith(("SELECT", "WITH"))
            and "ORDER BY memo.created_ts" in statement
        ):
            captured.append((statement, parameters))

    sa.event.listen(engine.sync_engine, "before_cursor_execute", capture)
    try:
        await ours_sql_call(engine, caller, shape, now)()
    finally:
        sa.event.remove(engine.sync_engine, "before_cursor_execute", capture)
    out = {"ours": await _explain(engine, *captured[0])}
    compiled = memos_query(engine, shape, caller.user_id, now).compile(
        engine.sync_engine, compile_kwargs={"literal_binds": True}
    )
    out["memos"] = await _explain(engine, str(compiled), ())
    return out


async def _explain(engine: AsyncEngine, statement: str, parameters: Any) -> str:
    sqlite = engine.dialect.name == "sqlite"
    prefix = "EXPLAIN QUERY PLAN " if sqlite else "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) "
    async with engine.connect() as conn:
        rows = (await conn.exec_driver_sql(prefix + statement, parameters)).all()
    return "\n".join(" | ".join(str(v) for v in row) for row in rows)


# --- compile time ---------------------------------------------------------------------------


def measure_compile(text: str, dialect: str, n: int) -> dict[str, Any]:
    """Cold (cache cleared each call) and warm (cached IR) ``compile_memo_filter`` times."""
    now = int(time.time())
    cold: list[float] = []
    warm: list[float] = []
    for _ in range(n):
        app.filter.compiled._lowered.cache_clear()
        t0 = time.perf_counter()
        compile_memo_filter(text, now=now, dialect_name=dialect)
        t1 = time.perf_counter()
        compile_memo_filter(text, now=now, dialect_name=dialect)
        t2 = time.perf_counter()
        cold.append(t1 - t0)
        warm.append(t2 - t1)
    return {
        "cold": Stats.of(cold, sum(cold)).as_dict(),
        "warm": Stats.of(warm, sum(warm)).as_dict(),
    }


def measure_compiles(dialect: str, n: int) -> dict[str, Any]:
    texts = [s.cel for s in SHAPES] + list(COMPILE_ONLY)
    progress = Progress("compile", len(texts), unit="expr")
    out = {}
    for text in texts:
        measure_compile(text, dialect, 20)  # warm the interpreter's own caches
        out[text] = measure_compile(text, dialect, n)
        progress.advance(1)
    progress.done()
    return out


# --- the run --------------------------------------------------------------------------------


async def run(opts: Options) -> dict[str, Any]:
    assert TAG in tag_pool() and COMMON_WORD in WORDS
    if opts.db_dir is not None:
        return await run_in(opts, opts.db_dir)
    workdir = Path(tempfile.mkdtemp(prefix=f"daybook-bench-filter-{opts.dialect}-"))
    try:
        async with fresh_database(opts.dialect, workdir) as db:
            step(f"{db.dialect} {db.server_version} at {workdir}")
            spec = CorpusSpec(memos=opts.memos, users=opts.users, seed=opts.seed)
            report = await seed(db, spec)
            return await measure_all(db, opts, report, workdir)
    finally:
        if not opts.keep:
            shutil.rmtree(workdir, ignore_errors=True)


SEEDED = "seeded.json"


async def run_in(opts: Options, workdir: Path) -> dict[str, Any]:
    """Seed a SQLite database in ``workdir`` once; later runs with the same corpus reuse it."""
    if opts.dialect != "sqlite":
        raise SystemExit("--db-dir: SQLite only")
    corpus = {"memos": opts.memos, "users": opts.users, "seed": opts.seed}
    saved = _seeded(workdir, corpus)
    if saved is not None:
        url = f"sqlite:///{workdir / 'daybook.db'}"
        await migrate(url)
        db = BenchDatabase("sqlite", url, workdir, workdir / "daybook.db")
        db = replace(db, server_version=await server_version(url))
        step(f"{db.dialect} {db.server_version}: reusing {db.sqlite_path}")
        return await measure_all(db, opts, SeedReport(**saved), workdir)
    async with fresh_database(opts.dialect, workdir) as db:
        step(f"{db.dialect} {db.server_version} at {workdir}")
        spec = CorpusSpec(memos=opts.memos, users=opts.users, seed=opts.seed)
        report = await seed(db, spec)
        fields = {f: getattr(report, f) for f in SeedReport.__dataclass_fields__}
        (workdir / SEEDED).write_text(json.dumps({"corpus": corpus, "report": fields}) + "\n")
        return await measure_all(db, opts, report, workdir)


def _seeded(workdir: Path, corpus: dict[str, int]) -> dict[str, Any] | None:
    """The saved seed report if ``workdir`` holds this corpus; else an emptied ``workdir``."""
    path, marker = workdir / "daybook.db", workdir / SEEDED
    if marker.exists() and path.exists():
        saved = json.loads(marker.read_text())
        if saved["corpus"] != corpus:
            raise SystemExit(f"--db-dir {workdir} holds another corpus: {saved['corpus']}")
        report: dict[str, Any] = saved["report"]
        return report
    workdir.mkdir(parents=True, exist_ok=True)
    for stale in (path, marker, *workdir.glob("daybook.db-*")):
        stale.unlink(missing_ok=True)
    return None


async def measure_all(
    db: BenchDatabase, opts: Options, report: SeedReport, workdir: Path
) -> dict[str, Any]:
    engine = create_engine(db.url)
    planted = await plant_rare_word(engine)
    step(f"planted {RARE_WORD!r} in {planted:,} memos")
    baseline_s = await create_baseline(engine)
    step(f"memo_baseline copy with payload: {baseline_s:.1f}s")
    caller = Caller(
        user_id=report.measured_user_id,
        username=report.measured_username,
        role="USER",
        credential=Credential.ACCESS_TOKEN,
        session_id=1,
    )
    headers = {"Authorization": f"Bearer {report.token}"}
    settings = bench_settings(db.url, workdir / "data", migrate_on_start=False, secret=SECRET)
    results: dict[str, Any] = {}
    try:
        async with in_process(settings, client_timeout=600, quiet=True) as client:
            for shape in SHAPES:
                results[shape.name] = await measure_shape(
                    engine, client, headers, caller, shape, opts
                )
    finally:
        await engine.dispose()
    compiles = measure_compiles(db.dialect, opts.compiles)
    return document(db, opts, report, baseline_s, results, compiles)


async def measure_shape(
    engine: AsyncEngine,
    client: AsyncTestClient[Any],
    headers: dict[str, str],
    caller: Caller,
    shape: Shape,
    opts: Options,
) -> dict[str, Any]:
    n, w = opts.requests, opts.warmup
    now = int(time.time())
    label = shape.name
    out: dict[str, Any] = {"filter": shape.cel, **await check(engine, caller, shape, now)}
    step(f"{label}: {out}")
    budget = {"budget_s": opts.budget_s, "min_requests": 10}
    out["ours_http"] = await measure(
        http_call(client, headers, shape),
        label=f"{label}: ours HTTP",
        requests=n,
        warmup=w,
        **budget,
    )
    out["ours_sql"] = await measure(
        ours_sql_call(engine, caller, shape, now),
        label=f"{label}: ours SQL",
        requests=n,
        warmup=w,
        **budget,
    )
    if opts.sparse_baseline:
        out["ours_sql_sparse"] = await measure(
            sparse_sql_call(engine, caller, shape, now),
            label=f"{label}: ours SQL, all sparse",
            requests=n,
            warmup=min(w, 2),
            **budget,
        )
    out["probe"] = await measure(
        probe_call(engine, shape),
        label=f"{label}: probe",
        requests=n,
        warmup=w,
        **budget,
    )
    out["memos_sql"] = await measure(
        memos_sql_call(engine, shape, caller.user_id, now),
        label=f"{label}: Memos SQL",
        requests=n,
        warmup=min(w, 2),
        **budget,
    )
    out["plans"] = await plans(engine, caller, shape, now)
    return {k: v.as_dict() if isinstance(v, Stats) else v for k, v in out.items()}


# --- output ---------------------------------------------------------------------------------


def document(
    db: BenchDatabase,
    opts: Options,
    report: SeedReport,
    baseline_s: float,
    results: dict[str, Any],
    compiles: dict[str, Any],
) -> dict[str, Any]:
    return {
        "benchmark": "filter_memos",
        "dialect": db.dialect,
        "server_version": db.server_version,
        "memos": opts.memos,
        "users": opts.users,
        "page_size": PAGE_SIZE,
        "requests": opts.requests,
        "warmup": opts.warmup,
        "seed": opts.seed,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        "seeding": {**report.as_dict(), "baseline_copy_s": round(baseline_s, 2)},
        "shapes": results,
        "compile": compiles,
        "compile_samples": opts.compiles,
        "targets": {
            "rare_word_memos_over_ours_sql_p50": TARGET_RARE_RATIO,
            "compile_ms": TARGET_COMPILE_MS,
        },
    }


def _stats(doc: dict[str, Any], shape: str, key: str) -> Stats:
    return Stats(**doc["shapes"][shape][key])


def render(doc: dict[str, Any]) -> str:
    """The README tables for one run."""
    headers = [
        "filter",
        "matching memos",
        "ours p50 / p95 (HTTP)",
        "ours p50 / p95 (SQL)",
        "Memos p50 / p95 (SQL)",
        "Memos ÷ ours (SQL p50)",
        "Memos SQL ÷ ours HTTP (p50)",
        "probe p50 / p95",
        "rendering",
    ]
    sparse = any("ours_sql_sparse" in r for r in doc["shapes"].values())
    if sparse:
        headers += ["ours, all sparse p50 / p95 (SQL)", "all sparse ÷ ours (SQL p50)"]
    rows = []
    for shape, result in doc["shapes"].items():
        http, sql = _stats(doc, shape, "ours_http"), _stats(doc, shape, "ours_sql")
        base = _stats(doc, shape, "memos_sql")

        rows.append(
            [
                f"{shape}: `{result['filter']}`",
                f"{result['matching_memos']:,} ({result['matching_share_pct']:g}%)",
                http.cell() + _n(http, doc),
                sql.cell() + _n(sql, doc),
                base.cell() + _n(base, doc),
                ratio(base.p50_ms, sql.p50_ms),
                ratio(base.p50_ms, http.p50_ms),
                Stats(**result["probe"]).cell() if "probe" in result else "",
                _rendering(result),
            ]
        )
        if sparse:
            old = _stats(doc, shape, "ours_sql_sparse")
            rows[-1] += [old.cell() + _n(old, doc), ratio(old.p50_ms, sql.p50_ms)]
    title = (
        f"**filter_memos — {doc['dialect']} {doc['server_version']}, {doc['memos']:,} memos, "
        f"{doc['users']:,} users, first page, pageSize {doc['page_size']}** "
        f"(n = {doc['requests']} timed requests per cell after {doc['warmup']} warm-up)"
    )
    compile_rows = [
        [
            f"`{text}`",
            Stats(**c["cold"]).cell(),
            Stats(**c["warm"]).cell(),
        ]
        for text, c in doc["compile"].items()
    ]
    compile_table = markdown_table(
        ["expression", "cold p50 / p95 (parse+lower+render)", "warm p50 / p95 (cached IR)"],
        compile_rows,
    )
    seeding = doc["seeding"]
    footer = (
        f"Seeding: {seeding['total_s']:.0f} s; `memo_baseline` copy with payload "
        f"{seeding['baseline_copy_s']:.0f} s. SQL columns exclude HTTP; HTTP includes auth, "
        f"filter compile, the list query and `present`. Ours in SQL includes the selectivity "
        f"probe (also timed alone: probe); rendering: which needles the probe found dense "
        f"(per-row test) or sparse (IN-list)."
    )
    return (
        f"{title}\n\n{markdown_table(headers, rows)}\n\n{footer}\n\n"
        f"**compile_memo_filter ({doc['dialect']}, n = {doc['compile_samples']} per cell)**"
        f"\n\n{compile_table}"
    )


def _rendering(result: dict[str, Any]) -> str:
    parts = [f"dense: {n}" for n in result.get("dense", [])]
    parts += [f"sparse: {n}" for n in result.get("sparse", [])]
    return "; ".join(parts) or "no probe"


def _n(stats: Stats, doc: dict[str, Any]) -> str:
    return "" if stats.n >= doc["requests"] else f" (n = {stats.n})"


def verdict(doc: dict[str, Any]) -> list[str]:
    lines = []
    for shape, result in doc["shapes"].items():
        sql, base = _stats(doc, shape, "ours_sql"), _stats(doc, shape, "memos_sql")
        times = base.p50_ms / sql.p50_ms if sql.p50_ms > 0 else float("nan")
        status = "SLOWER than Memos" if times < 1 else "not slower"
        extra = ""
        if shape.startswith("rare"):
            ok = "meets" if times >= TARGET_RARE_RATIO else "MISSES"
            extra = f"; {ok} the {TARGET_RARE_RATIO:.0f}× target"
        lines.append(
            f"- {shape}: {times:.1f}× (SQL p50) — {status}{extra}; "
            f"same first page as Memos: {result['same_rows']}"
        )
    slow = [
        text for text, c in doc["compile"].items() if Stats(**c["cold"]).p50_ms >= TARGET_COMPILE_MS
    ]
    lines.append(
        f"- compile: cold p50 under {TARGET_COMPILE_MS:g} ms for "
        f"{len(doc['compile']) - len(slow)}/{len(doc['compile'])} expressions"
        + (f" (over: {', '.join(slow)})" if slow else "")
    )
    return lines


def write(doc: dict[str, Any]) -> Path:
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"filter_memos-{doc['dialect']}-{doc['memos']}.json"
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    return path


def parse_args(argv: list[str] | None) -> Options:
    p = argparse.ArgumentParser(
        prog="python -m bench.filter_memos",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_options(p, memos=100_000, users=1_000, requests=100, warmup=10, seed=42, keep=True)
    p.add_argument("--compiles", type=int, default=500, help="timed compiles per expression")
    p.add_argument(
        "--budget",
        type=float,
        default=60.0,
        help="seconds per cell before stopping early (min 10 requests)",
    )
    p.add_argument(
        "--sparse-baseline",
        action="store_true",
        help="also time our SQL with every needle as an IN-list (no probe): before and after",
    )
    p.add_argument(
        "--db-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="SQLite only: seed into DIR once and reuse it on later runs of the same corpus "
        "(--memos, --users, --seed); DIR is never removed",
    )
    a = p.parse_args(argv)
    return Options(
        a.dialect,
        a.memos,
        a.users,
        a.requests,
        a.warmup,
        a.compiles,
        a.budget,
        a.seed,
        a.keep,
        a.db_dir,
        a.sparse_baseline,
    )


def main(argv: list[str] | None = None) -> None:
    opts = parse_args(argv)
    doc = asyncio.run(run(opts))
    path = write(doc)
    for shape, result in doc["shapes"].items():
        for label, plan in result["plans"].items():
            sys.stderr.write(f"\n### plan: {shape}, {label}\n{plan}\n")
    print()
    print(render(doc))
    print()
    print("\n".join(verdict(doc)))
    print(f"\nresults: {path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path}")


if __name__ == "__main__":
    main()
