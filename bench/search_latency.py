"""Hybrid search latency at scale, SQLite or PostgreSQL:

    .venv/bin/python -m bench.search_latency --dialect sqlite --memos 100000
    .venv/bin/python -m bench.search_latency --dialect postgresql --memos 1000000

Seeds a fresh database with ``bench.corpus`` (1,000 writers, Zipf; 60%
PRIVATE, 30% PROTECTED, 10% PUBLIC; 3% ARCHIVED) whose memo bodies come
from a pool of ``--contents`` distinct Markdown texts. The loader ends with
``ANALYZE``; the product never runs it, so on SQLite the statistics are
dropped again (``--keep-statistics`` keeps them): the planner sees what it
sees in a user's database. ``--seed memos-db`` instead builds a Memos 0.26
database (Memos' DDL, the same writers and visibilities) and carries it in
with the real ``daybook import-memos-db`` (the product's own write path for
every memo; about 10 ms of CPU per memo, so ~17 minutes at 100k on a quiet
core). ``--db-cache FILE`` keeps the seeded, embedded SQLite database and
reuses it on the next run (the latency runs copy it first: the
``everything`` step rewrites visibilities).

Every hybrid search is followed, in the same moment, by three baselines: the
same query in ``mode=lexical`` (no embedding, no vectors), in
``mode=semantic``, and the query embedding alone; the JSON has their
percentiles, the ratio of the p95s, the
process's CPU time per search (what a search costs with a core to itself,
which wall time on a shared machine is not) and the load average around
each caller. ``--profile`` adds a cProfile of the timed searches and the
wall time per SQL statement.

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
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import asyncpg
import numpy as np
import sqlalchemy as sa
import structlog

from app.access.audience import AccessMode
from app.access.caller import Caller, Credential
from app.db.engine import create_engine
from app.db.transactions import read_transaction
from app.memos.present import present
from app.search.embedder import Embedder, make_embedder
from app.search.runtime import SearchRuntime, has_pgvector
from app.search.semantic import (
    pgvector_arm,
    pgvector_arm_statement,
    pgvector_statement,
    queued_statement,
)
from app.search.service import DEFAULT_POOL, SearchQuery, admission, explain, search_memos
from app.search.terms import parse_terms
from app.search.vectors import content_hash, encode, pgvector_text
from bench.corpus import CorpusSpec, SeedReport, measured_user, seed_postgresql, seed_sqlite
from bench.databases import fresh_database
from bench.harness import add_options
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
        # The worker writes these rows over hours, and autovacuum analyses the table
        # every 10% of them; inserted at once, the table had no statistics until
        # autovacuum came (a minute to several later), and the callers timed before
        # that were planned blind: model = .. AND dim = .. taken for one row, every
        # vector sorted (the 1% caller's 323 ms at 100k). What the worker leaves:
        await conn.execute("ANALYZE memo_embedding")
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
    async with read_transaction(engine) as conn:
        q = SearchQuery(caller=caller, access_mode=AccessMode.PRIVATE, text=text, page_size=10)
        page = await search_memos(conn, runtime, q, "bench")
        memos = await present(
            conn, [page.rows[h.memo_id] for h in page.hits], caller, AccessMode.PRIVATE
        )
    return len(memos), page.total


async def explain_ms(engine: Any, runtime: SearchRuntime, caller: Caller, text: str) -> float:
    """The highlights-and-snippets stage of one search alone (run again on its page):
    semantic-only hits of several sentences embed them to pick the snippet."""
    async with read_transaction(engine) as conn:
        q = SearchQuery(caller=caller, access_mode=AccessMode.PRIVATE, text=text, page_size=10)
        page = await search_memos(conn, runtime, q, "bench")
    started = time.perf_counter()
    await explain(runtime, page.hits, page.rows, parse_terms(text), text)
    return (time.perf_counter() - started) * 1000


async def lexical_search(
    engine: Any, runtime: SearchRuntime, caller: Caller, text: str, mode: str = "lexical"
) -> None:
    """The in-run baseline: the same search, lexical arm only (no query embedding,
    no vectors), with its page presented; or another ``mode`` (``semantic``)."""
    async with read_transaction(engine) as conn:
        q = SearchQuery(
            caller=caller, access_mode=AccessMode.PRIVATE, text=text, page_size=10, mode=mode
        )
        page = await search_memos(conn, runtime, q, "bench")
        await present(conn, [page.rows[h.memo_id] for h in page.hits], caller, AccessMode.PRIVATE)


def statement_key(statement: str) -> str:
    """A statement's name in the profile: its first 160 characters, but for a
    ``WITH`` (the audience's space-scope CTE, shared by every admitted statement)
    the main query after the CTEs, so that different statements stay apart."""
    flat = " ".join(statement.split())
    if flat.startswith("WITH "):
        depth = 0
        for i, ch in enumerate(flat):
            depth += (ch == "(") - (ch == ")")
            if depth == 0 and flat.startswith(" SELECT ", i):
                return "WITH ... " + flat[i + 1 : i + 161]
    return flat[:160]


class StatementTimes:
    """Wall time per SQL statement (by its first line), from the engine's cursor events."""

    def __init__(self, engine: Any) -> None:
        from sqlalchemy import event

        self.totals: dict[str, list[float]] = {}
        self._started: list[float] = []
        self.enabled = False
        event.listen(engine.sync_engine, "before_cursor_execute", self._before)
        event.listen(engine.sync_engine, "after_cursor_execute", self._after)

    def _before(self, *args: Any) -> None:
        self._started.append(time.perf_counter())

    def _after(self, conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        elapsed = (time.perf_counter() - self._started.pop()) * 1000
        if self.enabled:
            self.totals.setdefault(statement_key(statement), []).append(elapsed)

    def table(self, searches: int) -> list[dict[str, Any]]:
        rows = [
            {
                "statement": k,
                "calls_per_search": round(len(v) / searches, 2),
                "ms_per_search": round(sum(v) / searches, 2),
                "p95_ms": round(percentile(sorted(v), 95), 2),
            }
            for k, v in self.totals.items()
        ]
        return sorted(rows, key=lambda r: -r["ms_per_search"])


async def time_caller(
    url: str,
    model: str,
    pgvector: bool,
    caller: Caller,
    queries: list[str],
    tag: str,
    profile: bool = False,
) -> dict[str, Any]:
    """Warm a fresh runtime, then time ``queries`` (the first one reported apart),
    each hybrid search followed by its baselines in the same moment: the lexical
    arm alone and the query embedding alone."""
    engine = create_engine(url)
    statements = StatementTimes(engine) if profile else None
    runtime = SearchRuntime(model, pgvector)
    load_before = os.getloadavg()
    try:
        started = time.perf_counter()
        await runtime.warm(engine)
        warm_s = time.perf_counter() - started
        samples: list[float] = []
        cpu_samples: list[float] = []
        lexical: list[float] = []
        lexical_cpu: list[float] = []
        semantic: list[float] = []
        semantic_cpu: list[float] = []
        embed_ms: list[float] = []
        results = 0
        totals: list[int] = []
        first = 0.0
        embedder = runtime.embedder
        profiler = None
        for i, text in enumerate(queries):
            if i == 1 and profile:
                import cProfile

                profiler = cProfile.Profile()
                assert statements is not None
                statements.enabled = True
            if profiler is not None:
                profiler.enable()
            started = time.perf_counter()
            cpu_started = time.process_time()
            shown, total = await one_search(engine, runtime, caller, f"{text} {tag}{i}")
            elapsed = (time.perf_counter() - started) * 1000
            cpu = (time.process_time() - cpu_started) * 1000
            if profiler is not None:
                profiler.disable()
            if statements is not None:
                statements.enabled = False
            results += shown
            totals.append(total)
            if i == 0:
                first = elapsed
                continue
            samples.append(elapsed)
            cpu_samples.append(cpu)
            started = time.perf_counter()
            cpu_started = time.process_time()
            await lexical_search(engine, runtime, caller, f"{text} {tag}lex{i}")
            lexical.append((time.perf_counter() - started) * 1000)
            lexical_cpu.append((time.process_time() - cpu_started) * 1000)
            started = time.perf_counter()
            cpu_started = time.process_time()
            await lexical_search(engine, runtime, caller, f"{text} {tag}sem{i}", "semantic")
            semantic.append((time.perf_counter() - started) * 1000)
            semantic_cpu.append((time.process_time() - cpu_started) * 1000)
            started = time.perf_counter()
            embedder.embed_query(f"{text} embed{tag}{i}")
            embed_ms.append((time.perf_counter() - started) * 1000)
            if statements is not None:
                statements.enabled = True
        explaining = [
            await explain_ms(engine, runtime, caller, f"{text} {tag}x{i}")
            for i, text in enumerate(queries[:20])
        ]
        explaining.sort()
    finally:
        await engine.dispose()
    samples.sort()
    lexical.sort()
    embed_ms.sort()
    cpu_samples.sort()
    lexical_cpu.sort()
    semantic.sort()
    semantic_cpu.sort()
    out: dict[str, Any] = {
        "warm_up_s": round(warm_s, 2),
        "first_ms": round(first, 1),
        "p50_ms": round(percentile(samples, 50), 1),
        "p95_ms": round(percentile(samples, 95), 1),
        "queries": len(samples),
        "mean_results": round(results / len(queries), 1),
        "mean_total": round(sum(totals) / len(totals), 1),
        "floor": str(runtime.floor(runtime.embedder.name)),
        # This process's CPU time per search (all its threads: the event loop, the
        # SQLite thread, ONNX): what a search costs with a core to itself, which the
        # wall times above are not on a shared machine. PostgreSQL's server CPU is
        # not in it.
        "cpu_p50_ms": round(percentile(cpu_samples, 50), 1),
        "cpu_p95_ms": round(percentile(cpu_samples, 95), 1),
        "lexical_cpu_p50_ms": round(percentile(lexical_cpu, 50), 1),
        "lexical_p50_ms": round(percentile(lexical, 50), 1),
        "lexical_p95_ms": round(percentile(lexical, 95), 1),
        "lexical_cpu_p95_ms": round(percentile(lexical_cpu, 95), 1),
        "semantic_p50_ms": round(percentile(semantic, 50), 1),
        "semantic_p95_ms": round(percentile(semantic, 95), 1),
        "semantic_cpu_p50_ms": round(percentile(semantic_cpu, 50), 1),
        "semantic_cpu_p95_ms": round(percentile(semantic_cpu, 95), 1),
        "hybrid_over_lexical_p95": round(
            percentile(samples, 95) / max(percentile(lexical, 95), 1e-9), 2
        ),
        "query_embedding_p50_ms": round(percentile(embed_ms, 50), 1),
        "query_embedding_p95_ms": round(percentile(embed_ms, 95), 1),
        "explain_p50_ms": round(percentile(explaining, 50), 1),
        "explain_p95_ms": round(percentile(explaining, 95), 1),
        "load_average": [round(x, 2) for x in load_before + os.getloadavg()[:1]],
    }
    if profiler is not None and statements is not None:
        import io
        import pstats

        buf = io.StringIO()
        pstats.Stats(profiler, stream=buf).sort_stats("cumulative").print_stats(45)
        out["profile_cumulative"] = buf.getvalue().splitlines()
        buf = io.StringIO()
        pstats.Stats(profiler, stream=buf).sort_stats("tottime").print_stats(30)
        out["profile_tottime"] = buf.getvalue().splitlines()
        out["statements"] = statements.table(len(samples))[:15]
    return out


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
    arm_ms: list[float] = []
    engine = create_engine(url)
    try:
        count_sql = sql(queued_statement(admitted))
        for text in queries:
            vector = embedder.embed_query(text)
            # The arm as a search runs it (its SET LOCALs, bound parameters), in the
            # same minute as its parts: apart, a difference of planner statistics
            # between two moments looked like a difference of statements.
            async with engine.connect() as conn:
                started = time.perf_counter()
                await pgvector_arm(
                    conn, embedder.name, embedder.dim, vector, admitted, DEFAULT_POOL
                )
                arm_ms.append((time.perf_counter() - started) * 1000)
            ranking_sql = sql(pgvector_statement(embedder.name, vector, admitted, DEFAULT_POOL))
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
    arm_ms.sort()
    return {
        "arm_p50_ms": round(percentile(arm_ms, 50), 1),
        "hnsw_ranking_p50_ms": round(percentile(ranking_ms, 50), 1),
        "pending_count_p50_ms": round(percentile(count_ms, 50), 1),
    }


async def embedding_statistics(url: str) -> dict[str, Any]:
    """Whether the planner has statistics for memo_embedding (autovacuum analyses it
    some time after the bulk insert; until then its plans can ignore HNSW)."""
    conn = await asyncpg.connect(url)
    try:
        row = await conn.fetchrow(
            "SELECT n_mod_since_analyze, last_analyze, last_autoanalyze,"
            " (SELECT count(*) FROM pg_stats WHERE tablename = 'memo_embedding') AS columns"
            " FROM pg_stat_user_tables WHERE relname = 'memo_embedding'"
        )
    finally:
        await conn.close()
    return {k: (str(v) if v is not None and not isinstance(v, int) else v) for k, v in row.items()}


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


async def seed_database(args: argparse.Namespace, db: Any, workdir: Path) -> dict[str, Any]:
    """The corpus, as a user gets it: a Memos database (Memos' own DDL, ``--users``
    Zipf writers) carried in by ``daybook import-memos-db`` (the product's import
    path: derived columns, tags, full-text rows, queue entries, no statistics), or
    with ``--seed corpus`` the bulk loader (``bench.corpus``, which also runs
    ``ANALYZE``)."""
    if args.seed == "corpus":
        step(f"seeding {args.memos} memos ({args.contents} distinct bodies)")
        spec = CorpusSpec(memos=args.memos, contents=args.contents, users=args.users)
        seeded = (await seed(args.dialect, db, spec)).as_dict()
        if db.sqlite_path is not None and not args.keep_statistics:
            # The loader ends with ANALYZE; the product never runs it, so a user's
            # database has no sqlite_stat1 and the planner works without statistics.
            con = sqlite3.connect(db.sqlite_path)
            con.execute("DROP TABLE IF EXISTS sqlite_stat1")
            con.execute("DROP TABLE IF EXISTS sqlite_stat4")
            con.commit()
            con.close()
            seeded["statistics"] = "dropped (as the product leaves a database)"
        return seeded
    from bench.portability import build_memos_db, run_cli

    source = workdir / "memos.db"
    step(f"building a Memos 0.26 database: {args.memos} memos by {args.users} writers")
    started = time.perf_counter()
    await asyncio.to_thread(build_memos_db, source, args.memos, 0, 7, args.users)
    build_s = time.perf_counter() - started
    step("daybook import-memos-db")
    carried = await asyncio.to_thread(
        run_cli,
        ["import-memos-db", "--database-url", db.url, "--data", str(workdir / "data"), str(source)],
    )
    source.unlink()
    step(f"  {carried['seconds']:.1f}s, {carried['rss_mb']:.0f} MB")
    engine = create_engine(db.url)
    try:
        async with engine.connect() as conn:
            measured = (
                await conn.execute(
                    sa.text("SELECT id FROM user_account WHERE username = :u"),
                    {"u": f"user{measured_user(args.users):04d}"},
                )
            ).scalar_one()
    finally:
        await engine.dispose()
    return {
        "via": "daybook import-memos-db",
        "memos": args.memos,
        "users": args.users,
        "memos_db_build_s": round(build_s, 1),
        "import_memos_db": {k: carried[k] for k in ("seconds", "rss_mb", "cpu_s", "summary")},
        "measured_user_id": int(measured),
    }


async def has_statistics(url: str) -> bool | None:
    """Whether the planner has statistics the product did not gather (SQLite:
    ``sqlite_stat1``; the product never runs ``ANALYZE``)."""
    if not url.startswith("sqlite"):
        return None
    con = sqlite3.connect(url.removeprefix("sqlite:///"))
    try:
        return bool(
            con.execute(
                "SELECT count(*) FROM sqlite_master WHERE name = 'sqlite_stat1'"
            ).fetchone()[0]
        )
    finally:
        con.close()


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
        engine = create_engine(db.url)
        pgvector = await has_pgvector(engine)
        await engine.dispose()
        report["pgvector"] = pgvector
        embedder = await asyncio.to_thread(make_embedder, args.model)
        report["model"] = embedder.name
        cache = Path(args.db_cache) if args.db_cache else None
        if cache is not None and cache.exists() and db.sqlite_path is not None:
            step(f"reusing {cache} (seeded and embedded by an earlier run)")
            shutil.copyfile(cache, db.sqlite_path)
            meta = json.loads(cache.with_suffix(".json").read_text())
            report["seed"], report["vectors"] = meta["seed"], meta["vectors"]
            report["seed"]["reused_from"] = str(cache)
        else:
            report["seed"] = await seed_database(args, db, workdir)
            step(f"embedding the distinct bodies with {embedder.name}, storing a vector per memo")
            if db.sqlite_path is not None:
                report["vectors"] = await asyncio.to_thread(store_sqlite, db.sqlite_path, embedder)
            else:
                report["vectors"] = await store_postgresql(db.url, embedder, pgvector)
            if cache is not None and db.sqlite_path is not None:
                con = sqlite3.connect(db.sqlite_path)
                con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                con.close()
                shutil.copyfile(db.sqlite_path, cache)
                meta = {"seed": report["seed"], "vectors": report["vectors"]}
                cache.with_suffix(".json").write_text(json.dumps(meta, indent=2))
        report["sqlite_stat1"] = await has_statistics(db.url)
        narrow, own = narrow_caller(await writers(db.url), args.memos)
        broad = Caller(
            user_id=report["seed"]["measured_user_id"],
            username="m",
            role="USER",
            credential=Credential.SESSION,
        )
        for label, caller in (("1%", narrow), ("broad", broad)):
            step(f"timing {label}")
            stats = await embedding_statistics(db.url) if pgvector else None
            report[label] = await time_caller(
                db.url, args.model, pgvector, caller, queries, label, args.profile
            )
            report[label]["memo_embedding_statistics_before"] = stats
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
            report["1%"]["plan"] = await explain_arm(db.url, embedder, narrow, queries[1])
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
    add_options(parser, memos=100_000, users=1000)
    parser.add_argument("--contents", type=int, default=4000, help="distinct memo bodies")
    parser.add_argument("--model", default="minilm-onnx")
    parser.add_argument("--queries", type=int, default=40, help="timed queries per caller")
    parser.add_argument("--recall-queries", type=int, default=5)
    parser.add_argument(
        "--without-pgvector", action="store_true", help="PostgreSQL: drop the extension first"
    )
    parser.add_argument(
        "--seed",
        choices=("corpus", "memos-db"),
        default="corpus",
        help="corpus: the bulk loader, statistics dropped (default); memos-db: a Memos"
        " database carried in by daybook import-memos-db (about 10 ms of CPU per memo)",
    )
    parser.add_argument(
        "--keep-statistics",
        action="store_true",
        help="--seed corpus on SQLite: keep the loader's ANALYZE (the product never runs it)",
    )
    parser.add_argument(
        "--db-cache",
        help="SQLite: reuse this seeded, embedded database file if it exists, else write it",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="cProfile and per-statement times of the 1%% and broad searches (into the JSON)",
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
    if args.profile:
        suffix += "-profile"
    out = RESULTS / f"search_latency-{args.dialect}{suffix}-{args.memos}.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
