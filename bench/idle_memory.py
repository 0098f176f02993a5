"""Idle memory of a real server with the model loaded, per process (issue 15).

    .venv/bin/python -m bench.idle_memory --dialect sqlite
    .venv/bin/python -m bench.idle_memory --dialect sqlite --workers 1

The memory half of ``bench.embed_backlog`` without its 20,000-memo backlog
and latency phases, so that a change to what a process holds can be
measured in a minute: one fresh database, one real ``daybook serve`` with
the embedding worker and the default model on, ``--memos`` memos created
through ``memos:batchCreate`` and embedded, then the server restarted on
that database (as an instance with notes starts), a few searches and lists
on fresh connections so that every worker has loaded the query model and
the vectors and parsed a long memo (its Markdown pool started), a settle
pause, and RSS and PSS per process with the largest mappings.

The Markdown pool stops after ``parse_pool.IDLE_SECONDS`` (60) without a
parse (decision 0052): ``--settle 5`` (the default) measures a server just
used, ``--settle 70`` one left idle.

Target (issue 15): idle RSS under 300 MB in all with the model loaded.
"""

from __future__ import annotations

import argparse
import asyncio
import pathlib
import random
import tempfile

import httpx

from app.db.engine import create_engine
from bench.as_users import _user, uptime
from bench.databases import fresh_database
from bench.embed_backlog import (
    _print_memory,
    create_memos,
    lease_holder,
    memory_map,
    processes,
    wait_drained,
    warm_searches,
)
from bench.harness import start_server, stop_server


async def run(args: argparse.Namespace) -> None:
    print("load before:", uptime())
    env = {"DAYBOOK_EMBED_WORKER": "1", "DAYBOOK_EMBEDDING_MODEL": args.model}
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="bench-idle-memory-") as tmp:
        work = pathlib.Path(tmp)
        async with fresh_database(args.dialect, work) as db:
            engine = create_engine(db.url)
            proc, base = start_server(db.url, work / "data", args.workers, ready_s=300, env=env)
            try:
                async with httpx.AsyncClient(base_url=base, timeout=60) as http:
                    token = await _user(http, "holder", "")
                await create_memos(base, token, args.memos, rng)
                drained = await wait_drained(engine, 600)
                print(f"{args.memos} memos embedded {drained:.0f} s after the last create")
                stop_server(proc)
                proc, base = start_server(db.url, work / "data", args.workers, ready_s=300, env=env)
                await asyncio.sleep(3)
                await warm_searches(base, token, 4 * args.workers)
                await _long_memos(base, token, 4 * args.workers)
                await asyncio.sleep(args.settle)
                procs = processes(proc.pid, await lease_holder(engine))
                _print_memory(f"idle, models loaded, {args.workers} worker(s)", procs)
                for p in procs:
                    if p["rss_mb"] > 40:
                        top = memory_map(p["pid"])[:6]
                        print(f"  {p['role']} {p['pid']} RSS by mapping (MB): {top}")
            finally:
                stop_server(proc)
                await engine.dispose()
    print("load after:", uptime())


async def _long_memos(base: str, token: str, n: int) -> None:
    """Memos long enough to be parsed off the loop, on fresh connections (every worker)."""
    for i in range(n):
        async with httpx.AsyncClient(
            base_url=base, timeout=60, headers={"Authorization": f"Bearer {token}"}
        ) as http:
            body = {"content": f"# Long {i}\n\n" + "Some *Markdown* text. " * 40}
            (await http.post("/api/v1/memos", json=body)).raise_for_status()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dialect", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memos", type=int, default=500)
    parser.add_argument("--model", default="minilm-onnx")
    parser.add_argument("--settle", type=float, default=5.0)
    parser.add_argument("--seed", type=int, default=1)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
