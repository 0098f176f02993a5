"""What the Markdown pool's idle stop costs a write: ``python -m bench.markdown_cold_start``.

Decision 0052 stops the pool (its workers and their forkserver) after
``parse_pool.IDLE_SECONDS`` without a parse; the next write of more than
``INLINE_BYTES`` starts it again in a thread and waits for it. This runs the
app in this process (httpx's ASGI transport, SQLite in a temp directory)
and, ``--rounds`` times, stops the pool as the idle timer would, then times
one ordinary 1 KiB memo create (cold) and a second one (warm), with the
event loop's worst lateness during the cold one.

The pool's workers import the main module again (multiprocessing's
preparation), as the server's import ``app.cli``: so this module imports
the app only inside its functions, or every cold start would include
importing the whole app.
"""

from __future__ import annotations

import argparse
import asyncio
import pathlib
import statistics
import tempfile
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from app.settings import Settings


async def rounds(settings: Settings, n: int) -> dict[str, list[float]]:
    import httpx

    from app.memos import parse_pool
    from app.server import create_app
    from bench.markdown_loop import ORDINARY, _lifespan
    from tests.support import LagProbe

    app = create_app(settings)
    task, inbox = await _lifespan(app)
    out: dict[str, list[float]] = {"cold": [], "warm": [], "lag": []}
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://bench", timeout=60) as http:
        await http.post("/api/v1/users", json={"username": "u", "password": "password-1"})
        r = await http.post(
            "/api/v1/auth/signin",
            json={"passwordCredentials": {"username": "u", "password": "password-1"}},
        )
        auth = {"Authorization": f"Bearer {r.json()['accessToken']}"}
        for i in range(n):
            await asyncio.to_thread(parse_pool.shutdown)  # as the idle timer does
            await asyncio.sleep(0.5)
            probe = LagProbe()
            probing = asyncio.create_task(probe.run())
            for kind in ("cold", "warm"):
                body: dict[str, Any] = {"content": ORDINARY + f"{kind} {i}"}
                t0 = time.perf_counter()
                r = await http.post("/api/v1/memos", json=body, headers=auth)
                out[kind].append((time.perf_counter() - t0) * 1000)
                assert r.status_code == 200, r.text[:200]
                if kind == "cold":
                    probe.stop()
                    await probing
                    out["lag"].append(probe.worst * 1000)
    await inbox.put({"type": "lifespan.shutdown"})
    await task
    return out


async def main(n: int) -> None:
    from bench.as_users import uptime
    from bench.databases import fresh_database
    from bench.harness import bench_settings

    print("load before:", uptime())
    with tempfile.TemporaryDirectory(prefix="bench-md-cold-") as tmp:
        async with fresh_database("sqlite", pathlib.Path(tmp)) as db:
            settings = bench_settings(
                db.url,
                pathlib.Path(tmp) / "data",
                password_hasher="cheap",
                secret="bench",
                migrate_on_start=False,
            )
            out = await rounds(settings, n)
    for kind, unit in (("cold", "create ms"), ("warm", "create ms"), ("lag", "loop lag ms")):
        xs = sorted(out[kind])
        print(
            f"{kind:<5} {unit}: median {statistics.median(xs):.0f}, "
            f"min {xs[0]:.0f}, max {xs[-1]:.0f} ({len(xs)} rounds)"
        )
    print("load after:", uptime())


if __name__ == "__main__":  # the worker processes import the main module again: guard it
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    asyncio.run(main(parser.parse_args().rounds))
