"""Search latency at scale: ``python -m bench.search_latency [--memos 100000]``.

Seeds a SQLite database with ``bench.corpus`` (Zipf writers, 60% PRIVATE),
embeds the corpus' distinct contents once with the default model and stores
a vector for every memo (the worker would compute the same vectors, only
slower), then times hybrid search end to end (query embedding, both arms,
fusion, presenting the page) for three callers:

- ``everything``: every memo visible (all memos made PROTECTED first);
- ``broad``: the median writer, who sees PROTECTED/PUBLIC plus their own;
- ``1%``: a key restricted to its holder's own memos, for a writer owning
  about 1% of them.

Also measures the worker's throughput (``embed_pending`` on 256 memos).
Writes ``bench/results/search_latency-sqlite-<memos>.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

from app.access.audience import AccessMode
from app.access.caller import Caller, Credential
from app.db.engine import create_engine
from app.memos.present import present
from app.search.runtime import SearchRuntime
from app.search.service import SearchQuery, search_memos
from app.search.vectors import content_hash, encode
from app.search.worker import WorkerStats, embed_pending
from bench.corpus import CorpusSpec, seed_sqlite
from bench.databases import fresh_database
from bench.timing import percentile

RESULTS = Path(__file__).parent / "results"
EVAL_QUERIES = Path(__file__).parent / "eval" / "queries.tsv"


def store_all_vectors(path: Path, runtime: SearchRuntime) -> tuple[int, float]:
    """Embed distinct contents once; write one vector row per memo."""
    db = sqlite3.connect(path)
    contents = [r[0] for r in db.execute("SELECT DISTINCT content FROM memo")]
    started = time.perf_counter()
    embedder = runtime.embedder
    vectors = {}
    for i in range(0, len(contents), 64):
        chunk = contents[i : i + 64]
        for text, v in zip(chunk, embedder.embed_passages(chunk), strict=True):
            vectors[text] = encode(v)
    seconds = time.perf_counter() - started
    now = int(time.time())
    rows = (
        (memo_id, embedder.name, embedder.dim, vectors[content], content_hash(content), now)
        for memo_id, content in db.execute("SELECT id, content FROM memo")
    )
    db.executemany("INSERT INTO memo_embedding VALUES (?, ?, ?, ?, ?, ?)", list(rows))
    db.commit()
    db.close()
    return len(contents), seconds


def one_percent_writer(path: Path, total: int) -> tuple[int, int]:
    db = sqlite3.connect(path)
    rows = db.execute("SELECT creator_id, count(*) FROM memo GROUP BY creator_id").fetchall()
    db.close()
    user, count = min(rows, key=lambda r: abs(r[1] - total / 100))
    return int(user), int(count)


async def time_queries(
    url: str, runtime: SearchRuntime, caller: Caller, queries: list[str]
) -> dict[str, Any]:
    engine = create_engine(url)
    samples: list[float] = []
    cold = 0.0
    results = 0
    for i, text in enumerate(queries):
        started = time.perf_counter()
        async with engine.connect() as conn:
            q = SearchQuery(
                caller=caller, access_mode=AccessMode.PRIVATE, text=f"{text} {i}", page_size=10
            )
            page = await search_memos(conn, runtime, q, "bench")
            memos = await present(
                conn, [page.rows[h.memo_id] for h in page.hits], caller, AccessMode.PRIVATE
            )
        elapsed = (time.perf_counter() - started) * 1000
        results += len(memos)
        if i == 0:
            cold = elapsed
        else:
            samples.append(elapsed)
    await engine.dispose()
    samples.sort()
    return {
        "cold_ms": round(cold, 1),
        "p50_ms": round(percentile(samples, 50), 1),
        "p95_ms": round(percentile(samples, 95), 1),
        "queries": len(samples),
        "mean_results": round(results / len(queries), 1),
    }


async def run(memos: int, model: str) -> dict[str, Any]:
    queries = [line.split("\t", 1)[1] for line in EVAL_QUERIES.read_text().splitlines()][:41]
    report: dict[str, Any] = {"memos": memos, "model": model}
    with tempfile.TemporaryDirectory() as tmp:
        async with fresh_database("sqlite", Path(tmp)) as db:
            assert db.sqlite_path is not None
            seed = await asyncio.to_thread(
                seed_sqlite, str(db.sqlite_path), CorpusSpec(memos=memos, contents=1000)
            )
            runtime = SearchRuntime(model, pgvector=False)
            distinct, seconds = await asyncio.to_thread(store_all_vectors, db.sqlite_path, runtime)
            report["embedding"] = {
                "distinct_contents": distinct,
                "batch_notes_per_s": round(distinct / seconds, 1),
            }
            engine = create_engine(db.url)
            sqlite3.connect(db.sqlite_path).execute(
                "DELETE FROM memo_embedding WHERE memo_id > (SELECT max(id) - 256 FROM memo)"
            ).connection.commit()
            stats = WorkerStats()
            await embed_pending(engine, runtime.embedder, False, stats=stats)
            await engine.dispose()
            report["embedding"]["worker_notes_per_s"] = round(stats.embedded / stats.seconds, 1)
            user, own = one_percent_writer(db.sqlite_path, memos)
            narrow = Caller(
                user_id=user,
                username="u",
                role="USER",
                credential=Credential.PAT,
                pat_id=1,
                restriction={"personal": "OWN"},
            )
            broad = Caller(
                user_id=seed.measured_user_id,
                username="m",
                role="USER",
                credential=Credential.SESSION,
            )
            report["1%"] = {"visible": own, **await time_queries(db.url, runtime, narrow, queries)}
            report["broad"] = await time_queries(db.url, runtime, broad, queries)
            con = sqlite3.connect(db.sqlite_path)
            con.execute("UPDATE memo SET visibility = 'PROTECTED', state = 'NORMAL'")
            con.commit()
            con.close()
            report["everything"] = await time_queries(
                db.url, SearchRuntime(model, False), broad, queries
            )
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memos", type=int, default=100_000)
    parser.add_argument("--model", default="minilm-onnx")
    args = parser.parse_args()
    report = asyncio.run(run(args.memos, args.model))
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"search_latency-sqlite-{args.memos}.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
