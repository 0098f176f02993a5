"""The embedding worker's throughput on its own: ``python -m bench.embed_throughput``.

Seeds a fresh database with ``--memos`` memos of ``bench.corpus`` (Markdown,
50 to 600 characters, every body distinct up to 4,000), then runs the
worker's own loop (``app.search.worker.embed_pending``: select the newest
pending batch, embed it in a thread, upsert the vectors under the content
guard, prune the log) until nothing is pending, and reports memos per
second, batches, and the model. For comparison it also times the model
alone on the first ``--model-only`` texts (no database), so the worker's own
overhead is visible. About a minute at the default 2,000 memos with the
default model; run it on a quiet machine (the load average is recorded).

    .venv/bin/python -m bench.embed_throughput
    .venv/bin/python -m bench.embed_throughput --dialect postgresql --memos 2000

Writes ``bench/results/embed_throughput-<dialect>-<model>.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from app.db.engine import create_engine
from app.db.schema import memo
from app.search.embedder import make_embedder
from app.search.runtime import has_pgvector
from app.search.worker import BATCH, WorkerStats, embed_pending, embed_text
from bench.corpus import CorpusSpec, seed_postgresql, seed_sqlite
from bench.databases import fresh_database
from bench.harness import add_options
from bench.timing import step

RESULTS = Path(__file__).parent / "results"


async def run(dialect: str, memos: int, model: str, batch: int, model_only: int) -> dict[str, Any]:
    report: dict[str, Any] = {
        "dialect": dialect,
        "memos": memos,
        "model_setting": model,
        "batch_size": batch,
        "cpus": os.cpu_count(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }
    with tempfile.TemporaryDirectory(prefix="daybook-embed-") as tmp:
        async with fresh_database(dialect, Path(tmp)) as db:
            report["server_version"] = db.server_version
            spec = CorpusSpec(memos=memos, users=50, contents=min(memos, 4000))
            if db.sqlite_path is not None:
                await asyncio.to_thread(seed_sqlite, str(db.sqlite_path), spec)
            else:
                await seed_postgresql(db.url, spec)
            engine = create_engine(db.url)
            try:
                report.update(await measure(engine, model, batch, model_only))
            finally:
                await engine.dispose()
    report["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    return report


async def measure(engine: Any, model: str, batch: int, model_only: int) -> dict[str, Any]:
    started = time.perf_counter()
    embedder = await asyncio.to_thread(make_embedder, model)
    load_s = time.perf_counter() - started
    pgvector = await has_pgvector(engine)
    async with engine.connect() as conn:
        texts = [
            embed_text(t)
            for t in (
                await conn.execute(sa.select(memo.c.content).order_by(memo.c.id).limit(model_only))
            ).scalars()
        ]
        total = int((await conn.execute(sa.select(sa.func.count()).select_from(memo))).scalar_one())
    step(f"model {embedder.name} loaded in {load_s:.2f}s; model alone on {len(texts)} texts")
    wall, cpu = time.perf_counter(), time.process_time()
    for i in range(0, len(texts), batch):
        await asyncio.to_thread(embedder.embed_passages, texts[i : i + batch])
    model_wall, model_cpu = time.perf_counter() - wall, time.process_time() - cpu

    step(f"worker loop over {total} pending memos")
    stats = WorkerStats()
    wall, cpu = time.perf_counter(), time.process_time()
    stored = await embed_pending(engine, embedder, pgvector, batch_size=batch, stats=stats)
    worker_wall, worker_cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {
        "model": embedder.name,
        "dim": embedder.dim,
        "pgvector": pgvector,
        "model_load_s": round(load_s, 2),
        "mean_chars": round(sum(map(len, texts)) / max(len(texts), 1)),
        "model_only": {
            "texts": len(texts),
            "seconds": round(model_wall, 2),
            "per_s": round(len(texts) / model_wall, 1),
            "cpu_s": round(model_cpu, 2),
        },
        "worker": {
            "memos": stored,
            "batches": -(-stored // batch),
            "seconds": round(worker_wall, 2),
            "per_s": round(stored / worker_wall, 1),
            "embed_and_store_s": round(stats.seconds, 2),
            "select_s": round(worker_wall - stats.seconds, 2),
            "cpu_s": round(worker_cpu, 2),
            "ms_per_batch": round(1000 * worker_wall / max(-(-stored // batch), 1), 1),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_options(parser, memos=2000)
    parser.add_argument("--model", default="minilm-onnx")
    parser.add_argument("--batch", type=int, default=BATCH)
    parser.add_argument("--model-only", type=int, default=512, help="texts timed without the DB")
    args = parser.parse_args()
    report = asyncio.run(run(args.dialect, args.memos, args.model, args.batch, args.model_only))
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"embed_throughput-{args.dialect}-{args.model}.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    w, m = report["worker"], report["model_only"]
    print(
        f"{report['model']} ({report['dim']}-d), {report['dialect']}: worker {w['per_s']} memos/s"
        f" ({w['memos']} memos, {w['batches']} batches of {report['batch_size']},"
        f" {w['seconds']} s); model alone {m['per_s']} texts/s;"
        f" load average {report['load_average_at_start']} -> {report['load_average_at_end']}"
    )
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
