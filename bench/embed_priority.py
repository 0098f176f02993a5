"""The embedding thread's priority, on a machine with cores to spare and on a full one.

    .venv/bin/python -m bench.embed_priority [--seconds 20] [--hogs 3]
    .venv/bin/python -m bench.embed_priority --machine full --rounds 1 --seconds 90

Decision 0055 runs each of the embedding thread's model runs at
``SCHED_IDLE`` (``app.search.priority``). Its risk is the GIL: a thread
preempted while it holds the GIL stalls its process's event loop until it
runs again, and a ``SCHED_IDLE`` thread on a full machine may wait long for
a core. This measures that risk in one process: the real MiniLM embedder,
the embedding worker's own thread (``app.search.worker.run_low``) embedding
the benchmark's notes in batches of 32 without a pause, and this process's
event loop, whose lag (how late a 5 ms timer fires) is what a request served
by this process would wait. Phases of ``--seconds`` each, ``--rounds`` of
each policy in each machine state:

- policy **nice**: ``native_at_idle`` off, the thread at nice 10 throughout
  (decision 0047, the way before 0055); policy **idle**: the product;
- machine **spare**: nothing else running; **full**: ``--hogs`` busy-loop
  processes at nice 0 (more than the cores), as a saturated server.

Per phase: passages embedded per second, the loop's lag p50 / p99 / max,
and how many model runs went at ``SCHED_IDLE`` (the rest were held at nice
10 by the starvation rule). The policies alternate within each machine
state, so a drift of the machine's speed shows as a difference between the
two rounds of the same policy.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import random
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from app.search import priority
from app.search.embedder import MiniLMEmbedder
from app.search.worker import BATCH, run_low
from bench.as_users import uptime
from bench.corpus import content_pool
from tests.support import MODEL_CACHE

TICK = 0.005


def _hog() -> None:
    while True:
        pass


@contextmanager
def hogs(n: int) -> Iterator[None]:
    """``n`` busy processes at nice 0 for the block."""
    procs = [multiprocessing.get_context("spawn").Process(target=_hog) for _ in range(n)]
    for p in procs:
        p.start()
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.join()


@contextmanager
def policy(name: str) -> Iterator[dict[str, int]]:
    """Count the runs that went at SCHED_IDLE; with ``nice``, none do."""
    counts = {"idle_runs": 0}
    original_set, original_idle = priority._set, priority._IDLE

    def counting(p: int, tid: int = 0) -> bool:
        if p == original_idle:
            counts["idle_runs"] += 1
        return original_set(p, tid)

    priority._set = counting
    if name == "nice":
        priority._IDLE = None
    try:
        yield counts
    finally:
        priority._set, priority._IDLE = original_set, original_idle


async def phase(embedder: MiniLMEmbedder, texts: list[str], seconds: float) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    lags: list[float] = []
    done = 0
    stop = time.perf_counter() + seconds

    async def probe() -> None:
        while time.perf_counter() < stop:
            before = loop.time()
            await asyncio.sleep(TICK)
            lags.append(loop.time() - before - TICK)

    async def embed() -> None:
        nonlocal done
        rng = random.Random(1)
        while time.perf_counter() < stop:
            batch = rng.sample(texts, BATCH)
            await run_low(embedder.embed_passages, batch)
            done += len(batch)

    started = time.perf_counter()
    await asyncio.gather(probe(), embed())
    elapsed = time.perf_counter() - started
    lags.sort()
    return {
        "passages_per_s": round(done / elapsed, 1),
        "lag_p50_ms": round(1000 * statistics.median(lags), 2),
        "lag_p99_ms": round(1000 * lags[int(0.99 * (len(lags) - 1))], 2),
        "lag_max_ms": round(1000 * lags[-1], 2),
        "runs": done // embedder.LENGTH_RUN,
    }


async def run(args: argparse.Namespace) -> None:
    print("load before:", uptime())
    embedder = MiniLMEmbedder(model_cache=MODEL_CACHE)
    texts = [c.text for c in content_pool(400, random.Random(7))]
    await run_low(embedder.embed_passages, texts[:BATCH])  # the thread and the model warm
    print(f"{os.cpu_count()} cores, {args.seconds:.0f} s per phase, {args.hogs} hogs when full")
    for machine in args.machine or ("spare", "full"):
        with hogs(args.hogs if machine == "full" else 0):
            for name in ("nice", "idle") * args.rounds:
                # Each phase starts without the previous one's starvation hold.
                await run_low(setattr, priority._local, "hold_until", 0.0)
                with policy(name) as counts:
                    result = await phase(embedder, texts, args.seconds)
                print(
                    f"  {machine:5s} {name:4s}: {result['passages_per_s']:6.1f} passages/s,"
                    f" loop lag p50 {result['lag_p50_ms']:6.2f} p99 {result['lag_p99_ms']:7.2f}"
                    f" max {result['lag_max_ms']:7.2f} ms,"
                    f" runs at SCHED_IDLE {counts['idle_runs']}/{result['runs']}"
                )
    print("load after:", uptime())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--hogs", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2, help="of each policy per machine state")
    parser.add_argument("--machine", action="append", choices=("spare", "full"))
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
