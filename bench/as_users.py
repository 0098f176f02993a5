"""List figures as users run the product (issue 15).

    .venv/bin/python -m bench.as_users --dialect sqlite --memos 100000

A fresh database of the dialect, a real ``daybook serve``, the corpus seeded
through the API (``memos:batchCreate``, 1,000 per call, with progress); no
``ANALYZE`` or anything else the product does not do itself. Then, in one
run and interleaved round-robin (so a busy shared machine slows every case
alike): ``/healthz``, the list's first page and its 100th page (keyset
token), a restricted key's first page against its holder's, and the filtered
lists against the unfiltered one; p50/p95 of ``--rounds`` sequential
requests each, then throughput of ``--clients`` concurrent clients on the
list and on ``/healthz`` for ``--seconds`` each. Prints the machine's load
(``uptime``) before and after, and the statements each request runs
(counted in process, on the same database, after the server stops).

Seeding 1,000,000 memos through the API takes hours on the 2-core machine,
so a SQLite corpus can be kept and measured again by later code:
``--corpus DIR`` seeds into ``DIR`` the first time (writing ``DIR/seeded.json``
last, with the holder's token and key) and reuses it after. ``--workers N``
serves with N workers (the product's default is one per core; the latency
phase is sequential either way).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import pathlib
import random
import re
import shutil
import subprocess
import tempfile
import time
from typing import Any

import httpx
import sqlalchemy as sa

from bench.databases import fresh_database
from bench.harness import add_options, serve
from bench.load import PASSWORD, _content
from bench.timing import percentile

# The product as installed (answers kept while the database is unchanged,
# app.api.page_cache), then every request computed: the cost after any write.
CACHE_MODES = (
    ("page cache on (the default): repeated requests", {}),
    ("page cache off: every request computed", {"DAYBOOK_PAGE_CACHE_BYTES": "0"}),
)

FILTERS = {
    "tag": '"t3" in tags',
    "contains": 'content.contains("meeting")',
    "combined": '"t3" in tags && content.contains("meeting")',
}


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


async def _user(http: httpx.AsyncClient, name: str, admin: str) -> str:
    headers = {"Authorization": f"Bearer {admin}"} if admin else {}
    r = await http.post(
        "/api/v1/users", json={"username": name, "password": PASSWORD}, headers=headers
    )
    r.raise_for_status()
    r = await http.post(
        "/api/v1/auth/signin",
        json={"passwordCredentials": {"username": name, "password": PASSWORD}},
    )
    r.raise_for_status()
    http.cookies.clear()
    return str(r.json()["accessToken"])


async def seed(base: str, memos: int) -> tuple[str, str]:
    """Two users (the holder writes 3/4 of the memos); returns (holder token, key)."""
    rng = random.Random(15)
    async with httpx.AsyncClient(base_url=base, timeout=600) as http:
        holder = await _user(http, "holder", "")
        other = await _user(http, "other", holder)
        started = time.perf_counter()
        done = 0
        while done < memos:
            n = min(1000, memos - done)
            token = holder if rng.random() < 0.75 else other
            body = {
                "memos": [
                    {
                        "content": _content(rng, done + i),
                        "visibility": rng.choice(["PRIVATE", "PROTECTED", "PUBLIC"]),
                    }
                    for i in range(n)
                ]
            }
            r = await http.post(
                "/api/v1/memos:batchCreate",
                json=body,
                headers={"Authorization": f"Bearer {token}"},
            )
            r.raise_for_status()
            done += n
            if done % 10_000 == 0 or done == memos:
                rate = done / (time.perf_counter() - started)
                print(f"  seeded {done}/{memos} ({rate:.0f} memos/s)", flush=True)
        r = await http.post(
            "/api/v1/users/holder/personalAccessTokens",
            json={"description": "agent", "restriction": {"personal": "OWN", "spaces": []}},
            headers={"Authorization": f"Bearer {holder}"},
        )
        r.raise_for_status()
        return holder, str(r.json()["token"])


async def page_token(http: httpx.AsyncClient, headers: dict[str, str], page: int) -> str:
    token = ""
    for _ in range(page - 1):
        params = {"pageSize": 50, **({"pageToken": token} if token else {})}
        r = await http.get("/api/v1/memos", params=params, headers=headers)
        r.raise_for_status()
        token = r.json()["nextPageToken"]
        if not token:
            raise SystemExit(f"fewer than {page} pages")
    return token


async def run(args: argparse.Namespace) -> None:
    print("load before:", uptime())
    if args.corpus:
        await run_kept(args, pathlib.Path(args.corpus))
        print("load after:", uptime())
        return
    with tempfile.TemporaryDirectory(prefix="bench-users-") as tmp:
        work = pathlib.Path(tmp)
        async with fresh_database(args.dialect, work) as db:
            holder, key = await seeded(db.url, work / "data", args.memos)
            await measure_modes(db.url, work / "data", holder, key, args)
    print("load after:", uptime())


async def seeded(url: str, data: pathlib.Path, memos: int) -> tuple[str, str]:
    """Seed ``memos`` through a server of its own; the holder's token and key."""
    with serve(url, data, ready_s=600) as (_, base):
        t0 = time.perf_counter()
        holder, key = await seed(base, memos)
        print(f"seeded {memos} memos in {time.perf_counter() - t0:.0f} s")
    return holder, key


async def measure_modes(
    url: str, data: pathlib.Path, holder: str, key: str, args: argparse.Namespace
) -> None:
    """:func:`measure` on a server per cache mode, then the statements per request."""
    for label, env in CACHE_MODES:
        print(f"\n== {label} ==")
        with serve(url, data, workers=args.workers, ready_s=600, env=env) as (_, base):
            await measure(base, holder, key, args)
    await statements_per_request(url, data, holder)


def _kept(work: pathlib.Path, memos: int) -> tuple[str, str] | None:
    """The holder's token and key of a corpus seeded earlier in ``work``, if any."""
    marker = work / "seeded.json"
    if not marker.exists():
        work.mkdir(parents=True, exist_ok=True)
        return None
    kept = json.loads(marker.read_text())
    if kept["memos"] != memos:
        raise SystemExit(f"{work} holds {kept['memos']} memos, not {memos}")
    return kept["holder"], kept["key"]


def _keep(work: pathlib.Path, memos: int, holder: str, key: str) -> None:
    """Written last: a corpus whose seeding was cut off is never reused."""
    marker = work / "seeded.json"
    marker.write_text(json.dumps({"memos": memos, "holder": holder, "key": key}))


async def run_kept(args: argparse.Namespace, work: pathlib.Path) -> None:
    """Seed a SQLite corpus into ``work`` once; measure it on every run."""
    if args.dialect != "sqlite":
        raise SystemExit("--corpus keeps a SQLite corpus only")
    url = f"sqlite:///{work / 'daybook.db'}"
    kept = _kept(work, args.memos)
    if kept is not None:
        holder, key = kept
        print(f"reusing the {args.memos}-memo corpus in {work}")
    else:
        async with fresh_database("sqlite", work):
            pass  # migrated: daybook.db in work
        holder, key = await seeded(url, work / "data", args.memos)
        _keep(work, args.memos, holder, key)
    await measure_modes(url, work / "data", holder, key, args)


async def measure(base: str, holder: str, key: str, args: argparse.Namespace) -> None:
    mine = {"Authorization": f"Bearer {holder}"}
    agent = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        p100 = await page_token(http, mine, 100)
        cases: dict[str, tuple[str, dict[str, Any], dict[str, str]]] = {
            "healthz": ("/healthz", {}, {}),
            "list p1": ("/api/v1/memos", {"pageSize": 50}, mine),
            "list p100": ("/api/v1/memos", {"pageSize": 50, "pageToken": p100}, mine),
            "key list p1": ("/api/v1/memos", {"pageSize": 50}, agent),
        }
        for name, f in FILTERS.items():
            cases[f"filter {name}"] = ("/api/v1/memos", {"pageSize": 50, "filter": f}, mine)
        for url, params, headers in cases.values():  # warm every path once
            (await http.get(url, params=params, headers=headers)).raise_for_status()
        samples: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(args.rounds):
            for name, (url, params, headers) in cases.items():
                start = time.perf_counter()
                r = await http.get(url, params=params, headers=headers)
                samples[name].append((time.perf_counter() - start) * 1000)
                r.raise_for_status()
    base_p95 = percentile(sorted(samples["list p1"]), 95)
    print(f"\nlatency, {args.rounds} sequential requests per case, interleaved ({uptime()}):")
    print(f"{'case':<18}{'p50 ms':>9}{'p95 ms':>9}{'p95 / list p1':>15}")
    for name, values in samples.items():
        ordered = sorted(values)
        p95 = percentile(ordered, 95)
        print(f"{name:<18}{percentile(ordered, 50):>9.1f}{p95:>9.1f}{p95 / base_p95:>15.2f}")
    throughput = {}
    for name in ("healthz", "list p1", "healthz", "list p1"):
        url, params, headers = cases[name]
        if args.load_client == "wrk":
            rate = await asyncio.to_thread(
                _wrk, base, url, params, headers, args.clients, args.seconds
            )
        else:
            rate = await _throughput(base, url, params, headers, args.clients, args.seconds)
        throughput.setdefault(name, []).append(rate)
    health = sum(throughput["healthz"]) / 2
    listing = sum(throughput["list p1"]) / 2
    print(
        f"\nthroughput, {args.clients} clients ({args.load_client}),"
        f" {args.seconds:.0f} s x 2 each, alternating:"
        f" /healthz {health:.0f} req/s, list p1 {listing:.0f} req/s"
        f" ({100 * listing / health:.1f}% of /healthz); {uptime()}"
    )


def _wrk(
    base: str,
    url: str,
    params: dict[str, Any],
    headers: dict[str, str],
    clients: int,
    seconds: float,
) -> float:
    """Requests/s as ``wrk`` (one thread) measures it; any non-2xx answer fails the run.

    A Python client spends about a millisecond of CPU per request, so on two
    cores it, not the server, set the ceiling near 900 requests/s.
    """
    target = str(httpx.URL(base + url, params=params))
    command = ["wrk", "-t1", f"-c{clients}", f"-d{seconds:.0f}s", "--latency"]
    for name, value in headers.items():
        command += ["-H", f"{name}: {value}"]
    out = subprocess.run([*command, target], capture_output=True, text=True, check=True).stdout
    if "Non-2xx or 3xx responses" in out or "Socket errors" in out:
        raise SystemExit(f"wrk saw errors:\n{out}")
    match = re.search(r"Requests/sec:\s+([0-9.]+)", out)
    if match is None:
        raise SystemExit(f"wrk printed no rate:\n{out}")
    return float(match.group(1))


async def _throughput(
    base: str,
    url: str,
    params: dict[str, Any],
    headers: dict[str, str],
    clients: int,
    seconds: float,
) -> float:
    count = 0
    until = time.perf_counter() + seconds
    limits = httpx.Limits(max_connections=clients)

    async def one(http: httpx.AsyncClient) -> None:
        nonlocal count
        while time.perf_counter() < until:
            r = await http.get(url, params=params, headers=headers)
            r.raise_for_status()
            count += 1

    async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits) as http:
        started = time.perf_counter()
        await asyncio.gather(*(one(http) for _ in range(clients)))
        return count / (time.perf_counter() - started)


async def statements_per_request(url: str, data: pathlib.Path, holder: str) -> None:
    """Statements the list and get requests run (in process, same database)."""
    from litestar.testing import AsyncTestClient

    from app.server import create_app
    from app.settings import Settings

    # The cache off: count what computing an answer takes, not a kept one.
    settings = Settings(data_dir=data, database_url=url, log_format="json", page_cache_bytes=0)
    app = create_app(settings)
    async with AsyncTestClient(app=app) as client:
        engine = app.state.engine.sync_engine
        seen: list[str] = []

        def count(_c: Any, _cur: Any, statement: str, *_: Any) -> None:
            seen.append(statement)

        headers = {"Authorization": f"Bearer {holder}"}
        first = await client.get("/api/v1/memos", params={"pageSize": 50}, headers=headers)
        name = first.json()["memos"][0]["name"]
        sa.event.listen(engine, "before_cursor_execute", count)
        for label, path, params in (
            ("list p1", "/api/v1/memos", {"pageSize": 50}),
            ("get", f"/api/v1/{name}", {}),
        ):
            seen.clear()
            (await client.get(path, params=params, headers=headers)).raise_for_status()
            print(f"statements per request, {label}: {len(seen)}")
        sa.event.remove(engine, "before_cursor_execute", count)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_options(parser, memos=100_000, clients=8, seconds=5.0)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--workers", type=int, default=1, help="server workers")
    parser.add_argument(
        "--load-client",
        choices=("wrk", "httpx"),
        default="wrk" if shutil.which("wrk") else "httpx",
        help="the throughput phase's client (wrk: apt install wrk)",
    )
    parser.add_argument(
        "--corpus", help="keep (or reuse) the seeded SQLite corpus in this directory"
    )
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
