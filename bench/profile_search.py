"""Where one hybrid search's time goes, by stage, by SQL statement and by Python frame.

    .venv/bin/python -m bench.profile_search --db-cache FILE [--queries 30] [--caller 1%]

``FILE`` is a seeded, embedded SQLite database written by
``bench.search_latency --db-cache FILE`` (100k memos: about 20 minutes to
build once on this machine). It is copied to a temporary directory and
migrated to head, so the cached file is never changed; the ``everything``
caller's ``UPDATE`` runs on the copy.

In process, as ``bench.search_latency`` runs a search (``search_memos`` and
``present`` of its page, on one connection), with each query made unique so
the query-vector cache never hits. For each caller (1% key, median writer,
everything visible) it prints, per search, the wall and CPU time
(``time.process_time``: every thread of the process, so the ONNX and SQLite
threads are in it) of each stage, the time inside each SQL statement
(between the cursor events, so aiosqlite's thread hop is in it), and the
top Python frames by own time (cProfile of the event loop's thread; the
work on other threads shows up as the wait for it).

Stages (nested ones are inside their parent's time):

- ``embed_query``: the query's vector (ONNX, on a worker thread);
- ``semantic_arm``: snapshot, cache sync, scoring, admission of candidates,
  pending count; inside it ``score_all`` (every cached vector scored),
  ``walk`` (candidates checked for admission in similarity order) and
  ``exact`` (the admitted ids' vectors scored, for narrow callers);
- ``lexical``: the FTS5 tiers with their admission;
- ``combine``: floor and fusion (pure);
- ``page_rows``: the page's rows under admission;
- ``explain``: highlights and snippets of the page;
- ``present``: the page's memo resources (not search code, reported for scale).

Writes ``bench/results/profile_search.json`` (or ``--out``).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import importlib
import io
import json
import os
import pstats
import shutil
import sqlite3
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import structlog

from app.access.caller import Caller, Credential
from app.db.engine import create_engine
from app.search.runtime import SearchRuntime
from bench.search_latency import EVAL_QUERIES, StatementTimes, narrow_caller, one_search, writers
from bench.timing import percentile, step

RESULTS = Path(__file__).parent / "results"

# (stage, module, attribute): wrapped where the search code looks them up.
STAGES: tuple[tuple[str, str, str], ...] = (
    ("embed_query", "app.search.runtime", "SearchRuntime.embed_query"),
    ("semantic_arm", "app.search.service", "semantic_arm"),
    ("score_all", "app.search.vectors", "VectorCache.score_all"),
    ("top_candidates", "app.search.vectors", "VectorCache.top"),
    ("walk", "app.search.semantic", "walk_scored"),
    ("walk", "app.search.walk", "walk_scored"),
    ("exact", "app.search.semantic", "exact_scored"),
    ("exact", "app.search.exact", "exact_scored"),
    ("sync_cache", "app.search.semantic", "sync_cache"),
    ("sync_cache", "app.search.sqlite_cache", "sync_cache"),
    ("pending", "app.search.semantic", "queued_count"),
    ("pending", "app.search.pending", "queued_count"),
    ("admission", "app.search.service", "admission"),
    ("lexical", "app.search.service", "lexical_hits"),
    ("combine", "app.search.service", "combine"),
    ("page_rows", "app.search.service", "page_rows"),
    ("explain", "app.search.service", "explain"),
    ("explain: sentences", "app.search.runtime", "SearchRuntime.embed_sentences"),
    ("explain: draft", "app.search.service", "draft"),
    ("explain: trigrams", "app.search.service", "closest_by_trigrams"),
    ("present", "bench.search_latency", "present"),
)


class Stages:
    """Wall and CPU time per stage, per search."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = defaultdict(float)
        self.cpu: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.per_search: list[dict[str, tuple[float, float]]] = []

    @contextmanager
    def timed(self, name: str) -> Iterator[None]:
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.wall[name] += (time.perf_counter() - wall) * 1000
            self.cpu[name] += (time.process_time() - cpu) * 1000
            self.calls[name] += 1

    def reset(self) -> None:
        self.wall.clear()
        self.cpu.clear()
        self.calls.clear()
        self.per_search.clear()

    def close_search(self) -> None:
        self.per_search.append({k: (self.wall[k], self.cpu[k]) for k in self.wall})
        self.wall.clear()
        self.cpu.clear()

    def table(self) -> list[dict[str, Any]]:
        names = sorted({k for s in self.per_search for k in s})
        rows = []
        n = len(self.per_search)
        for name in names:
            wall = sorted(s.get(name, (0.0, 0.0))[0] for s in self.per_search)
            cpu = sorted(s.get(name, (0.0, 0.0))[1] for s in self.per_search)
            rows.append(
                {
                    "stage": name,
                    "calls_per_search": round(self.calls[name] / n, 2),
                    "wall_p50_ms": round(percentile(wall, 50), 2),
                    "cpu_p50_ms": round(percentile(cpu, 50), 2),
                    "cpu_mean_ms": round(sum(cpu) / n, 2),
                }
            )
        return rows


def _wrap(stages: Stages, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    if asyncio.iscoroutinefunction(fn):

        async def awrapped(*args: Any, **kwargs: Any) -> Any:
            with stages.timed(name):
                return await fn(*args, **kwargs)

        return awrapped

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        with stages.timed(name):
            return fn(*args, **kwargs)

    return wrapped


def instrument(stages: Stages) -> list[str]:
    """Wrap every stage function that exists in this tree; the names wrapped."""
    done = []
    for name, module_name, attr in STAGES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        owner: Any = module
        *path, last = attr.split(".")
        for part in path:
            owner = getattr(owner, part, None)
        if owner is None or not hasattr(owner, last):
            continue
        setattr(owner, last, _wrap(stages, name, getattr(owner, last)))
        done.append(f"{module_name}.{attr}")
    return done


async def profile_caller(
    url: str, model: str, caller: Caller, queries: list[str], tag: str, stages: Stages
) -> dict[str, Any]:
    engine = create_engine(url)
    statements = StatementTimes(engine)
    runtime = SearchRuntime(model, False)
    load = os.getloadavg()
    try:
        await runtime.warm(engine)
        await one_search(engine, runtime, caller, queries[0] + " first")  # not timed
        stages.reset()
        profiler = cProfile.Profile()
        walls, cpus = [], []
        statements.enabled = True
        for i, text in enumerate(queries):
            wall, cpu = time.perf_counter(), time.process_time()
            profiler.enable()
            with stages.timed("search (total)"):
                await one_search(engine, runtime, caller, f"{text} {tag}{i}")
            profiler.disable()
            walls.append((time.perf_counter() - wall) * 1000)
            cpus.append((time.process_time() - cpu) * 1000)
            stages.close_search()
        statements.enabled = False
    finally:
        await engine.dispose()
    # The p95's make-up: the slowest searches (by CPU), their CPU per stage.
    slowest = sorted(range(len(cpus)), key=lambda i: cpus[i], reverse=True)[:3]
    tail = [
        {
            "query": queries[i],
            "cpu_ms": round(cpus[i], 1),
            "stages_cpu_ms": {
                k: round(v[1], 1) for k, v in sorted(stages.per_search[i].items()) if v[1] >= 0.5
            },
        }
        for i in slowest
    ]
    walls.sort()
    cpus.sort()
    buf = io.StringIO()
    pstats.Stats(profiler, stream=buf).sort_stats("tottime").print_stats(25)
    tottime = [line for line in buf.getvalue().splitlines() if line.strip()]
    buf = io.StringIO()
    pstats.Stats(profiler, stream=buf).sort_stats("cumulative").print_stats(40)
    cumulative = [line for line in buf.getvalue().splitlines() if line.strip()]
    return {
        "searches": len(queries),
        "load_average": [round(x, 2) for x in (*load, os.getloadavg()[0])],
        "wall_p50_ms": round(percentile(walls, 50), 1),
        "wall_p95_ms": round(percentile(walls, 95), 1),
        "cpu_p50_ms": round(percentile(cpus, 50), 1),
        "cpu_p95_ms": round(percentile(cpus, 95), 1),
        "stages": stages.table(),
        "slowest": tail,
        "statements": statements.table(len(queries))[:12],
        "profile_tottime": tottime,
        "profile_cumulative": cumulative,
    }


def print_report(label: str, r: dict[str, Any]) -> None:
    print(f"\n== {label}: wall p50/p95 {r['wall_p50_ms']}/{r['wall_p95_ms']} ms,", end=" ")
    print(f"CPU p50/p95 {r['cpu_p50_ms']}/{r['cpu_p95_ms']} ms, load {r['load_average']}")
    print(f"{'stage':<16} {'calls':>6} {'wall p50':>9} {'CPU p50':>8} {'CPU mean':>9}")
    for s in r["stages"]:
        print(
            f"{s['stage']:<16} {s['calls_per_search']:>6} {s['wall_p50_ms']:>9}"
            f" {s['cpu_p50_ms']:>8} {s['cpu_mean_ms']:>9}"
        )
    print("slowest searches (CPU ms per stage):")
    for t in r["slowest"]:
        print(f"  {t['cpu_ms']:>6} {t['query'][:40]!r}: {t['stages_cpu_ms']}")
    print("statements (ms per search, wall inside the cursor call):")
    for s in r["statements"]:
        print(f"  {s['ms_per_search']:>7} ms  x{s['calls_per_search']:<5} {s['statement'][:110]}")


async def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    from app.db.migrate import upgrade

    path = workdir / "daybook.db"
    step(f"copying {args.db_cache}")
    shutil.copyfile(args.db_cache, path)
    url = f"sqlite:///{path}"
    engine = create_engine(url)
    await upgrade(engine)
    await engine.dispose()
    meta = json.loads(Path(args.db_cache).with_suffix(".json").read_text())
    lines = EVAL_QUERIES.read_text().splitlines()
    queries = [line.split("\t", 1)[1] for line in lines][: args.queries]
    narrow, _ = narrow_caller(await writers(url), meta["seed"]["memos"])
    broad = Caller(
        user_id=meta["seed"]["measured_user_id"],
        username="m",
        role="USER",
        credential=Credential.SESSION,
    )
    stages = Stages()
    wrapped = instrument(stages)
    report: dict[str, Any] = {"wrapped": wrapped, "memos": meta["seed"]["memos"]}
    callers: list[tuple[str, Caller]] = [("1%", narrow), ("broad", broad)]
    for label, caller in callers:
        if args.caller and label not in args.caller:
            continue
        step(f"profiling {label}")
        report[label] = await profile_caller(url, args.model, caller, queries, label, stages)
        print_report(label, report[label])
    if not args.caller or "everything" in args.caller:
        con = sqlite3.connect(path)
        con.execute("UPDATE memo SET visibility = 'PROTECTED', state = 'NORMAL'")
        con.commit()
        con.close()
        step("profiling everything")
        report["everything"] = await profile_caller(url, args.model, broad, queries, "all", stages)
        print_report("everything", report["everything"])
    return report


def main() -> None:
    import sys

    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db-cache", required=True)
    parser.add_argument("--model", default="minilm-onnx")
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--caller", action="append", choices=("1%", "broad", "everything"))
    parser.add_argument("--out", help="JSON path (default bench/results/profile_search.json)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="daybook-profile-search-") as tmp:
        report = asyncio.run(run(args, Path(tmp)))
    out = Path(args.out) if args.out else RESULTS / "profile_search.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
