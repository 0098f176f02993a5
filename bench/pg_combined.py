"""Filtered first pages against the unfiltered one on PostgreSQL (issue 15, decision 0045).

    .venv/bin/python -m bench.pg_combined --memos 100000 --rounds 40 --autovacuum --settle 70

The memos of ``bench/as_users.py`` (same content generator, creators per
batch of 1,000 and visibilities, two users), but written straight into
``memo`` and ``memo_tag`` (tags as the Markdown parser derives them from
``#t<i>``): seeding through ``memos:batchCreate`` runs at ~80 memos/s on the
2-core machine, this at thousands. The derived columns the list does not
read stay at their defaults. With ``--autovacuum`` autovacuum stays on and
``--settle`` seconds pass before measuring, so the planner has what a real
install has (autovacuum's ANALYZE and VACUUM); without it, autovacuum is off
on both tables and the first phase has no statistics at all. Then a phase
after ``ANALYZE``.

The timed call is what ``GET /api/v1/memos`` does below HTTP
(``memo_filter_clause``, then ``list_memos`` on one connection), round-robin
over the cases so load slows all alike; every case runs more than five
times on pooled connections, so PostgreSQL's plan cache may settle on a
generic plan, as in a server. The ``(bound)`` cases render the same filters
with their needles as ``$n`` parameters, as before decision 0045, in the
same run (and must return the same rows). With ``--explain`` each case's
list statement, as captured from the driver, is prepared in SQL and run as
``EXPLAIN (ANALYZE, BUFFERS) EXECUTE`` under ``plan_cache_mode =
force_generic_plan`` (the plan a prepared statement keeps after five runs),
and its plan is printed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import pathlib
import random
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.sql.elements import ColumnElement

from app.access.audience import AccessMode
from app.access.caller import reader_of
from app.db.engine import create_engine
from app.db.schema import memo, memo_tag, user_account
from app.filter.render import Renderer
from app.memos.listing import ListQuery, list_memos
from app.memos.query_filter import memo_filter_clause
from bench.as_users import FILTERS
from bench.databases import fresh_database
from bench.load import _content
from bench.timing import percentile

SECRET = "bench-secret"
CASES: dict[str, str | None] = {"list p1": None} | {f"filter {k}": v for k, v in FILTERS.items()}
CASES["filter work tag"] = '"t13" in tags'
BOUND = " (bound)"  # the same filter with its needles sent as $n parameters, as before 0045
for _name in ("filter tag", "filter contains", "filter combined"):
    CASES[_name + BOUND] = CASES[_name]


def _bound_needle(_self: Renderer, value: str) -> ColumnElement[str]:
    return sa.literal(value, sa.Text)


@contextlib.contextmanager
def rendering(name: str) -> Iterator[None]:
    """The renderer of decision 0045, or (for a ``(bound)`` case) the one before it."""
    if not name.endswith(BOUND):
        yield
        return
    inlined = Renderer._needle
    Renderer._needle = _bound_needle  # type: ignore[method-assign]
    try:
        yield
    finally:
        Renderer._needle = inlined  # type: ignore[method-assign]


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


async def seed(engine: AsyncEngine, memos: int, autovacuum: bool) -> tuple[int, int]:
    """Two users and ``memos`` memos as bench/as_users.py writes them; (holder id, other id)."""
    async with engine.begin() as conn:
        ids = []
        for name in ("holder", "other"):
            row = {
                "username": name,
                "role": "ADMIN" if name == "holder" else "USER",
                "state": "NORMAL",
                "password_hash": "x",
                "created_ts": 0,
                "updated_ts": 0,
            }
            present = {c.name for c in user_account.c}
            row = {k: v for k, v in row.items() if k in present}
            ids.append(
                (
                    await conn.execute(sa.insert(user_account).returning(user_account.c.id), row)
                ).scalar_one()
            )
        for table in ("memo", "memo_tag") if not autovacuum else ():
            await conn.exec_driver_sql(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")
    holder, other = ids
    rng = random.Random(15)
    done = 0
    started = time.perf_counter()
    base_ts = int(time.time()) - memos
    while done < memos:
        n = min(1000, memos - done)
        creator = holder if rng.random() < 0.75 else other
        rows = []
        contents = []
        for i in range(n):
            content = _content(rng, done + i)
            visibility = rng.choice(["PRIVATE", "PROTECTED", "PUBLIC"])
            ts = base_ts + done + i
            rows.append(
                {
                    "uid": str(uuid.UUID(int=rng.getrandbits(128))),
                    "creator_id": creator,
                    "content": content,
                    "visibility": visibility,
                    "state": "NORMAL",
                    "created_ts": ts,
                    "updated_ts": ts,
                    "origin": {"kind": "session"},
                    "snippet": content[:120],
                }
            )
            contents.append(content)
        async with engine.begin() as conn:
            new = (await conn.execute(sa.insert(memo).returning(memo.c.id), rows)).scalars().all()
            tags = []
            for memo_id, content in zip(new, contents, strict=True):
                seen: list[str] = []
                for word in content.split():
                    if word.startswith("#") and word[1:] not in seen:
                        seen.append(word[1:])
                tags.extend(
                    {"memo_id": memo_id, "tag": t, "position": p} for p, t in enumerate(seen)
                )
            await conn.execute(memo_tag.insert(), tags)
        done += n
        if done % 20_000 == 0 or done == memos:
            rate = done / (time.perf_counter() - started)
            print(f"  seeded {done}/{memos} ({rate:.0f} memos/s)", flush=True)
    return holder, other


async def page(engine: AsyncEngine, holder: int, cel: str | None, name: str = "") -> list[Any]:
    now = int(time.time())
    async with engine.connect() as conn:
        with rendering(name):
            clause = await memo_filter_clause(conn, cel, now=now)
        q = ListQuery(
            caller=reader_of(holder, None),
            mode=AccessMode.PRIVATE,
            filter_text=cel,
            filter_clause=clause,
            page_size=50,
        )
        rows, _ = await list_memos(conn, q, SECRET)
        await conn.rollback()
        return rows


async def explain(engine: AsyncEngine, holder: int, name: str, cel: str | None) -> str:
    captured: list[tuple[str, Any]] = []

    def grab(_c: Any, _cur: Any, statement: str, params: Any, *_: Any) -> None:
        if "FROM memo" in statement and "LIMIT" in statement:
            captured.append((statement, params))

    sa.event.listen(engine.sync_engine, "before_cursor_execute", grab)
    try:
        await page(engine, holder, cel, name)
    finally:
        sa.event.remove(engine.sync_engine, "before_cursor_execute", grab)
    sql, params = captured[-1]
    async with engine.connect() as conn:
        raw = (await conn.get_raw_connection()).driver_connection
        # EXPLAIN with parameters plans with their values whatever plan_cache_mode
        # says; a statement prepared in SQL and run by EXECUTE gets the kept plan.
        await raw.execute("PREPARE listed AS " + sql)
        values = ", ".join(
            "NULL" if p is None else "'" + str(p).replace("'", "''") + "'" for p in params or ()
        )
        await raw.execute("SET plan_cache_mode = force_generic_plan")
        rows = await raw.fetch(f"EXPLAIN (ANALYZE, BUFFERS) EXECUTE listed({values})")
        await raw.execute("RESET plan_cache_mode")
        await raw.execute("DEALLOCATE listed")
        await conn.rollback()
    return " ".join(sql.split()) + "\n" + "\n".join(r[0] for r in rows)


async def measure(engine: AsyncEngine, holder: int, rounds: int, label: str) -> None:
    pages = {}
    for name, cel in CASES.items():  # warm, and check every case returns a page
        pages[name] = [row.id for row in await page(engine, holder, cel, name)]
        assert len(pages[name]) == 50, (name, len(pages[name]))
    for name in CASES:
        if name.endswith(BOUND):
            assert pages[name] == pages[name.removesuffix(BOUND)], name  # the same rows
    samples: dict[str, list[float]] = {name: [] for name in CASES}
    for _ in range(rounds):
        for name, cel in CASES.items():
            start = time.perf_counter()
            await page(engine, holder, cel, name)
            samples[name].append((time.perf_counter() - start) * 1000)
    base = sorted(samples["list p1"])
    b50, b95 = percentile(base, 50), percentile(base, 95)
    print(f"\n{label}: {rounds} rounds, interleaved ({uptime()})")
    print(f"{'case':<22}{'p50 ms':>9}{'p95 ms':>9}{'p50 ratio':>11}{'p95 ratio':>11}")
    for name, values in samples.items():
        ordered = sorted(values)
        p50, p95 = percentile(ordered, 50), percentile(ordered, 95)
        print(f"{name:<22}{p50:>9.1f}{p95:>9.1f}{p50 / b50:>11.2f}{p95 / b95:>11.2f}")


async def statistics(engine: AsyncEngine) -> None:
    """What the planner knows: analyse times and whether lower(content) has statistics."""
    async with engine.connect() as conn:
        for row in await conn.exec_driver_sql(
            "SELECT relname, n_live_tup, last_autoanalyze, last_autovacuum, last_analyze"
            " FROM pg_stat_user_tables WHERE relname IN ('memo', 'memo_tag')"
        ):
            print("  stats:", tuple(row))
        n = await conn.exec_driver_sql(
            "SELECT count(*) FROM pg_stats WHERE tablename = 'ix_memo_content_trgm'"
        )
        print("  lower(content) statistics rows:", n.scalar())
        await conn.rollback()


async def phase(engine: AsyncEngine, holder: int, args: argparse.Namespace, label: str) -> None:
    if args.explain:
        for name, cel in CASES.items():
            print(f"\n--- {label}: {name}: {cel}\n{await explain(engine, holder, name, cel)}")
    await measure(engine, holder, args.rounds, label)


async def run(args: argparse.Namespace) -> None:
    print("load before:", uptime())
    with tempfile.TemporaryDirectory(prefix="bench-pgc-") as tmp:
        async with fresh_database("postgresql", pathlib.Path(tmp)) as db:
            print("PostgreSQL", db.server_version)
            engine = create_engine(db.url)
            try:
                holder, _ = await seed(engine, args.memos, args.autovacuum)
                if args.settle:
                    await asyncio.sleep(args.settle)
                await statistics(engine)
                label = "as loaded, autovacuum on" if args.autovacuum else "fresh (no ANALYZE)"
                await phase(engine, holder, args, label)
                async with engine.connect() as conn:
                    conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
                    await conn.exec_driver_sql("ANALYZE")
                await phase(engine, holder, args, "after ANALYZE")
            finally:
                await engine.dispose()
    print("load after:", uptime())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memos", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--explain", action="store_true")
    parser.add_argument("--autovacuum", action="store_true", help="leave autovacuum on")
    parser.add_argument("--settle", type=float, default=0.0, help="seconds to wait after seeding")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
