"""Benchmark: listing memos (first page and page 100) and creating memos.

Run: ``python -m bench.list_memos --dialect sqlite --memos 1000000``
(or ``--dialect postgresql``). See ``bench/README.md``.

Per shape (first page, page 100), in one run on one seeded database:

- ours over HTTP: ``GET /api/v1/memos?pageSize=50`` through the whole
  Litestar stack in-process (auth, one transaction, list query, the batched
  related-row queries of ``present``, JSON); page 100 is reached by following
  ``nextPageToken`` 99 times, then that page is requested repeatedly;
- ours in SQL: the list statement alone (``app.memos.listing.list_memos``),
  through SQLAlchemy, no HTTP and no ``present``;
- Memos in SQL: Memos' list shape (audience OR, ``ORDER BY created_ts DESC,
  id DESC LIMIT 50 OFFSET n``) through SQLAlchemy on ``memo_baseline``, a copy
  of ``memo`` with only Memos' indexes (primary key, unique ``uid``);
- the same Memos shape on our indexed ``memo`` (what OFFSET costs even with
  our indexes).

The ratio columns compare like with like: SQL with SQL.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from litestar.testing import AsyncTestClient
from sqlalchemy.ext.asyncio import AsyncEngine

from app.access.audience import AccessMode
from app.access.caller import Caller, Credential
from app.db.engine import create_engine
from app.db.schema import memo
from app.memos.listing import ListQuery, list_memos
from bench.corpus import CorpusSpec, SeedReport, markdown, tag_pool
from bench.corpus import seed as corpus_seed
from bench.databases import BenchDatabase, fresh_database
from bench.harness import add_options, bench_settings, in_process
from bench.timing import Stats, fmt_ms, markdown_table, measure, ratio, step

PAGE_SIZE = 50
DEEP_PAGE = 100
SECRET = "bench"
RESULTS = Path(__file__).resolve().parent / "results"
TARGET_P95_MS = 30.0

Call = Callable[[], Awaitable[object]]


@dataclass(frozen=True, slots=True)
class Options:
    dialect: str
    memos: int
    users: int
    requests: int
    warmup: int
    creates: int
    baseline_budget_s: float
    seed: int
    profile: bool
    keep: bool


@dataclass(frozen=True, slots=True)
class Shape:
    name: str
    offset: int  # Memos' OFFSET for this page
    token: str | None  # our page token for this page


# --- the Memos baseline ---------------------------------------------------------------------

baseline_metadata = sa.MetaData()
memo_baseline = sa.Table(
    "memo_baseline",
    baseline_metadata,
    # Columns only: no secondary index; uid keeps its UNIQUE, id its primary key.
    *[c._copy() for c in memo.columns],
)


async def create_baseline(engine: AsyncEngine) -> float:
    """Copy ``memo`` into ``memo_baseline`` (PK + unique uid only) and analyze it."""
    started = time.perf_counter()
    async with engine.begin() as conn:
        await conn.run_sync(baseline_metadata.drop_all)
        await conn.run_sync(baseline_metadata.create_all)
        columns = [c.name for c in memo.columns]
        await conn.execute(memo_baseline.insert().from_select(columns, sa.select(memo)))
    async with engine.connect() as conn:
        conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
        await conn.execute(sa.text("ANALYZE memo_baseline"))
    return time.perf_counter() - started


def memos_query(table: sa.Table, user_id: int, offset: int) -> sa.Select[Any]:
    """Memos' ListMemos shape: audience OR, no keyset, OFFSET paging."""
    m = table.c
    return (
        sa.select(table)
        .where(
            sa.or_(m.creator_id == user_id, m.visibility.in_(("PUBLIC", "PROTECTED"))),
            m.state == "NORMAL",
        )
        .order_by(m.created_ts.desc(), m.id.desc())
        .limit(PAGE_SIZE)
        .offset(offset)
    )


# --- calls ----------------------------------------------------------------------------------


def http_call(client: AsyncTestClient[Any], headers: dict[str, str], token: str | None) -> Call:
    params: dict[str, Any] = {"pageSize": PAGE_SIZE}
    if token:
        params["pageToken"] = token

    async def call() -> None:
        response = await client.get("/api/v1/memos", params=params, headers=headers)
        if response.status_code != 200:
            raise RuntimeError(f"list failed: {response.status_code} {response.text[:200]}")

    return call


def ours_sql_call(engine: AsyncEngine, caller: Caller, token: str | None) -> Call:
    query = ListQuery(caller=caller, mode=AccessMode.PRIVATE, page_size=PAGE_SIZE, page_token=token)

    async def call() -> None:
        async with engine.connect() as conn:
            await list_memos(conn, query, SECRET)

    return call


def memos_sql_call(engine: AsyncEngine, table: sa.Table, user_id: int, offset: int) -> Call:
    stmt = memos_query(table, user_id, offset)

    async def call() -> None:
        async with engine.connect() as conn:
            (await conn.execute(stmt)).all()

    return call


async def walk_to(client: AsyncTestClient[Any], headers: dict[str, str], page: int) -> str:
    """Follow ``nextPageToken`` from the first page; returns the token of ``page``."""
    token = ""
    for _ in range(page - 1):
        response = await client.get(
            "/api/v1/memos", params={"pageSize": PAGE_SIZE, "pageToken": token}, headers=headers
        )
        response.raise_for_status()
        token = response.json()["nextPageToken"]
        if not token:
            raise RuntimeError(f"the corpus has fewer than {page} pages for this user")
    return token


async def same_rows(engine: AsyncEngine, caller: Caller, shape: Shape) -> bool:
    """Our keyset page and Memos' OFFSET page hold the same memos (the audiences agree)."""
    query = ListQuery(
        caller=caller, mode=AccessMode.PRIVATE, page_size=PAGE_SIZE, page_token=shape.token
    )
    async with engine.connect() as conn:
        ours, _ = await list_memos(conn, query, SECRET)
        theirs_query = memos_query(memo_baseline, caller.user_id, shape.offset)
        theirs = (await conn.execute(theirs_query)).all()
    return [r.id for r in ours] == [r.id for r in theirs]


# --- plans ----------------------------------------------------------------------------------


async def plans(engine: AsyncEngine, caller: Caller, shape: Shape) -> dict[str, str]:
    """EXPLAIN QUERY PLAN (SQLite) / EXPLAIN ANALYZE (PostgreSQL) of each statement."""
    captured: list[tuple[str, Any]] = []

    def capture(_c: Any, _cur: Any, statement: str, parameters: Any, *_: Any) -> None:
        if (
            statement.lstrip().startswith(("SELECT", "WITH"))
            and "ORDER BY memo.created_ts" in statement
        ):
            captured.append((statement, parameters))

    sa.event.listen(engine.sync_engine, "before_cursor_execute", capture)
    try:
        await ours_sql_call(engine, caller, shape.token)()
    finally:
        sa.event.remove(engine.sync_engine, "before_cursor_execute", capture)
    out = {"ours": await _explain(engine, *captured[0])}
    for label, table in (("memos", memo_baseline), ("memos_on_our_indexes", memo)):
        compiled = memos_query(table, caller.user_id, shape.offset).compile(
            engine.sync_engine, compile_kwargs={"literal_binds": True}
        )
        out[label] = await _explain(engine, str(compiled), ())
    return out


async def _explain(engine: AsyncEngine, statement: str, parameters: Any) -> str:
    prefix = (
        "EXPLAIN QUERY PLAN "
        if engine.dialect.name == "sqlite"
        else "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) "
    )
    async with engine.connect() as conn:
        rows = (await conn.exec_driver_sql(prefix + statement, parameters)).all()
    return "\n".join(" | ".join(str(v) for v in row) for row in rows)


# --- creates --------------------------------------------------------------------------------


async def measure_creates(client: AsyncTestClient[Any], headers: dict[str, str], n: int) -> Stats:
    rng = random.Random(7)
    tags = tag_pool()
    bodies = [
        {"content": markdown(rng, tags), "visibility": rng.choice(("PRIVATE", "PROTECTED"))}
        for _ in range(n + 10)
    ]
    it = iter(bodies)

    async def call() -> None:
        response = await client.post("/api/v1/memos", json=next(it), headers=headers)
        if response.status_code not in (200, 201):
            raise RuntimeError(f"create failed: {response.status_code} {response.text[:200]}")

    return await measure(call, label="POST /api/v1/memos", requests=n, warmup=10)


# --- the run --------------------------------------------------------------------------------


async def seed(db: BenchDatabase, spec: CorpusSpec) -> SeedReport:
    """The corpus through the product's batch path (``bench.corpus.seed``)."""
    return await corpus_seed(db.url, spec)


async def run(opts: Options) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix=f"daybook-bench-{opts.dialect}-"))
    try:
        async with fresh_database(opts.dialect, workdir) as db:
            step(f"{db.dialect} {db.server_version} at {workdir}")
            spec = CorpusSpec(memos=opts.memos, users=opts.users, seed=opts.seed)
            report = await seed(db, spec)
            return await measure_all(db, opts, report, workdir)
    finally:
        if not opts.keep:
            shutil.rmtree(workdir, ignore_errors=True)


async def measure_all(
    db: BenchDatabase, opts: Options, report: SeedReport, workdir: Path
) -> dict[str, Any]:
    engine = create_engine(db.url)
    baseline_s = await create_baseline(engine)
    step(f"memo_baseline copy: {baseline_s:.1f}s")
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
            shapes = [
                Shape("first page", 0, None),
                Shape(
                    f"page {DEEP_PAGE}",
                    (DEEP_PAGE - 1) * PAGE_SIZE,
                    await walk_to(client, headers, DEEP_PAGE),
                ),
            ]
            for shape in shapes:
                results[shape.name] = await measure_shape(
                    engine, client, headers, caller, shape, opts
                )
            if opts.profile:
                await profile(client, headers, shapes)
            creates = await measure_creates(client, headers, opts.creates)
    finally:
        await engine.dispose()
    return document(db, opts, report, baseline_s, results, creates)


async def measure_shape(
    engine: AsyncEngine,
    client: AsyncTestClient[Any],
    headers: dict[str, str],
    caller: Caller,
    shape: Shape,
    opts: Options,
) -> dict[str, Any]:
    n, w = opts.requests, opts.warmup
    label = shape.name
    out: dict[str, Any] = {
        "offset": shape.offset,
        "same_rows": await same_rows(engine, caller, shape),
    }
    out["ours_http"] = await measure(
        http_call(client, headers, shape.token), label=f"{label}: ours HTTP", requests=n, warmup=w
    )
    out["ours_sql"] = await measure(
        ours_sql_call(engine, caller, shape.token), label=f"{label}: ours SQL", requests=n, warmup=w
    )
    out["memos_sql"] = await measure(
        memos_sql_call(engine, memo_baseline, caller.user_id, shape.offset),
        label=f"{label}: Memos SQL",
        requests=n,
        warmup=min(w, 3),
        budget_s=opts.baseline_budget_s,
    )
    out["memos_on_our_indexes_sql"] = await measure(
        memos_sql_call(engine, memo, caller.user_id, shape.offset),
        label=f"{label}: Memos shape, our indexes",
        requests=n,
        warmup=min(w, 3),
        budget_s=opts.baseline_budget_s,
    )
    out["plans"] = await plans(engine, caller, shape)
    return {k: v.as_dict() if isinstance(v, Stats) else v for k, v in out.items()}


async def profile(
    client: AsyncTestClient[Any], headers: dict[str, str], shapes: list[Shape]
) -> None:
    """cProfile of 200 HTTP list requests per shape, top functions by cumulative time."""
    import cProfile
    import io
    import pstats

    for shape in shapes:
        call = http_call(client, headers, shape.token)
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(200):
            await call()
        profiler.disable()
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(30)
        sys.stderr.write(f"\n### cProfile: {shape.name} over HTTP, 200 requests\n{out.getvalue()}")


# --- output ---------------------------------------------------------------------------------


def document(
    db: BenchDatabase,
    opts: Options,
    report: SeedReport,
    baseline_s: float,
    results: dict[str, Any],
    creates: Stats,
) -> dict[str, Any]:
    return {
        "benchmark": "list_memos",
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
        "create": creates.as_dict(),
        "target_p95_ms": TARGET_P95_MS,
    }


def _stats(doc: dict[str, Any], shape: str, key: str) -> Stats:
    return Stats(**doc["shapes"][shape][key])


def render(doc: dict[str, Any]) -> str:
    """The README table for one run."""
    headers = [
        "shape",
        "ours p50 / p95 (HTTP)",
        "ours p50 / p95 (SQL)",
        "Memos p50 / p95 (SQL)",
        "Memos ÷ ours (SQL p50)",
        "Memos SQL ÷ ours HTTP (p50)",
        "Memos shape on our indexes (SQL)",
        "ours HTTP req/s",
    ]
    rows = []
    for shape in doc["shapes"]:
        http, sql = _stats(doc, shape, "ours_http"), _stats(doc, shape, "ours_sql")
        base = _stats(doc, shape, "memos_sql")
        indexed = _stats(doc, shape, "memos_on_our_indexes_sql")
        rows.append(
            [
                shape,
                http.cell(),
                sql.cell(),
                base.cell() + _n(base, doc),
                ratio(base.p50_ms, sql.p50_ms),
                ratio(base.p50_ms, http.p50_ms),
                indexed.cell() + _n(indexed, doc),
                f"{http.per_second:,.0f}",
            ]
        )
    create = Stats(**doc["create"])
    seeding = doc["seeding"]
    title = (
        f"**list_memos — {doc['dialect']} {doc['server_version']}, {doc['memos']:,} memos, "
        f"{doc['users']:,} users, pageSize {doc['page_size']}** "
        f"(n = {doc['requests']} timed requests per cell after {doc['warmup']} warm-up)"
    )
    footer = (
        f"Create (`POST /api/v1/memos`, sequential): {create.per_second:,.0f} memos/s, "
        f"p50 / p95 {create.cell()} (n = {create.n}).  \n"
        f"Seeding: {seeding['total_s']:.0f} s through memos:batchCreate, no ANALYZE; "
        f"SQL columns exclude HTTP; HTTP includes auth, the list query and `present`."
    )
    return f"{title}\n\n{markdown_table(headers, rows)}\n\n{footer}"


def _n(stats: Stats, doc: dict[str, Any]) -> str:
    return "" if stats.n >= doc["requests"] else f" (n = {stats.n})"


def verdict(doc: dict[str, Any]) -> list[str]:
    lines = []
    for shape in doc["shapes"]:
        http = _stats(doc, shape, "ours_http")
        ok = "meets" if http.p95_ms < TARGET_P95_MS else "MISSES"
        same = doc["shapes"][shape]["same_rows"]
        lines.append(
            f"- {shape}: HTTP p95 {fmt_ms(http.p95_ms)} {ok} the {TARGET_P95_MS:.0f} ms "
            f"target; same memos as Memos' OFFSET page: {same}"
        )
    return lines


def write(doc: dict[str, Any]) -> Path:
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"list_memos-{doc['dialect']}-{doc['memos']}.json"
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    return path


def parse_args(argv: list[str] | None) -> Options:
    p = argparse.ArgumentParser(
        prog="python -m bench.list_memos",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_options(p, memos=100_000, users=1_000, requests=200, warmup=20, seed=42, keep=True)
    p.add_argument("--creates", type=int, default=500)
    p.add_argument(
        "--baseline-budget",
        type=float,
        default=120.0,
        help="seconds per Memos-shape cell before stopping early (min 20 requests)",
    )
    p.add_argument("--profile", action="store_true", help="print a cProfile of the HTTP lists")
    a = p.parse_args(argv)
    return Options(
        a.dialect,
        a.memos,
        a.users,
        a.requests,
        a.warmup,
        a.creates,
        a.baseline_budget,
        a.seed,
        a.profile,
        a.keep,
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
