"""Mixed load: N concurrent clients against a real ``daybook serve`` (issue 12).

    .venv/bin/python -m bench.load --dialect sqlite --clients 80 --seconds 60

Starts a server on a fresh migrated database of the dialect (embedded
PostgreSQL for ``postgresql``), seeds a corpus through the API (users, memos
with tags, via ``memos:batchCreate``), then runs ``--clients`` clients for
``--seconds``, each picking an operation by weight: list, filtered list,
get, create, update, comment, search. Prints requests/s, p50/p95/p99 per
operation, the status counts and the server's RSS before and after. Exit
status 1 when any request failed (a status other than 2xx/412, or a
transport error).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import pathlib
import random
import sys
import tempfile
import time
from collections import Counter, defaultdict
from typing import Any

import httpx

from bench.databases import fresh_database
from bench.harness import add_options, py_spy_record, start_server, stop_server
from bench.timing import percentile

PASSWORD = "password-1"
MIX = {
    "list": 30,
    "filtered_list": 15,
    "get": 20,
    "create": 12,
    "update": 10,
    "comment": 5,
    "search": 8,
}
WRITES = ("create", "update", "comment")
TAGS = [f"t{i}" for i in range(20)]


def rss_mb(pid: int) -> float:
    total = 0
    for p in [pid, *_children(pid)]:
        try:
            for line in pathlib.Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


def cpu_seconds(pid: int) -> float:
    """User + system CPU of ``pid`` and its children (the server's workers), from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for p in [pid, *_children(pid)]:
        try:
            fields = pathlib.Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / tick


def _children(pid: int) -> list[int]:
    """Descendants of ``pid``, whichever of its threads started them.

    ``/proc/<pid>/task/<tid>/children`` lists only the children that thread
    started: the Markdown pool's forkserver is started from a worker thread.
    """
    out: list[str] = []
    try:
        tasks = list(pathlib.Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return []
    for task in tasks:
        with contextlib.suppress(OSError):  # the thread ended meanwhile
            out += (task / "children").read_text().split()
    kids = [int(x) for x in out]
    return kids + [g for k in kids for g in _children(k)]


def _content(rng: random.Random, i: int) -> str:
    words = " ".join(
        rng.choice(
            [
                "alpha",
                "beta",
                "gamma",
                "delta",
                "note",
                "plan",
                "idea",
                "meeting",
                "draft",
                "review",
            ]
        )
        for _ in range(rng.randint(8, 40))
    )
    return f"memo {i} {words} #{rng.choice(TAGS)} #{rng.choice(TAGS)}"


async def seed(base: str, users: int, memos: int) -> list[dict[str, Any]]:
    rng = random.Random(1)
    actors = []
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        admin_token = ""
        for u in range(users):
            headers = {"Authorization": f"Bearer {admin_token}"} if admin_token else {}
            r = await http.post(
                "/api/v1/users",
                json={"username": f"user{u}", "password": PASSWORD},
                headers=headers,
            )
            r.raise_for_status()
            r = await http.post(
                "/api/v1/auth/signin",
                json={"passwordCredentials": {"username": f"user{u}", "password": PASSWORD}},
            )
            r.raise_for_status()
            http.cookies.clear()  # bearer only: a session cookie would need CSRF tokens
            token = r.json()["accessToken"]
            admin_token = admin_token or token
            actors.append({"token": token, "memos": []})
        per = memos // users
        for a, actor in enumerate(actors):
            for start in range(0, per, 200):
                body = {
                    "memos": [
                        {
                            "content": _content(rng, a * per + i),
                            "visibility": rng.choice(["PRIVATE", "PROTECTED", "PUBLIC"]),
                        }
                        for i in range(start, min(per, start + 200))
                    ]
                }
                r = await http.post(
                    "/api/v1/memos:batchCreate",
                    json=body,
                    headers={"Authorization": f"Bearer {actor['token']}"},
                )
                r.raise_for_status()
                actor["memos"].extend(x["name"] for x in r.json()["results"])
    return actors


async def client(
    base: str,
    actor: dict[str, Any],
    until: float,
    rng: random.Random,
    lat: dict[str, list[float]],
    statuses: Counter[str],
    mix: dict[str, int],
) -> None:
    ops, weights = list(mix), list(mix.values())
    headers = {"Authorization": f"Bearer {actor['token']}"}
    # verify=False: plain http; loading the CA bundle for 80 clients took seconds of the run.
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60, verify=False) as http:
        while time.monotonic() < until:
            op = rng.choices(ops, weights)[0]
            name = rng.choice(actor["memos"])
            started = time.perf_counter()
            try:
                if op == "list":
                    r = await http.get("/api/v1/memos", params={"pageSize": 20})
                elif op == "filtered_list":
                    r = await http.get(
                        "/api/v1/memos",
                        params={"pageSize": 20, "filter": f'tag in ["{rng.choice(TAGS)}"]'},
                    )
                elif op == "get":
                    r = await http.get(f"/api/v1/{name}")
                elif op == "create":
                    r = await http.post(
                        "/api/v1/memos", json={"content": _content(rng, rng.randint(0, 10**9))}
                    )
                    if r.status_code == 200:
                        actor["memos"].append(r.json()["name"])
                elif op == "update":
                    r = await http.patch(
                        f"/api/v1/{name}?updateMask=content",
                        json={"content": _content(rng, rng.randint(0, 10**9))},
                    )
                elif op == "comment":
                    r = await http.post(
                        f"/api/v1/{name}/comments", json={"content": f"comment {rng.random()}"}
                    )
                else:
                    r = await http.get(
                        "/api/v1/memos:search",
                        params={
                            "query": rng.choice(["alpha plan", "meeting notes", "draft review"]),
                            "pageSize": 10,
                        },
                    )
                code = str(r.status_code)
            except httpx.HTTPError as exc:
                code = type(exc).__name__
            lat[op].append(time.perf_counter() - started)
            statuses[code] += 1


async def healthz_rate(base: str, clients: int, seconds: float) -> float:
    """The same server's ``/healthz`` requests/s with ``clients`` clients: the
    machine's own ceiling in this run, for ratios that survive a busy machine."""
    count = 0
    until = time.monotonic() + seconds

    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=base, timeout=60, verify=False, limits=limits) as http:

        async def one() -> None:
            nonlocal count
            while time.monotonic() < until:
                with contextlib.suppress(httpx.HTTPError):  # counted only when answered
                    await http.get("/healthz")
                    count += 1

        started = time.monotonic()
        await asyncio.gather(*(one() for _ in range(clients)))
        return count / (time.monotonic() - started)


async def oversized_bodies(base: str, token: str, n: int) -> dict[int, int]:
    """Issue 12: ``n`` memo creates with 45 MB bodies (content is capped at 8 KiB);
    answered with their statuses, for the RSS that follows them."""
    body = b'{"content": "' + b"x" * (45 * 1024 * 1024) + b'"}'
    statuses: Counter[int] = Counter()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    async with httpx.AsyncClient(base_url=base, timeout=120) as http:
        for _ in range(n):
            try:
                r = await http.post("/api/v1/memos", content=body, headers=headers)
                statuses[r.status_code] += 1
            except httpx.HTTPError:
                statuses[0] += 1  # the server may close the connection mid-body
    return dict(statuses)


async def run(args: argparse.Namespace) -> int:
    work = pathlib.Path(tempfile.mkdtemp(prefix="daybook-load-"))
    async with fresh_database(args.dialect, work) as db:
        env = (
            {"DAYBOOK_PAGE_CACHE_BYTES": str(args.page_cache_bytes)}
            if args.page_cache_bytes is not None
            else {}
        )
        proc, base = start_server(db.url, work / "data", args.workers, env=env)
        try:
            actors = await seed(base, args.users, args.memos)
            await asyncio.sleep(1)
            before = rss_mb(proc.pid)
            # Issue 12's memory check first, against the idle figure just taken.
            oversized = await oversized_bodies(base, actors[0]["token"], args.oversized)
            await asyncio.sleep(1)
            after_oversized = rss_mb(proc.pid)
            health = await healthz_rate(base, args.clients, args.healthz_seconds)
            lat: dict[str, list[float]] = defaultdict(list)
            statuses: Counter[str] = Counter()
            started = time.monotonic()
            server_cpu, client_cpu = cpu_seconds(proc.pid), time.process_time()
            until = started + args.seconds
            spy = (
                py_spy_record(proc.pid, args.py_spy, args.seconds, "--gil", "-r", "100")
                if args.py_spy
                else None
            )
            await asyncio.gather(
                *(
                    client(
                        base,
                        actors[i % len(actors)],
                        until,
                        random.Random(100 + i),
                        lat,
                        statuses,
                        args.mix,
                    )
                    for i in range(args.clients)
                )
            )
            elapsed = time.monotonic() - started
            server_cpu = cpu_seconds(proc.pid) - server_cpu
            client_cpu = time.process_time() - client_cpu
            if spy is not None:
                spy.wait(timeout=60)
            after = rss_mb(proc.pid)
        finally:
            stop_server(proc)
    total = sum(statuses.values())
    load = os.getloadavg()
    print(
        f"dialect={args.dialect} workers={args.workers} clients={args.clients} "
        f"seconds={args.seconds} corpus={args.memos} memos/{args.users} users  "
        f"loadavg={load[0]:.1f} (1 min)"
    )
    rate = total / elapsed
    print(
        f"requests={total} throughput={rate:.1f} req/s  healthz={health:.0f} req/s "
        f"(mixed/healthz {rate / health:.1%})"
    )
    # Where the machine's cores went: the clients run on the same machine.
    print(
        f"cpu: server {server_cpu / elapsed:.2f} cores "
        f"({server_cpu / total * 1000:.1f} ms per request), "
        f"load clients {client_cpu / elapsed:.2f} cores "
        f"({client_cpu / total * 1000:.1f} ms per request), of {os.cpu_count()}"
    )
    print(f"{'op':<14}{'n':>7}{'p50 ms':>10}{'p95 ms':>10}{'p99 ms':>10}")
    writes: list[float] = []
    for op in args.mix:
        values = sorted(lat[op])
        if op in WRITES:
            writes.extend(values)
        if values:
            print(
                f"{op:<14}{len(values):>7}{percentile(values, 50) * 1000:>10.0f}"
                f"{percentile(values, 95) * 1000:>10.0f}{percentile(values, 99) * 1000:>10.0f}"
            )
    writes.sort()
    if writes:
        print(
            f"{'all writes':<14}{len(writes):>7}{percentile(writes, 50) * 1000:>10.0f}"
            f"{percentile(writes, 95) * 1000:>10.0f}{percentile(writes, 99) * 1000:>10.0f}"
        )
    print("statuses:", dict(sorted(statuses.items())))
    print(f"server RSS: {before:.0f} MB before, {after:.0f} MB after")
    if args.oversized:
        print(
            f"oversized bodies: {args.oversized} x 45 MB memo creates -> {oversized}; "
            f"RSS {after_oversized:.0f} MB after them ({after_oversized / before - 1:+.0%} "
            "vs idle, before the load)"
        )
    bad = sum(n for code, n in statuses.items() if not (code.startswith("2") or code == "412"))
    return 1 if bad else 0


def _mix(text: str) -> dict[str, int]:
    mix: dict[str, int] = {}
    for part in text.split(","):
        op, _, weight = part.partition("=")
        if op not in MIX or not weight.isdigit() or int(weight) < 1:
            names = ", ".join(MIX)
            raise argparse.ArgumentTypeError(f"{part!r}: want op=weight, op one of {names}")
        mix[op] = int(weight)
    return mix


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_options(parser, clients=80, seconds=60, users=8, memos=4000)
    parser.add_argument("--workers", type=int, default=1, help="serve --workers")
    parser.add_argument(
        "--oversized", type=int, default=6, help="45 MB bodies before the run (RSS against idle)"
    )
    parser.add_argument(
        "--mix",
        type=_mix,
        default=MIX,
        help="operations and weights, e.g. list=1 or list=3,create=1 (default: the realistic mix)",
    )
    parser.add_argument("--healthz-seconds", type=float, default=5, help="baseline run")
    parser.add_argument(
        "--page-cache-bytes",
        type=int,
        default=None,
        help="DAYBOOK_PAGE_CACHE_BYTES for the server (0: every read computed)",
    )
    parser.add_argument(
        "--py-spy",
        type=pathlib.Path,
        metavar="FILE",
        help="profile the server during the load with py-spy (pip install py-spy): "
        "collapsed stacks of the thread holding the GIL",
    )
    sys.exit(asyncio.run(run(parser.parse_args())))


if __name__ == "__main__":
    main()
