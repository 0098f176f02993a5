"""Where a list request's time goes: by statement and by Python frame (issue 15).

    .venv/bin/python -m bench.profile_list --memos 5000 --requests 200

In process (the app through Litestar's test client, no sockets), SQLite, a
fresh database seeded through ``memos:batchCreate``, no ``ANALYZE``. Prints
the wall time per request, the time inside each statement (between
``before_cursor_execute`` and ``after_cursor_execute``, so it includes the
thread hop of aiosqlite), and the top Python frames by own time.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pathlib
import pstats
import tempfile
import time
from collections import defaultdict
from typing import Any

import sqlalchemy as sa
from litestar.testing import AsyncTestClient

from bench.harness import add_options
from bench.load import _content
from bench.timing import percentile


async def run(args: argparse.Namespace) -> None:
    import random

    from app.db.engine import create_engine
    from app.db.migrate import upgrade
    from app.server import create_app
    from app.settings import Settings

    with tempfile.TemporaryDirectory(prefix="bench-profile-") as tmp:
        url = f"sqlite:///{pathlib.Path(tmp) / 'daybook.db'}"
        engine = create_engine(url)
        await upgrade(engine)
        await engine.dispose()
        # The page cache off: profile a computed answer, not a kept one (decision 0048).
        settings = Settings(
            data_dir=pathlib.Path(tmp) / "data",
            database_url=url,
            log_format="json",
            page_cache_bytes=0,
        )
        app = create_app(settings)
        rng = random.Random(15)
        async with AsyncTestClient(app=app) as client:
            r = await client.post("/api/v1/users", json={"username": "u", "password": "pw-123456"})
            r.raise_for_status()
            r = await client.post(
                "/api/v1/auth/signin",
                json={"passwordCredentials": {"username": "u", "password": "pw-123456"}},
            )
            r.raise_for_status()
            client.cookies.clear()
            headers = {"Authorization": f"Bearer {r.json()['accessToken']}"}
            for start in range(0, args.memos, 1000):
                body = {
                    "memos": [
                        {"content": _content(rng, start + i), "visibility": "PRIVATE"}
                        for i in range(min(1000, args.memos - start))
                    ]
                }
                (
                    await client.post("/api/v1/memos:batchCreate", json=body, headers=headers)
                ).raise_for_status()
            spent: dict[str, list[float]] = defaultdict(list)
            started: dict[int, float] = {}

            def before(_c: Any, cursor: Any, *_: Any) -> None:
                started[id(cursor)] = time.perf_counter()

            def after(_c: Any, cursor: Any, statement: str, *_: Any) -> None:
                key = " ".join(statement.split())[:70]
                spent[key].append(time.perf_counter() - started.pop(id(cursor), 0.0))

            sync = app.state.engine.sync_engine
            sa.event.listen(sync, "before_cursor_execute", before)
            sa.event.listen(sync, "after_cursor_execute", after)
            for _ in range(20):  # warm
                await client.get("/api/v1/memos", params={"pageSize": 50}, headers=headers)
            spent.clear()
            walls = []
            profile = cProfile.Profile()
            # The test client runs the app on its portal's thread: profile that one.
            client.blocking_portal.call(profile.enable)
            for _ in range(args.requests):
                t0 = time.perf_counter()
                r = await client.get("/api/v1/memos", params={"pageSize": 50}, headers=headers)
                walls.append(time.perf_counter() - t0)
                r.raise_for_status()
            client.blocking_portal.call(profile.disable)
    walls.sort()
    n = args.requests
    print(
        f"list p1 in process, {n} requests: p50 {1000 * percentile(walls, 50):.1f} ms,"
        f" p95 {1000 * percentile(walls, 95):.1f} ms"
    )
    print("time inside statements, per request (ms):")
    for key, values in sorted(spent.items(), key=lambda kv: -sum(kv[1])):
        print(f"  {1000 * sum(values) / n:7.2f}  x{len(values) / n:.0f}  {key}")
    total_sql = sum(sum(v) for v in spent.values()) / n
    print(f"  {1000 * total_sql:7.2f}  total SQL; wall mean {1000 * sum(walls) / n:.1f} ms")
    stats = pstats.Stats(profile)
    print("by frame, cumulative ms per request (the app's thread):")
    for label, ms in frames(stats, n):
        print(f"  {ms:7.2f}  {label}")
    stats.sort_stats("tottime").print_stats(25)


# Frames worth following per request: (label, file suffix, function name).
FRAMES = (
    ("SQLAlchemy cache key (_generate_cache_key)", "sql/cache_key.py", "_generate_cache_key"),
    ("SQLAlchemy compile (first use of a shape)", "sql/compiler.py", "__init__"),
    ("AsyncConnection.execute (all statements)", "ext/asyncio/engine.py", "execute"),
    ("caller (resolve_bearer)", "app/auth/middleware.py", "resolve_bearer"),
    ("page (listing.list_memos)", "app/memos/listing.py", "list_memos"),
    ("page statement (_page_statement)", "app/memos/listing.py", "_page_statement"),
    ("present (whole)", "app/memos/present.py", "present"),
    ("related statement built (related_statement)", "app/memos/present.py", "related_statement"),
    ("response encoding (encode_json)", "litestar/serialization/msgspec_hooks.py", "encode_json"),
)


def frames(stats: pstats.Stats, n: int) -> list[tuple[str, float]]:
    """Cumulative time per request of the frames above (0 when never called)."""
    table: Any = stats.stats  # type: ignore[attr-defined]
    out = []
    for label, suffix, name in FRAMES:
        total = sum(
            row[3]
            for (path, _line, func), row in table.items()
            if func == name and path.endswith(suffix)
        )
        out.append((label, 1000 * total / n))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_options(parser, dialect=False, memos=5000, requests=200)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
