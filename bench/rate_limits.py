"""The rate limiter's cost per request (decision 0029), on SQLite and PostgreSQL.

    .venv/bin/python -m bench.rate_limits --dialect sqlite --requests 2000

Times :meth:`app.limits.store.Limiter.admit` on a fresh database, one
caller at a time (the added latency of a request), for:

- ``read, exact``: the ``user`` budget with leases of 1 (one UPSERT per request);
- ``read, lease 10``: the default (one UPSERT per ten reads);
- ``write``: ``user`` (leased) plus ``write`` (exact, one UPSERT per request);
- a baseline in the same run: one ``SELECT 1`` round trip on a pooled connection
  (what any database call costs on the machine at that moment).

Every call is a new request of the same user in one window (the quota is
raised so none is refused). Results go to ``bench/results/rate_limits-<dialect>.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pathlib
import tempfile

import sqlalchemy as sa

from app.db.engine import create_engine
from app.limits.policy import Charge, parse_overrides
from app.limits.store import Limiter, Subject
from bench.databases import fresh_database
from bench.harness import add_options
from bench.timing import measure

RESULTS = pathlib.Path(__file__).parent / "results"


async def run(dialect: str, requests: int) -> dict[str, object]:
    policies = parse_overrides("user=100000000/3600,write=100000000/3600")
    read = (Charge(policies["user"], 1),)
    write = (Charge(policies["user"], 1), Charge(policies["write"], 1))
    out: dict[str, object] = {
        "dialect": dialect,
        "requests": requests,
        "load_average": os.getloadavg()[0],
    }
    with tempfile.TemporaryDirectory(prefix="bench-limits-") as tmp:
        async with fresh_database(dialect, pathlib.Path(tmp)) as db:
            out["server_version"] = db.server_version
            engine = create_engine(db.url)
            try:

                async def baseline() -> object:
                    async with engine.connect() as conn:
                        return (await conn.execute(sa.text("SELECT 1"))).scalar_one()

                stats = await measure(baseline, label=f"{dialect} SELECT 1", requests=requests)
                out["baseline: SELECT 1"] = stats.as_dict()
                for label, lease, charges, user in (
                    ("read, exact", 1, read, 1),
                    ("read, lease 10", 10, read, 2),
                    ("write", 10, write, 3),
                ):
                    limiter = Limiter(engine, lease)
                    subject = Subject("198.51.100.1", user)

                    async def call(
                        limiter: Limiter = limiter,
                        charges: tuple[Charge, ...] = charges,
                        subject: Subject = subject,
                    ) -> object:
                        outcomes = await limiter.admit(charges, subject, 1_900_000_000)
                        assert outcomes and all(o.allowed for o in outcomes)
                        return outcomes

                    stats = await measure(call, label=f"{dialect} {label}", requests=requests)
                    out[label] = stats.as_dict()
            finally:
                await engine.dispose()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    add_options(parser, requests=2000)
    args = parser.parse_args()
    result = asyncio.run(run(args.dialect, args.requests))
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"rate_limits-{args.dialect}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    for label in ("baseline: SELECT 1", "read, exact", "read, lease 10", "write"):
        stats = result[label]
        assert isinstance(stats, dict)
        print(
            f"{args.dialect:10} {label:18} p50 {stats['p50_ms']:.3f} ms"
            f"  p95 {stats['p95_ms']:.3f} ms  mean {stats['mean_ms']:.3f} ms"
        )


if __name__ == "__main__":
    main()
