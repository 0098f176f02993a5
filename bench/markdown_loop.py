"""Markdown off the event loop: ``python -m bench.markdown_loop [--hostile 12] [--memos 200]``.

Runs the app in this process on its own event loop (httpx's ASGI transport,
SQLite in a temp directory) twice, in one run:

- ``inline``: every parse on the event loop (``parse_pool.INLINE_BYTES``
  raised past any content): how Daybook behaved before issue 13 item 17;
- ``pool``: as shipped, parses in the worker processes.

For each: the event loop's worst lateness (a task that asks to wake every
10 ms) and ``/healthz`` latency while a batch of ``--hostile`` memos of
``"!["`` x 4,093 is created; p50/p95 of creating ``--memos`` ordinary 1 KiB
memos one by one; p50/p95 of a 50-memo timeline page with ``?view=html``
(served from ``memo_html``), beside the time rendering those 50 memos took
on every load before. Writes ``bench/results/markdown_loop.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import pathlib
import tempfile
import time
from typing import Any

import httpx

from app.memos import parse_pool
from app.memos.safe_html import render_html
from app.server import create_app
from app.settings import Settings
from bench.databases import fresh_database
from bench.harness import add_options, bench_settings
from bench.timing import Stats, step
from tests.support import LagProbe

RESULTS = pathlib.Path(__file__).parent / "results" / "markdown_loop.json"
HOSTILE = "![" * 4093
ORDINARY = (
    "Shipped the #release/v2 today: see https://example.com/notes and `make deploy`.\n"
    "- [x] tag the build\n- [ ] write the notes **before** Friday\n\n"
) * 6


async def _lifespan(app: Any) -> tuple[asyncio.Task[None], asyncio.Queue[Any]]:
    inbox: asyncio.Queue[Any] = asyncio.Queue()
    outbox: asyncio.Queue[Any] = asyncio.Queue()
    scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}
    task = asyncio.create_task(app(scope, inbox.get, outbox.put))
    await inbox.put({"type": "lifespan.startup"})
    assert (await outbox.get())["type"] == "lifespan.startup.complete"
    return task, inbox


async def run_mode(mode: str, settings: Settings, hostile: int, memos: int) -> dict[str, Any]:
    parse_pool.INLINE_BYTES = 10**9 if mode == "inline" else 256
    app = create_app(settings)
    task, inbox = await _lifespan(app)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://bench", timeout=600) as http:
        user = f"u{mode}"
        await http.post("/api/v1/users", json={"username": user, "password": "password-1"})
        r = await http.post(
            "/api/v1/auth/signin",
            json={"passwordCredentials": {"username": user, "password": "password-1"}},
        )
        auth = {"Authorization": f"Bearer {r.json()['accessToken']}"}
        # The pool starts on first use (decision 0052), and its workers import
        # this module, hence the whole app, again: started before the clock.
        await parse_pool.parse_memo(ORDINARY)

        probe, healthz, done = LagProbe(), [], asyncio.Event()

        async def poll() -> None:
            while not done.is_set():
                t0 = time.perf_counter()
                await http.get("/healthz")
                healthz.append(time.perf_counter() - t0)
                await asyncio.sleep(0.02)

        step(f"{mode}: a batch of {hostile} hostile memos")
        tasks = [asyncio.create_task(probe.run()), asyncio.create_task(poll())]
        t0 = time.perf_counter()
        body = {"memos": [{"content": HOSTILE + f"#{i}"} for i in range(hostile)]}
        r = await http.post("/api/v1/memos:batchCreate", json=body, headers=auth)
        batch_s = time.perf_counter() - t0
        done.set()
        probe.stop()
        await asyncio.gather(*tasks)
        assert r.status_code == 200, r.text[:200]

        step(f"{mode}: {memos} ordinary memos")
        creates = []
        t_all = time.perf_counter()
        for i in range(memos):
            t0 = time.perf_counter()
            r = await http.post("/api/v1/memos", json={"content": ORDINARY + str(i)}, headers=auth)
            creates.append(time.perf_counter() - t0)
        create_stats = Stats.of(creates, time.perf_counter() - t_all)

        step(f"{mode}: timeline pages with view=html")
        reads = []
        t_all = time.perf_counter()
        for _ in range(50):
            t0 = time.perf_counter()
            r = await http.get("/api/v1/memos?pageSize=50&view=html", headers=auth)
            reads.append(time.perf_counter() - t0)
        read_stats = Stats.of(reads, time.perf_counter() - t_all)
        page = [m["content"] for m in r.json()["memos"]]
    await inbox.put({"type": "lifespan.shutdown"})
    await task
    t0 = time.perf_counter()
    for content in page:
        render_html(content)
    render_page_ms = (time.perf_counter() - t0) * 1000
    return {
        "mode": mode,
        "hostile_batch_s": round(batch_s, 2),
        "loop_worst_lag_ms": round(probe.worst * 1000, 1),
        "healthz_max_ms": round(max(healthz) * 1000, 1) if healthz else None,
        "healthz_answered": len(healthz),
        "create": create_stats.as_dict(),
        "timeline_view_html": read_stats.as_dict(),
        "render_page_on_the_loop_ms": round(render_page_ms, 1),
    }


async def main(hostile: int, memos: int) -> None:
    results = []
    for mode in ("inline", "pool"):
        with tempfile.TemporaryDirectory(prefix="bench-md-") as tmp:
            async with fresh_database("sqlite", pathlib.Path(tmp)) as db:
                settings = bench_settings(
                    db.url,
                    pathlib.Path(tmp) / "data",
                    password_hasher="cheap",
                    secret="bench",
                    migrate_on_start=False,
                )
                results.append(await run_mode(mode, dataclasses.replace(settings), hostile, memos))
    print("| mode | loop worst lag | healthz max | hostile batch | create p50 / p95 |", end="")
    print(" view=html page p50 / p95 | rendering that page on the loop |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        c, v = r["create"], r["timeline_view_html"]
        print(
            f"| {r['mode']} | {r['loop_worst_lag_ms']} ms | {r['healthz_max_ms']} ms "
            f"| {r['hostile_batch_s']} s | {c['p50_ms']} / {c['p95_ms']} ms "
            f"| {v['p50_ms']} / {v['p95_ms']} ms | {r['render_page_on_the_loop_ms']} ms |"
        )
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":  # the worker processes import this module again: guard it
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hostile", type=int, default=12)
    add_options(parser, dialect=False, memos=200)
    args = parser.parse_args()
    asyncio.run(main(args.hostile, args.memos))
