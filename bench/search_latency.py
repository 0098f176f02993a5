"""Hybrid search latency at scale, SQLite or PostgreSQL:

    .venv/bin/python -m bench.search_latency --dialect sqlite --memos 100000
    .venv/bin/python -m bench.search_latency --dialect postgresql --memos 1000000

Seeds a fresh database with ``bench.corpus`` (1,000 writers, Zipf; 60%
PRIVATE, 30% PROTECTED, 10% PUBLIC; 3% ARCHIVED) whose memo bodies come
from a pool of ``--contents`` distinct Markdown texts.

**Vectors (the cheap, documented part).** Embedding every memo with the
worker would take hours at 1M on two cores (about 25 memos/s: see
``bench.embed_throughput``). Instead the distinct bodies are embedded once
with the real model, and every memo gets the vector of its body, stamped
exactly as the worker would stamp it (model, dimension, content hash): the
rows are identical to what the worker would write, only computed once per
distinct text. On PostgreSQL the rows are inserted with one ``INSERT ...
SELECT`` joining ``memo`` to the pool, with the HNSW index dropped first and
rebuilt afterwards (timed). Query embeddings are real and computed on the
request path (each query text is made unique, so the query cache never
hits), and they are part of every latency below.

Then, per caller, a fresh ``SearchRuntime`` is warmed up as the server's
lifespan would (``SearchRuntime.warm``: the query model, and on SQLite the
in-memory vectors; timed), and ``--queries`` hybrid searches run end to end
in process (query embedding, both arms, the pending count, fusion,
presenting a page of 10):

- ``1%``: a key restricted to its holder's own memos, for a writer owning
  about 1% of them;
- ``broad``: the median writer, who sees PROTECTED/PUBLIC plus their own;
- ``everything``: every memo visible (all memos made PROTECTED and NORMAL
  first; on PostgreSQL with memo's secondary indexes dropped and rebuilt
  around the UPDATE, then ``VACUUM ANALYZE``), plus one first search
  on a runtime that was *not* warmed (what the first search cost before the
  warm-up existed).

On PostgreSQL with pgvector the run also checks the HNSW arm against an
exact scan (``--recall-queries`` queries, 1% and broad callers, index scans
off) and reports the overlap of the two top-``pool`` distance lists, times
the arm's two parts apart (the HNSW ranking, the pending count) and keeps
``EXPLAIN ANALYZE`` of the arm's statement. Memos sharing a body share a
vector, and pgvector's HNSW stores up to 10 identical vectors as one graph
element, so the graph has fewer elements than memos; the latency of the
ranking is not what dominates (see the stages).

Times: about 3 minutes at 100k on either dialect. At 1M on PostgreSQL,
roughly 5 min seeding, 3 to 5 min embedding the pool (4,000 texts), a few
minutes inserting vectors, 15 to 30 min building HNSW on two cores, 2 min
making everything visible, plus the searches; measured at 100k and
extrapolated in ``docs/decisions/0012-search-snapshot-and-warm-up.md``.

Writes ``bench/results/search_latency-<dialect>-<memos>.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import asyncpg
import numpy as np
import structlog

from app.access.audience import AccessMode
from app.access.caller import Caller, Credential
from app.db.engine import create_engine
from app.memos.present import present
from app.search.embedder import Embedder, make_embedder
from app.search.runtime import SearchRuntime, has_pgvector
from app.search.semantic import pgvector_arm_statement, pgvector_statement, queued_statement
from app.search.service import DEFAULT_POOL, SearchQuery, admission, explain, search_memos
from app.search.terms import parse_terms
from app.search.vectors import content_hash, encode, pgvector_text
from bench.corpus import CorpusSpec, SeedReport, seed_postgresql, seed_sqlite
from bench.databases import fresh_database
from bench.timing import percentile, step

RESULTS = Path(__file__).parent / "results"
EVAL_QUERIES = Path(__file__).parent / "eval" / "queries.tsv"
EMBED_BATCH = 64


# --- vectors ---------------------------------------------------------------------------


def embed_pool(contents: list[str], embedder: Embedder) -> tuple[dict[str, Any], float]:
    """Each distinct body's vector (float32, normalised), and the seconds it took."""
    started = time.perf_counter()
    vectors: dict[str, Any] = {}
    for i in range(0, len(contents), EMBED_BATCH):
        chunk = contents[i : i + EMBED_BATCH]
        for text, v in zip(chunk, embedder.embed_passages(chunk), strict=True):
            vectors[text] = v
        if i and i % (EMBED_BATCH * 16) == 0:
            step(f"embedded {i}/{len(contents)} distinct bodies")
    return vectors, time.perf_counter() - started


def store_sqlite(path: Path, embedder: Embedder) -> dict[str, Any]:
    db = sqlite3.connect(path)
    contents = [r[0] for r in db.execute("SELECT DISTINCT content FROM memo")]
    vectors, seconds = embed_pool(contents, embedder)
    started = time.perf_counter()
    now = int(time.time())
    blobs = {text: (encode(v), content_hash(text)) for text, v in vectors.items()}
    db.executemany(
        "INSERT INTO memo_embedding VALUES (?, ?, ?, ?, ?, ?)",
        (
            (memo_id, embedder.name, embedder.dim, *blobs[content], now)
            for memo_id, content in db.execute("SELECT id, content FROM memo").fetchall()
        ),
    )
    # Every memo now has its vector: what the worker's store would have dequeued.
    db.execute("DELETE FROM memo_embedding_queue")
    db.commit()
    db.execute("ANALYZE")
    db.close()
    return {
        "distinct_contents": len(contents),
        "pool_embed_s": round(seconds, 1),
        "pool_texts_per_s": round(len(contents) / seconds, 1),
        "insert_s": round(time.perf_counter() - started, 1),
    }


async def store_postgresql(url: str, embedder: Embedder, pgvector: bool) -> dict[str, Any]:
    conn = await asyncpg.connect(url)
    try:
        contents = [r[0] for r in await conn.fetch("SELECT DISTINCT content FROM memo")]
        vectors, seconds = await asyncio.to_thread(embed_pool, contents, embedder)
        await conn.execute("SET synchronous_commit = off")
        await conn.execute("SET maintenance_work_mem = '3GB'")
        await conn.execute("SET max_parallel_maintenance_workers = 1")
        indexes = await conn.fetch(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'memo_embedding'"
            " AND indexname LIKE 'ix_memo_embedding_hnsw%'"
        )
        for row in indexes:
            await conn.execute(f'DROP INDEX "{row["indexname"]}"')
        await conn.execute(
            "CREATE TEMP TABLE bench_pool"
            " (content text, vector bytea, content_hash bigint, embedding text)"
        )
        await conn.copy_records_to_table(
            "bench_pool",
            records=[
                (text, encode(v), content_hash(text), pgvector_text(v))
                for text, v in vectors.items()
            ],
        )
        started = time.perf_counter()
        columns = "memo_id, model, dim, vector, content_hash, updated_ts"
        values = "m.id, $1, $2, p.vector, p.content_hash, $3"
        if pgvector:  # parse each distinct vector once, not once per memo
            await conn.execute("ALTER TABLE bench_pool ADD COLUMN parsed halfvec")
            await conn.execute("UPDATE bench_pool SET parsed = embedding::halfvec")
            columns += ", embedding"
            values += ", p.parsed"
        inserted = await conn.execute(
            f"INSERT INTO memo_embedding ({columns}) SELECT {values}"
            " FROM memo m JOIN bench_pool p ON p.content = m.content",
            embedder.name,
            embedder.dim,
            int(time.time()),
        )
        # Every memo now has its vector: what the worker's store would have dequeued.
        await conn.execute("DELETE FROM memo_embedding_queue")
        insert_s = time.perf_counter() - started
        step(f"{inserted}: {insert_s:.1f}s")
        started = time.perf_counter()
        for row in indexes:
            await conn.execute(row["indexdef"])
        index_s = time.perf_counter() - started
        step(f"HNSW index rebuilt: {index_s:.1f}s")
        await conn.execute("VACUUM ANALYZE memo_embedding")
    finally:
        await conn.close()
    return {
        "distinct_contents": len(contents),
        "pool_embed_s": round(seconds, 1),
        "pool_texts_per_s": round(len(contents) / seconds, 1),
        "insert_s": round(insert_s, 1),
        "hnsw_build_s": round(index_s, 1) if indexes else None,
    }


# --- callers and timing ----------------------------------------------------------------


def narrow_caller(rows: list[tuple[int, int]], total: int) -> tuple[Caller, int]:
    user, count = min(rows, key=lambda r: abs(r[1] - total / 100))
    caller = Caller(
        user_id=int(user),
        username="u",
        role="USER",
        credential=Credential.PAT,
        pat_id=1,
        restriction={"personal": "OWN"},
    )
    return caller, int(count)


async def writers(url: str) -> list[tuple[int, int]]:
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            result = await conn.exec_driver_sql(
                "SELECT creator_id, count(*) FROM memo GROUP BY creator_id"
            )
            return [(int(r[0]), int(r[1])) for r in result]
    finally:
        await engine.dispose()


async def one_search(
    engine: Any, runtime: SearchRuntime, caller: Caller, text: str
) -> tuple[int, int]:
    """One search end to end (with the page's highlights and snippets): the page's
    length and the relevant total."""
    async with engine.connect() as conn:
        q = SearchQuery(caller=caller, access_mode=AccessMode.PRIVATE, text=text, page_size=10)
        page = await search_memos(conn, runtime, q, "bench")
        memos = await present(
            conn, [page.rows[h.memo_id] for h in page.hits], caller, AccessMode.PRIVATE
        )
    return len(memos), page.total


async def explain_ms(engine: Any, runtime: SearchRuntime, caller: Caller, text: str) -> float:
    """The highlights-and-snippets stage of one search alone (run again on its page):
    semantic-only hits of several sentences embed them to pick the snippet."""
    async with engine.connect() as conn:
        q = SearchQuery(caller=caller, access_mode=AccessMode.PRIVATE, text=text, page_size=10)
        page = await search_memos(conn, runtime, q, "bench")
    started = time.perf_counter()
    await explain(runtime, page.hits, page.rows, parse_terms(text), text)
    return (time.perf_counter() - started) * 1000


async def time_caller(
    url: str, model: str, pgvector: bool, caller: Caller, queries: list[str], tag: str
) -> dict[str, Any]:
    """Warm a fresh runtime, then time ``queries`` (the first one reported apart)."""
    engine = create_engine(url)
    runtime = SearchRuntime(model, pgvector)
    try:
        started = time.perf_counter()
        await runtime.warm(engine)
        warm_s = time.perf_counter() - started
        samples: list[float] = []
        results = 0
        totals: list[int] = []
        first = 0.0
        for i, text in enumerate(queries):
            started = time.perf_counter()
            shown, total = await one_search(engine, runtime, caller, f"{text} {tag}{i}")
            results += shown
            totals.append(total)
            elapsed = (time.perf_counter() - started) * 1000
            if i == 0:
                first = elapsed
            else:
                samples.append(elapsed)
        explaining = [
            await explain_ms(engine, runtime, caller, f"{text} {tag}x{i}")
            for i, text in enumerate(queries[:20])
        ]
        explaining.sort()
        embed_ms = []
        embedder = runtime.embedder
        for i, text in enumerate(queries[:20]):
            started = time.perf_counter()
            embedder.embed_query(f"{text} embed{tag}{i}")
            embed_ms.append((time.perf_counter() - started) * 1000)
    finally:
        await engine.dispose()
    samples.sort()
    embed_ms.sort()
    return {
        "warm_up_s": round(warm_s, 2),
        "first_ms": round(first, 1),
        "p50_ms": round(percentile(samples, 50), 1),
        "p95_ms": round(percentile(samples, 95), 1),
        "queries": len(samples),
        "mean_results": round(results / len(queries), 1),
        "mean_total": round(sum(totals) / len(totals), 1),
        "floor": str(runtime.floor(runtime.embedder.name)),
        "query_embedding_p50_ms": round(percentile(embed_ms, 50), 1),
        "explain_p50_ms": round(percentile(explaining, 50), 1),
        "explain_p95_ms": round(percentile(explaining, 95), 1),
    }


async def cold_first_search(
    url: str, model: str, pgvector: bool, caller: Caller, text: str
) -> float:
    """The first search of a runtime that was not warmed up (the model and, without
    pgvector, every vector load on the request path)."""
    engine = create_engine(url)
    try:
        runtime = SearchRuntime(model, pgvector)
        started = time.perf_counter()
        await one_search(engine, runtime, caller, text)
        return round((time.perf_counter() - started) * 1000, 1)
    finally:
        await engine.dispose()


async def make_everything_visible(url: str, dialect: str) -> float:
    started = time.perf_counter()
    if dialect == "sqlite":
        con = sqlite3.connect(url.removeprefix("sqlite:///"))
        con.execute("UPDATE memo SET visibility = 'PROTECTED', state = 'NORMAL'")
        con.commit()
        con.close()
    else:
        # Every index of memo would get a new entry per row (the two GIN indexes on
        # content are slow to update row by row): drop them, update, rebuild.
        conn = await asyncpg.connect(url)
        try:
            await conn.execute("SET maintenance_work_mem = '1GB'")
            indexes = await conn.fetch(
                "SELECT i.indexname, i.indexdef FROM pg_indexes i"
                " WHERE i.schemaname = current_schema() AND i.tablename = 'memo'"
                " AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid ="
                " format('%I.%I', i.schemaname, i.indexname)::regclass)"
            )
            for row in indexes:
                await conn.execute(f'DROP INDEX "{row["indexname"]}"')
            await conn.execute("UPDATE memo SET visibility = 'PROTECTED', state = 'NORMAL'")
            for row in indexes:
                await conn.execute(row["indexdef"])
            await conn.execute("VACUUM ANALYZE memo")
        finally:
            await conn.close()
    return round(time.perf_counter() - started, 1)


async def hnsw_recall(
    url: str, embedder: Embedder, caller: Caller, queries: list[str], pool: int
) -> dict[str, Any]:
    """Overlap of the HNSW arm's top-``pool`` distances with an exact scan's."""
    from sqlalchemy.dialects import postgresql

    engine = create_engine(url)
    overlaps: list[float] = []
    try:
        for text in queries:
            vector = embedder.embed_query(text)
            q = SearchQuery(caller=caller, access_mode=AccessMode.PRIVATE, text=text)
            stmt = pgvector_statement(embedder.name, vector, admission(q), pool)
            sql = str(
                stmt.compile(dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True})
            )
            lists = []
            for exact in (False, True):
                async with engine.begin() as conn:
                    await conn.exec_driver_sql("SET LOCAL hnsw.iterative_scan = relaxed_order")
                    await conn.exec_driver_sql(f"SET LOCAL hnsw.ef_search = {max(40, 2 * pool)}")
                    if exact:
                        await conn.exec_driver_sql("SET LOCAL enable_indexscan = off")
                    rows = await conn.exec_driver_sql(sql)
                    lists.append(sorted(round(float(r[1]), 4) for r in rows))
            approx, truth = lists
            matched = sum(min(approx.count(d), truth.count(d)) for d in set(truth))
            overlaps.append(matched / max(len(truth), 1))
    finally:
        await engine.dispose()
    return {
        "queries": len(queries),
        "pool": pool,
        "mean_overlap": round(float(np.mean(overlaps)), 3),
        "min_overlap": round(float(np.min(overlaps)), 3),
    }


async def arm_stages(
    url: str, embedder: Embedder, caller: Caller, queries: list[str]
) -> dict[str, Any]:
    """PostgreSQL with pgvector: the semantic arm's two parts timed apart (p50 over
    ``queries``): the HNSW ranking alone and the pending count alone."""
    from sqlalchemy.dialects import postgresql

    def sql(stmt: Any) -> str:
        return str(
            stmt.compile(dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True})
        )

    q = SearchQuery(caller=caller, access_mode=AccessMode.PRIVATE, text="x")
    admitted = admission(q)
    ranking_ms: list[float] = []
    count_ms: list[float] = []
    engine = create_engine(url)
    try:
        count_sql = sql(queued_statement(admitted))
        for text in queries:
            ranking_sql = sql(
                pgvector_statement(
                    embedder.name, embedder.embed_query(text), admitted, DEFAULT_POOL
                )
            )
            async with engine.begin() as conn:
                await conn.exec_driver_sql("SET LOCAL hnsw.iterative_scan = relaxed_order")
                await conn.exec_driver_sql(f"SET LOCAL hnsw.ef_search = {2 * DEFAULT_POOL}")
                started = time.perf_counter()
                (await conn.exec_driver_sql(ranking_sql)).all()
                ranking_ms.append((time.perf_counter() - started) * 1000)
                started = time.perf_counter()
                (await conn.exec_driver_sql(count_sql)).all()
                count_ms.append((time.perf_counter() - started) * 1000)
    finally:
        await engine.dispose()
    ranking_ms.sort()
    count_ms.sort()
    return {
        "hnsw_ranking_p50_ms": round(percentile(ranking_ms, 50), 1),
        "pending_count_p50_ms": round(percentile(count_ms, 50), 1),
    }


async def explain_arm(url: str, embedder: Embedder, caller: Caller, text: str) -> list[str]:
    """``EXPLAIN ANALYZE`` of the semantic arm's statement (ranking and pending count)."""
    from sqlalchemy.dialects import postgresql

    vector = embedder.embed_query(text)
    q = SearchQuery(caller=caller, access_mode=AccessMode.PRIVATE, text=text)
    stmt = pgvector_arm_statement(embedder.name, vector, admission(q), DEFAULT_POOL)
    sql = str(stmt.compile(dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True}))
    engine = create_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.exec_driver_sql("SET LOCAL hnsw.iterative_scan = relaxed_order")
            await conn.exec_driver_sql(f"SET LOCAL hnsw.ef_search = {2 * DEFAULT_POOL}")
            rows = await conn.exec_driver_sql("EXPLAIN (ANALYZE, BUFFERS) " + sql)
            return [str(r[0]) for r in rows]
    finally:
        await engine.dispose()


# --- the run ---------------------------------------------------------------------------


async def seed(dialect: str, db: Any, spec: CorpusSpec) -> SeedReport:
    if dialect == "sqlite":
        return await asyncio.to_thread(seed_sqlite, str(db.sqlite_path), spec)
    return await seed_postgresql(db.url, spec)


async def drop_pgvector(url: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("DROP EXTENSION vector CASCADE")
    finally:
        await conn.close()


async def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    lines = EVAL_QUERIES.read_text().splitlines()
    queries = [line.split("\t", 1)[1] for line in lines][: args.queries + 1]
    report: dict[str, Any] = {
        "dialect": args.dialect,
        "memos": args.memos,
        "model_setting": args.model,
        "cpus": os.cpu_count(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }
    async with fresh_database(args.dialect, workdir) as db:
        report["server_version"] = db.server_version
        if args.without_pgvector and args.dialect == "postgresql":
            await drop_pgvector(db.url)
        step(f"seeding {args.memos} memos ({args.contents} distinct bodies)")
        seeded = await seed(args.dialect, db, CorpusSpec(memos=args.memos, contents=args.contents))
        report["seed"] = seeded.as_dict()
        engine = create_engine(db.url)
        pgvector = await has_pgvector(engine)
        await engine.dispose()
        report["pgvector"] = pgvector
        embedder = await asyncio.to_thread(make_embedder, args.model)
        report["model"] = embedder.name
        step(f"embedding the distinct bodies with {embedder.name}, storing a vector per memo")
        if db.sqlite_path is not None:
            report["vectors"] = await asyncio.to_thread(store_sqlite, db.sqlite_path, embedder)
        else:
            report["vectors"] = await store_postgresql(db.url, embedder, pgvector)
        narrow, own = narrow_caller(await writers(db.url), args.memos)
        broad = Caller(
            user_id=seeded.measured_user_id,
            username="m",
            role="USER",
            credential=Credential.SESSION,
        )
        for label, caller in (("1%", narrow), ("broad", broad)):
            step(f"timing {label}")
            report[label] = await time_caller(db.url, args.model, pgvector, caller, queries, label)
            gc.collect()
        report["1%"]["visible"] = own
        if pgvector and args.recall_queries:
            step("HNSW against an exact scan")
            for label, caller in (("1%", narrow), ("broad", broad)):
                report[label]["hnsw_recall"] = await hnsw_recall(
                    db.url, embedder, caller, queries[: args.recall_queries], DEFAULT_POOL
                )
        if pgvector:
            for label, caller in (("1%", narrow), ("broad", broad)):
                report[label]["stages"] = await arm_stages(db.url, embedder, caller, queries[:10])
            report["broad"]["plan"] = await explain_arm(db.url, embedder, broad, queries[1])
        step("making every memo visible")
        report["everything_update_s"] = await make_everything_visible(db.url, args.dialect)
        step("timing everything")
        report["everything"] = await time_caller(
            db.url, args.model, pgvector, broad, queries, "all"
        )
        gc.collect()
        if pgvector:
            report["everything"]["stages"] = await arm_stages(db.url, embedder, broad, queries[:10])
            report["everything"]["plan"] = await explain_arm(db.url, embedder, broad, queries[1])
        report["everything"]["first_without_warm_up_ms"] = await cold_first_search(
            db.url, args.model, pgvector, broad, queries[0] + " cold"
        )
    report["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    return report


def main() -> None:
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))  # stdout: JSON
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dialect", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--memos", type=int, default=100_000)
    parser.add_argument("--contents", type=int, default=4000, help="distinct memo bodies")
    parser.add_argument("--model", default="minilm-onnx")
    parser.add_argument("--queries", type=int, default=40, help="timed queries per caller")
    parser.add_argument("--recall-queries", type=int, default=5)
    parser.add_argument(
        "--without-pgvector", action="store_true", help="PostgreSQL: drop the extension first"
    )
    parser.add_argument("--workdir", help="where the database goes (default: a temp dir)")
    args = parser.parse_args()
    started = time.perf_counter()
    if args.workdir:
        report = asyncio.run(run(args, Path(args.workdir)))
    else:
        with tempfile.TemporaryDirectory(prefix="daybook-search-") as tmp:
            report = asyncio.run(run(args, Path(tmp)))
    report["total_s"] = round(time.perf_counter() - started, 1)
    RESULTS.mkdir(exist_ok=True)
    suffix = "-without-pgvector" if args.without_pgvector and args.dialect == "postgresql" else ""
    out = RESULTS / f"search_latency-{args.dialect}{suffix}-{args.memos}.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
