"""Benchmark: a restricted key's first page against its holder's, and resolving access.

Run: ``python -m bench.access_clamp --dialect sqlite --memos 1000000``
(``--memos 100000`` for a quick run; ``--dialect postgresql`` too).

The corpus of ``bench/corpus.py`` is seeded, then 90% of its memos are moved
into 100 spaces (``space_id = id % 100 + 1``) at 40 tree paths
(``t{id/100 % 8}.s{id/800 % 5}``, so every space has every path). The
measured user (the corpus' median writer) is an ACTIVE member of all 100
spaces with 50 grants (READ at ``t{s%8}`` and WRITE at ``t{(s+1)%8}.s{s%5}``
in spaces 1..25); its key declares spaces 1..5 with
one tree ceiling each (READ at ``t{s%8}``), 5 ceilings in all.

Measured, in SQL through SQLAlchemy (the list statement of
``app.memos.listing.list_memos``, as ``bench/list_memos.py``'s "ours in
SQL"): the first page (50) through the key and through the holder's
session; resolving effective access per request: the scope query
(``load_scope``) for the session and the key, and the pure twin the access
endpoint uses (``load_member_grants`` + ``effective_grants``).

Targets: key page p95 within 1.5x the session page; resolution under 2 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from app.access.audience import AccessMode
from app.access.caller import Caller, Credential
from app.access.scope import effective_grants, load_member_grants, load_scope, space_ceiling
from app.db.engine import create_engine
from app.db.schema import memo, space, space_grant, space_member
from app.memos.listing import ListQuery, list_memos
from bench.corpus import CorpusSpec
from bench.databases import BenchDatabase, fresh_database
from bench.harness import add_options
from bench.list_memos import seed
from bench.timing import Stats, markdown_table, measure, ratio, step

SPACES = 100
GRANTED_SPACES = 25  # x 2 grants = 50
DECLARED = 5
PAGE_SIZE = 50
SECRET = "bench"
RESULTS = Path(__file__).resolve().parent / "results"
TARGET_RATIO = 1.5
TARGET_RESOLVE_MS = 2.0


@dataclass(frozen=True, slots=True)
class Options:
    dialect: str
    memos: int
    users: int
    requests: int
    warmup: int
    seed: int
    keep: bool


def holder_grants(user_id: int) -> list[dict[str, Any]]:
    out = []
    for s in range(1, GRANTED_SPACES + 1):
        for path, level in ((f"t{s % 8}", 1), (f"t{(s + 1) % 8}.s{s % 5}", 2)):
            out.append(
                {
                    "space_id": s,
                    "user_id": user_id,
                    "group_id": None,
                    "path": path,
                    "level": level,
                    "created_by": user_id,
                    "created_ts": 0,
                }
            )
    return out


def key_restriction() -> dict[str, Any]:
    return {
        "scope": "READ",
        "personal": "NONE",
        "spaces": [
            {
                "space": f"spaces/s{s}",
                "admin": False,
                "trees": [{"path": f"t{s % 8}", "level": "READ"}],
            }
            for s in range(1, DECLARED + 1)
        ],
    }


async def place_in_spaces(engine: AsyncEngine, user_id: int) -> dict[str, int]:
    """Spaces, the holder's seats and grants, and 90% of memos moved into the spaces."""
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
                    "user_id": user_id,
                    "role": "USER",
                    "state": "ACTIVE",
                    "created_ts": 0,
                    "updated_ts": 0,
                }
                for s in range(1, SPACES + 1)
            ],
        )
        await conn.execute(space_grant.insert(), holder_grants(user_id))
        # The path varies within each space (id / SPACES), not with the space.
        tree = (
            sa.literal("t", sa.String)
            .concat(sa.cast((memo.c.id / SPACES) % 8, sa.String))
            .concat(".s")
            .concat(sa.cast((memo.c.id / (SPACES * 8)) % 5, sa.String))
        )
        moved = await conn.execute(
            memo.update()
            .where(memo.c.id % 10 != 0)
            .values(visibility="SPACE", space_id=memo.c.id % SPACES + 1, tree=tree)
        )
    async with engine.connect() as conn:
        # No ANALYZE here: the product never runs one after such a change (issue 15).
        visible = {}
        for label, caller in callers(user_id).items():
            rows, _ = await list_memos(
                conn,
                ListQuery(caller=caller, mode=AccessMode.PRIVATE, page_size=PAGE_SIZE),
                SECRET,
            )
            visible[label] = len(rows)
    return {"moved": int(moved.rowcount or 0), **{f"page_rows_{k}": v for k, v in visible.items()}}


def callers(user_id: int) -> dict[str, Caller]:
    return {
        "session": Caller(user_id, f"u{user_id}", "USER", Credential.ACCESS_TOKEN, session_id=1),
        "key": Caller(
            user_id,
            f"u{user_id}",
            "USER",
            Credential.PAT,
            pat_id=1,
            restriction=key_restriction(),
        ),
    }


async def measure_all(db: BenchDatabase, opts: Options, user_id: int) -> dict[str, Stats]:
    engine = create_engine(db.url)
    out: dict[str, Stats] = {}
    try:
        setup = await place_in_spaces(engine, user_id)
        step(f"placed: {setup}")
        for label, caller in callers(user_id).items():
            query = ListQuery(caller=caller, mode=AccessMode.PRIVATE, page_size=PAGE_SIZE)

            async def page(q: ListQuery = query) -> None:
                async with engine.connect() as conn:
                    await list_memos(conn, q, SECRET)

            kw = {"requests": opts.requests, "warmup": opts.warmup}
            out[f"first page, {label}"] = await measure(page, label=f"page {label}", **kw)
            # A request holds one connection for its transaction: resolving
            # access costs the query on it, not a connection checkout.
            async with engine.connect() as held:

                async def resolve(c: Caller = caller, conn: Any = held) -> None:
                    await load_scope(conn, c)

                async def twin(c: Caller = caller, conn: Any = held) -> None:
                    member = (await load_member_grants(conn, c.user_id, 1)).get(1, [])
                    effective_grants(member, space_ceiling(c, "s1"))

                out[f"resolve scope (SQL), {label}"] = await measure(
                    resolve, label=f"scope {label}", **kw
                )
                out[f"access endpoint twin, {label}"] = await measure(
                    twin, label=f"twin {label}", **kw
                )
        out["_setup"] = setup  # type: ignore[assignment]
    finally:
        await engine.dispose()
    return out


async def run(opts: Options) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix=f"daybook-bench-access-{opts.dialect}-"))
    try:
        async with fresh_database(opts.dialect, workdir) as db:
            step(f"{db.dialect} {db.server_version} at {workdir}")
            report = await seed(db, CorpusSpec(memos=opts.memos, users=opts.users, seed=opts.seed))
            results = await measure_all(db, opts, report.measured_user_id)
            setup = results.pop("_setup")
            return {
                "benchmark": "access_clamp",
                "dialect": db.dialect,
                "server_version": db.server_version,
                "memos": opts.memos,
                "spaces": SPACES,
                "holder_grants": GRANTED_SPACES * 2,
                "key_ceilings": DECLARED,
                "machine": {"python": sys.version.split()[0], "platform": platform.platform()},
                "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
                "setup": setup,
                "results": {k: v.as_dict() for k, v in results.items()},
            }
    finally:
        if not opts.keep:
            shutil.rmtree(workdir, ignore_errors=True)


def render(doc: dict[str, Any]) -> str:
    rows = [
        [name, f"{r['p50_ms']:.2f} ms", f"{r['p95_ms']:.2f} ms", str(r["n"])]
        for name, r in doc["results"].items()
    ]
    return markdown_table(["measure", "p50", "p95", "n"], rows)


def verdict(doc: dict[str, Any]) -> list[str]:
    r = doc["results"]
    key, session = r["first page, key"], r["first page, session"]
    resolve = max(
        r["resolve scope (SQL), key"]["p95_ms"], r["resolve scope (SQL), session"]["p95_ms"]
    )
    return [
        f"key page / session page (p95): {ratio(key['p95_ms'], session['p95_ms'])}"
        f" (target <= {TARGET_RATIO}x): "
        + ("met" if key["p95_ms"] <= TARGET_RATIO * session["p95_ms"] else "MISSED"),
        f"resolution p95: {resolve:.2f} ms (target < {TARGET_RESOLVE_MS} ms): "
        + ("met" if resolve < TARGET_RESOLVE_MS else "MISSED"),
    ]


def parse_args(argv: list[str] | None) -> Options:
    p = argparse.ArgumentParser(prog="python -m bench.access_clamp", description=__doc__)
    add_options(p, memos=1_000_000, users=1_000, requests=200, warmup=20, seed=42, keep=True)
    a = p.parse_args(argv)
    return Options(a.dialect, a.memos, a.users, a.requests, a.warmup, a.seed, a.keep)


def main(argv: list[str] | None = None) -> None:
    opts = parse_args(argv)
    doc = asyncio.run(run(opts))
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"access_clamp-{doc['dialect']}-{doc['memos']}.json"
    path.write_text(json.dumps(doc, indent=2) + "\n")
    print(render(doc))
    print("\n".join(verdict(doc)))
    print(f"results: {path}")


if __name__ == "__main__":
    main()
