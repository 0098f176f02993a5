"""Benchmark (issue 4): list pages for a user who sees 1% of the memos and one who sees 90%.

Run: ``python -m bench.audience_pages --dialect sqlite --memos 1000000``
(``--dialect postgresql`` too; ``--memos 100000`` for a quick run).

The corpus of ``bench/corpus.py`` (``--users`` accounts, Zipf writers) is
seeded, then every memo's visibility is rewritten by id so that what each of
the two measured users can see is controlled:

- the **narrow** user (the corpus' median writer, who holds the seeded
  session) keeps its own memos PRIVATE; it is an ACTIVE member of space 100
  only (OWNER at the root);
- the **wide** user (the next user id) is an ACTIVE member of all 100 spaces
  with OWNER at the root in each (one ``space_grant`` row per space);
- everybody else's memos: ``id % 200 == 0`` PROTECTED (0.5%, both see them),
  ``id % 200 == 1`` SPACE in space 100 (0.5%, both), ``id % 10 == 9`` PRIVATE
  (10%, neither), the rest SPACE in spaces 1..99 (89%, the wide user only),
  at 40 tree paths ``t{id/100 % 8}.s{id/800 % 5}``.

So the narrow user sees ~1% (the 0.5% + 0.5% + its own) and the wide one
~90%, spread evenly over time, which is the hard case for the narrow user: a
timeline index walk meets ~100 invisible rows per visible one.

Measured over HTTP (``GET /api/v1/memos?pageSize=50`` in-process through the
whole Litestar stack, as ``bench/list_memos.py``), per user: the first page
and a deep page (reached by following ``nextPageToken`` ``--deep`` times, then
requested repeatedly). The list statement's plan is printed for each:
``EXPLAIN QUERY PLAN`` on SQLite, ``EXPLAIN (ANALYZE, BUFFERS, COSTS OFF)`` on
PostgreSQL. Target: p95 under 30 ms on SQLite.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from litestar.testing import AsyncTestClient
from sqlalchemy.ext.asyncio import AsyncEngine

from app.access.audience import AccessMode, audience_predicate
from app.access.caller import Caller, Credential
from app.auth.secrets import SESSION_PREFIX, digest, new_secret
from app.db.engine import create_engine
from app.db.schema import auth_session, memo, space, space_grant, space_member
from app.memos.listing import ListQuery, list_memos
from bench.corpus import DAY, CorpusSpec, SeedReport
from bench.databases import BenchDatabase, fresh_database
from bench.harness import add_options, bench_settings, in_process
from bench.list_memos import http_call, seed
from bench.timing import Stats, fmt_ms, markdown_table, measure, step

SPACES = 100
SMALL_SPACE = SPACES  # the narrow user's only space
PAGE_SIZE = 50
SECRET = "bench"
OWNER = 3
RESULTS = Path(__file__).resolve().parent / "results"
TARGET_P95_MS = 30.0


@dataclass(frozen=True, slots=True)
class Options:
    dialect: str
    memos: int
    users: int
    requests: int
    warmup: int
    deep: int
    seed: int
    keep: bool


@dataclass(frozen=True, slots=True)
class Audience:
    label: str  # "1%" / "90%"
    user_id: int
    token: str
    spaces: tuple[int, ...]

    @property
    def caller(self) -> Caller:
        return Caller(
            self.user_id,
            f"user{self.user_id:04d}",
            "USER",
            Credential.ACCESS_TOKEN,
            session_id=1,
        )

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


# --- arranging the audiences ------------------------------------------------------------------


async def arrange(engine: AsyncEngine, narrow: int, wide: int, now: int) -> dict[str, Any]:
    """Spaces, seats, root OWNER grants, a session for the wide user, visibilities by id."""
    started = time.perf_counter()
    seats = [(narrow, SMALL_SPACE)] + [(wide, s) for s in range(1, SPACES + 1)]
    wide_token = new_secret(SESSION_PREFIX)
    m = memo.c
    tree_small = sa.literal("t", sa.String).concat(sa.cast((m.id // 200) % 8, sa.String))
    tree_big = (
        sa.literal("t", sa.String)
        .concat(sa.cast((m.id // 100) % 8, sa.String))
        .concat(".s")
        .concat(sa.cast((m.id // 800) % 5, sa.String))
    )
    personal = (m.creator_id == narrow) | (m.id % 200 == 0) | (m.id % 10 == 9)
    async with engine.begin() as conn:
        await conn.execute(
            space.insert(),
            [
                {
                    "id": s,
                    "uid": f"s{s}",
                    "title": f"S{s}",
                    "creator_id": 1,
                    "created_ts": 0,
                    "updated_ts": 0,
                }
                for s in range(1, SPACES + 1)
            ],
        )
        await conn.execute(
            space_member.insert(),
            [
                {
                    "space_id": s,
                    "user_id": u,
                    "role": "USER",
                    "state": "ACTIVE",
                    "created_ts": 0,
                    "updated_ts": 0,
                }
                for u, s in seats
            ],
        )
        await conn.execute(
            space_grant.insert(),
            [
                {
                    "space_id": s,
                    "user_id": u,
                    "group_id": None,
                    "path": "",
                    "level": OWNER,
                    "created_by": 1,
                    "created_ts": 0,
                }
                for u, s in seats
            ],
        )
        await conn.execute(
            auth_session.insert().values(
                id=2,
                user_id=wide,
                token_hash=digest(wide_token),
                csrf_token="bench-csrf",
                created_ts=now,
                expires_ts=now + 30 * DAY,
                last_seen_ts=now,
            )
        )
        await conn.execute(
            memo.update().values(
                visibility=sa.case(
                    (m.creator_id == narrow, "PRIVATE"),
                    (m.id % 200 == 0, "PROTECTED"),
                    (m.id % 10 == 9, "PRIVATE"),
                    else_="SPACE",
                ),
                space_id=sa.case(
                    (personal, sa.null()),
                    (m.id % 200 == 1, SMALL_SPACE),
                    else_=m.id % (SPACES - 1) + 1,
                ),
                tree=sa.case(
                    (personal, sa.null()),
                    (m.id % 200 == 1, tree_small),
                    else_=tree_big,
                ),
            )
        )
    # No ANALYZE here: the product never runs one after such a change (issue 15).
    arrange_s = time.perf_counter() - started
    step(f"arranged audiences in {arrange_s:.1f}s")
    return {"arrange_s": round(arrange_s, 2), "wide_token": wide_token}


async def visible_counts(engine: AsyncEngine, audiences: list[Audience]) -> dict[str, int]:
    """How many list-eligible memos (top-level, NORMAL) each user can see, and the total."""
    out: dict[str, int] = {}
    base = [memo.c.parent_id.is_(None), memo.c.state == "NORMAL"]
    async with engine.connect() as conn:
        total = sa.select(sa.func.count()).select_from(memo).where(*base)
        out["total"] = int((await conn.execute(total)).scalar_one())
        for a in audiences:
            stmt = (
                sa.select(sa.func.count())
                .select_from(memo)
                .where(*base, audience_predicate(a.caller, AccessMode.PRIVATE))
            )
            out[a.label] = int((await conn.execute(stmt)).scalar_one())
    return out


# --- pages and plans ----------------------------------------------------------------------------


async def walk(client: AsyncTestClient[Any], a: Audience, pages: int) -> tuple[str, int]:
    """Follow ``nextPageToken`` up to ``pages`` times; the token and page number reached."""
    token = ""
    for n in range(pages):
        params: dict[str, Any] = {"pageSize": PAGE_SIZE}
        if token:
            params["pageToken"] = token
        response = await client.get("/api/v1/memos", params=params, headers=a.headers)
        response.raise_for_status()
        following = response.json()["nextPageToken"]
        if not following:
            step(f"{a.label} user: only {n + 1} pages; deep page is page {n + 1}")
            return token, n + 1
        token = following
    return token, pages + 1


def sql_call(engine: AsyncEngine, caller: Caller, token: str | None) -> Any:
    """The list statement alone (``list_memos``), no HTTP and no ``present``."""
    query = ListQuery(caller=caller, mode=AccessMode.PRIVATE, page_size=PAGE_SIZE, page_token=token)

    async def call() -> None:
        async with engine.connect() as conn:
            await list_memos(conn, query, SECRET)

    return call


async def plan(engine: AsyncEngine, caller: Caller, token: str | None) -> str:
    """The list statement of ``list_memos`` for this caller and page, explained."""
    captured: list[tuple[str, Any]] = []

    def capture(_c: Any, _cur: Any, statement: str, parameters: Any, *_: Any) -> None:
        if "ORDER BY memo.created_ts" in statement:
            captured.append((statement, parameters))

    query = ListQuery(
        caller=caller, mode=AccessMode.PRIVATE, page_size=PAGE_SIZE, page_token=token or None
    )
    sa.event.listen(engine.sync_engine, "before_cursor_execute", capture)
    try:
        async with engine.connect() as conn:
            await list_memos(conn, query, SECRET)
    finally:
        sa.event.remove(engine.sync_engine, "before_cursor_execute", capture)
    statement, parameters = captured[0]
    prefix = (
        "EXPLAIN QUERY PLAN "
        if engine.dialect.name == "sqlite"
        else "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) "
    )
    async with engine.connect() as conn:
        rows = (await conn.exec_driver_sql(prefix + statement, parameters)).all()
    return "\n".join(" | ".join(str(v) for v in row) for row in rows)


async def statement_text(engine: AsyncEngine, caller: Caller) -> str:
    query = ListQuery(caller=caller, mode=AccessMode.PRIVATE, page_size=PAGE_SIZE)
    captured: list[str] = []

    def capture(_c: Any, _cur: Any, statement: str, *_: Any) -> None:
        if "ORDER BY memo.created_ts" in statement:
            captured.append(statement)

    sa.event.listen(engine.sync_engine, "before_cursor_execute", capture)
    try:
        async with engine.connect() as conn:
            await list_memos(conn, query, SECRET)
    finally:
        sa.event.remove(engine.sync_engine, "before_cursor_execute", capture)
    return captured[0]


# --- the run ------------------------------------------------------------------------------------


async def run(opts: Options) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix=f"daybook-bench-audience-{opts.dialect}-"))
    try:
        async with fresh_database(opts.dialect, workdir) as db:
            step(f"{db.dialect} {db.server_version} at {workdir}")
            spec = CorpusSpec(memos=opts.memos, users=opts.users, seed=opts.seed)
            report = await seed(db, spec)
            return await measure_all(db, opts, spec, report, workdir)
    finally:
        if not opts.keep:
            shutil.rmtree(workdir, ignore_errors=True)


async def measure_all(
    db: BenchDatabase, opts: Options, spec: CorpusSpec, report: SeedReport, workdir: Path
) -> dict[str, Any]:
    narrow, wide = report.measured_user_id, report.measured_user_id + 1
    engine = create_engine(db.url)
    results: dict[str, Any] = {}
    try:
        setup = await arrange(engine, narrow, wide, spec.now)
        audiences = [
            Audience("1%", narrow, report.token, (SMALL_SPACE,)),
            Audience("90%", wide, setup.pop("wide_token"), tuple(range(1, SPACES + 1))),
        ]
        counts = await visible_counts(engine, audiences)
        step(f"visible: {counts}")
        settings = bench_settings(db.url, workdir / "data", migrate_on_start=False, secret=SECRET)
        n, w = opts.requests, opts.warmup
        async with in_process(settings, client_timeout=600, quiet=True) as client:
            for a in audiences:
                token, page_no = await walk(client, a, opts.deep)
                shapes = {"first page": "", f"page {page_no}": token}
                for shape, tok in shapes.items():
                    label = f"{a.label} user, {shape}"
                    stats = await measure(
                        http_call(client, a.headers, tok or None),
                        label=label,
                        requests=n,
                        warmup=w,
                    )
                    sql = await measure(
                        sql_call(engine, a.caller, tok or None),
                        label=f"{label} (SQL)",
                        requests=n,
                        warmup=w,
                    )
                    results[label] = {
                        "user": a.label,
                        "user_id": a.user_id,
                        "shape": shape,
                        "page": 1 if not tok else page_no,
                        "http": stats.as_dict(),
                        "sql": sql.as_dict(),
                        "plan": await plan(engine, a.caller, tok),
                    }
        statement = await statement_text(engine, audiences[0].caller)
    finally:
        await engine.dispose()
    return {
        "benchmark": "audience_pages",
        "dialect": db.dialect,
        "server_version": db.server_version,
        "memos": opts.memos,
        "users": opts.users,
        "spaces": SPACES,
        "page_size": PAGE_SIZE,
        "requests": n,
        "warmup": w,
        "deep_walk": opts.deep,
        "seed": opts.seed,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        "seeding": {**report.as_dict(), **setup},
        "visible": counts,
        "visible_fraction": {
            a.label: round(counts[a.label] / max(counts["total"], 1), 4) for a in audiences
        },
        "list_statement": statement,
        "results": results,
        "target_p95_ms": TARGET_P95_MS,
    }


# --- output -------------------------------------------------------------------------------------


def render(doc: dict[str, Any]) -> str:
    rows = []
    for label, r in doc["results"].items():
        s = Stats(**r["http"])
        frac = doc["visible_fraction"][r["user"]]
        ok = "yes" if s.p95_ms < TARGET_P95_MS else "NO"
        rows.append(
            [
                label,
                f"{frac:.2%} ({doc['visible'][r['user']]:,})",
                fmt_ms(s.p50_ms),
                fmt_ms(s.p95_ms),
                fmt_ms(s.max_ms),
                str(s.n),
                ok,
                Stats(**r["sql"]).cell(),
            ]
        )
    title = (
        f"**{doc['dialect']} {doc['server_version']}, {doc['memos']:,} memos, "
        f"{doc['users']:,} users, {doc['spaces']} spaces** (HTTP, pageSize {doc['page_size']}, "
        f"{doc['requests']} timed requests after {doc['warmup']} warm-up; "
        f"load average at end {doc['load_average_at_end']})"
    )
    headers = [
        "user, page",
        "sees",
        "p50 (HTTP)",
        "p95 (HTTP)",
        "max (HTTP)",
        "n",
        f"p95 < {TARGET_P95_MS:.0f} ms",
        "SQL only p50 / p95",
    ]
    return f"{title}\n\n{markdown_table(headers, rows)}"


def parse_args(argv: list[str] | None) -> Options:
    p = argparse.ArgumentParser(
        prog="python -m bench.audience_pages",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_options(p, memos=1_000_000, users=1_000, requests=200, warmup=20, seed=42, keep=True)
    p.add_argument("--deep", type=int, default=50, help="nextPageToken hops to the deep page")
    a = p.parse_args(argv)
    return Options(a.dialect, a.memos, a.users, a.requests, a.warmup, a.deep, a.seed, a.keep)


def main(argv: list[str] | None = None) -> None:
    opts = parse_args(argv)
    doc = asyncio.run(run(opts))
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"audience_pages-{doc['dialect']}-{doc['memos']}.json"
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    print(f"\nlist statement (1% user, first page):\n{doc['list_statement']}\n")
    for label, r in doc["results"].items():
        print(f"### plan: {label}\n{r['plan']}\n")
    print(render(doc))
    print(f"\nvisible: {doc['visible']}")
    print(f"results: {path}")


if __name__ == "__main__":
    main()
