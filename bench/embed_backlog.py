"""Interactive latency during an embedding backlog, and idle memory (issue 15).

    .venv/bin/python -m bench.embed_backlog --dialect sqlite
    .venv/bin/python -m bench.embed_backlog --dialect postgresql

One run, one fresh database of the dialect, one real ``daybook serve
--workers 2`` with the embedding worker on and the real default model
(``minilm-onnx``; ``bench.harness.SERVE_ENV`` turns the worker off, this
script turns it back on). Phases:

1. **base**: ``--base`` memos of ``bench.corpus`` Markdown are created
   through ``memos:batchCreate`` and embedded until ``memo_embedding_queue``
   is empty (the queue is read directly, read-only, by a connection of this
   process); then the server is restarted on that database, so that every
   worker loads the query model and the vectors at start (``SearchRuntime
   .warm``) as an instance that already has notes does, and a few searches
   run on fresh connections.
2. **idle**: the server's memory per process (RSS and PSS; supervisor,
   workers, their Markdown forkserver and pool processes), then
   ``--list-clients`` clients on ``GET /api/v1/memos?pageSize=50`` and
   ``--search-clients`` on ``GET /api/v1/memos:search?query=...`` for
   ``--seconds``.
3. **held** (unless ``--no-held``): the server is restarted without the
   embedding worker, ``--backlog`` memos are created through
   ``memos:batchCreate`` (1,000 per call, one after another, as fast as the
   server takes them), and the same clients run for the same ``--seconds``:
   idle on exactly the backlog's corpus and queue, the fair baseline for
   the backlog (phase 2 has a tenth of the memos). The server is then
   restarted with the worker on.
4. **backlog**: (without ``--no-held``, the memos are created here) at once
   the same clients for the same ``--seconds`` while the worker drains the
   queue; its depth is sampled through the window (start, end, minimum), and
   the search responses' ``pendingEmbeddings`` too. A window in which the
   queue emptied is flagged.
5. **after** (unless ``--no-after``): once the queue is empty, the same
   clients again: idle on the same corpus as the backlog window (the search
   arm has more memos to rank than in phase 2).

Clients: each its own keep-alive connection (as a browser tab), a request,
then an exponentially distributed think time of mean ``--think-ms`` (100 ms
by default; 0 is a closed loop). Four list and two search clients at 100 ms
are a busy household or small team clicking continuously, which leaves the
server CPU to spare when idle: the question is whether the embedding
backlog takes it from them. A closed loop instead saturates both cores in
every phase and measures queueing, not the backlog.
Every answer is attributed to the worker process that served it (the
connection's port, matched to the worker's socket in ``/proc``), so each
phase also shows the embedding worker's (the ``embedding`` lease holder's)
latency apart from the other worker's. The server's CPU per thread (with
its niceness) and the load average are printed with each phase.

Targets (issue 15): list p95 during the backlog within 1.5x of idle (held);
idle
RSS under 300 MB with the model loaded. Writes
``bench/results/embed_backlog-<dialect>.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pathlib
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import httpx
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from app.db.engine import create_engine
from app.db.schema import job_lease
from app.search.tables import memo_embedding_queue
from bench.as_users import _user, uptime
from bench.corpus import WORDS, markdown, tag_pool
from bench.databases import fresh_database
from bench.harness import add_options, py_spy_record, start_server, stop_server
from bench.load import _children, cpu_seconds
from bench.timing import percentile

RESULTS = pathlib.Path(__file__).parent / "results"
BATCH = 1000  # memos per memos:batchCreate call
TICK = os.sysconf("SC_CLK_TCK")


# --- the server's processes, from /proc -------------------------------------------------------


def _read(path: str) -> str:
    try:
        return pathlib.Path(path).read_text()
    except OSError:
        return ""


def _status_kb(pid: int, key: str) -> int:
    for line in _read(f"/proc/{pid}/status").splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def _pss_kb(pid: int) -> int:
    for line in _read(f"/proc/{pid}/smaps_rollup").splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1])
    return 0


def _stat(path: str) -> list[str]:
    """The fields of a ``/proc/.../stat`` after the command name (which may hold
    spaces and parentheses): ``[0]`` is the state, ``[1]`` the parent, ``[11:15]``
    utime, stime, cutime, cstime, ``[16]`` the niceness. Empty if it is gone."""
    fields = _read(path).rsplit(")", 1)
    return fields[1].split() if len(fields) == 2 else []


def _ppid(pid: int) -> int:
    stat = _stat(f"/proc/{pid}/stat")
    return int(stat[1]) if stat else 0


def _pg_kind(pid: int) -> str:
    """What a PostgreSQL child process does, from its title ("postgres: autovacuum worker")."""
    title = _cmd(pid).removeprefix("postgres: ").strip()
    for kind in ("autovacuum", "checkpointer", "background writer", "walwriter"):
        if title.startswith(kind):
            return kind
    return "backends" if "[local]" in title or "(" in title else "other"


def postgres_cpu(postmaster: int) -> dict[str, float]:
    """CPU seconds of a PostgreSQL server by kind of process: its live children by
    their titles, and those that already exited (short-lived autovacuum workers)
    from the postmaster's ``cutime + cstime``."""
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[str, float] = defaultdict(float)
    stat = _stat(f"/proc/{postmaster}/stat")
    if stat:
        out["postmaster"] += (int(stat[11]) + int(stat[12])) / tick
        out["exited children"] += (int(stat[13]) + int(stat[14])) / tick
    for pid in _children(postmaster):
        stat = _stat(f"/proc/{pid}/stat")
        if stat:
            out[_pg_kind(pid)] += (int(stat[11]) + int(stat[12])) / tick
    return dict(out)


async def postmaster_of(engine: AsyncEngine) -> int | None:
    """The PostgreSQL server's postmaster on this machine (the parent of a backend), or None."""
    if engine.dialect.name != "postgresql":
        return None
    async with engine.connect() as conn:
        backend = int((await conn.exec_driver_sql("SELECT pg_backend_pid()")).scalar_one())
    parent = _ppid(backend)
    return parent or None


def processes(supervisor: int, holder: int | None) -> list[dict[str, Any]]:
    """The server's process tree with a role for each and its memory."""
    out = []
    workers = set(worker_pids(supervisor))
    for pid in [supervisor, *_children(supervisor)]:
        cmd = _cmd(pid)
        if pid == supervisor:
            role = "supervisor"
        elif pid in workers:
            role = "worker (embedding)" if pid == holder else "worker"
        elif "resource_tracker" in cmd:
            role = "resource tracker"
        elif "forkserver" in cmd and _ppid(pid) in workers:
            role = "markdown forkserver"
        else:
            role = "markdown pool"
        out.append(
            {
                "pid": pid,
                "parent": _ppid(pid),
                "role": role,
                "rss_mb": round(_status_kb(pid, "VmRSS") / 1024, 1),
                "pss_mb": round(_pss_kb(pid) / 1024, 1),
                "onnxruntime": "onnxruntime" in _read(f"/proc/{pid}/maps"),
            }
        )
    return out


def _cmd(pid: int) -> str:
    return _read(f"/proc/{pid}/cmdline").replace("\0", " ")


def worker_pids(supervisor: int) -> list[int]:
    return [
        p
        for p in _children(supervisor)
        if _ppid(p) == supervisor and "resource_tracker" not in _cmd(p)
    ]


def threads(supervisor: int) -> dict[tuple[int, int], tuple[str, int, int]]:
    """(pid, tid) -> (name, niceness, CPU ticks) for every thread of the server."""
    out = {}
    for pid in [supervisor, *_children(supervisor)]:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            f = _stat(f"/proc/{pid}/task/{tid}/stat")
            if not f:
                continue
            name = _read(f"/proc/{pid}/task/{tid}/comm").strip()
            out[(pid, int(tid))] = (name, int(f[16]), int(f[11]) + int(f[12]))
    return out


def busiest_threads(
    before: dict[tuple[int, int], tuple[str, int, int]],
    after: dict[tuple[int, int], tuple[str, int, int]],
    roles: dict[int, str],
    seconds: float,
    top: int = 8,
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for key, (name, nice, ticks) in after.items():
        used = (ticks - before.get(key, (name, nice, 0))[2]) / TICK
        if used > 0:
            rows.append(
                {
                    "pid": key[0],
                    "tid": key[1],
                    "role": roles.get(key[0], "?"),
                    "thread": name,
                    "nice": nice,
                    "cores": round(used / seconds, 3),
                }
            )
    rows.sort(key=lambda r: -r["cores"])
    return rows[:top]


def threads_by_nice(supervisor: int, workers: list[int]) -> dict[str, dict[int, int]]:
    """Per worker, how many threads run at each niceness."""
    out: dict[str, dict[int, int]] = {}
    for (pid, _), (_, nice, _) in threads(supervisor).items():
        if pid in workers:
            row = out.setdefault(str(pid), {})
            row[nice] = row.get(nice, 0) + 1
    return out


def memory_map(pid: int, top: int = 8) -> list[tuple[str, float]]:
    """Where a process's resident memory is: RSS (MB) by mapping, anonymous ones as [anon]."""
    by: Counter[str] = Counter()
    name = "[anon]"
    for line in _read(f"/proc/{pid}/smaps").splitlines():
        head = line.split(maxsplit=5)
        if len(head) >= 5 and "-" in head[0] and ":" in head[3]:
            name = head[5].strip() if len(head) == 6 else "[anon]"
            name = name if name.startswith("[") else pathlib.Path(name).name
        elif line.startswith("Rss:"):
            by[name] += int(line.split()[1])
    return [(n, round(kb / 1024, 1)) for n, kb in by.most_common(top)]


class Sockets:
    """Which server process holds the other end of a client connection (by port)."""

    def __init__(self, server_port: int, workers: list[int]) -> None:
        self.server_port = server_port
        self.workers = workers
        self._known: dict[int, int] = {}

    def worker_of(self, client_port: int) -> int:
        found = self._known.get(client_port)
        if found is None:
            found = self._known[client_port] = self._lookup(client_port)
        return found

    def _lookup(self, client_port: int) -> int:
        inodes = set()
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            for line in _read(table).splitlines()[1:]:
                cols = line.split()
                local, remote = cols[1], cols[2]
                if (
                    int(local.rsplit(":", 1)[1], 16) == self.server_port
                    and int(remote.rsplit(":", 1)[1], 16) == client_port
                ):
                    inodes.add(f"socket:[{cols[9]}]")
        for pid in self.workers:
            try:
                fds = os.listdir(f"/proc/{pid}/fd")
            except OSError:
                continue
            for fd in fds:
                try:
                    if os.readlink(f"/proc/{pid}/fd/{fd}") in inodes:
                        return pid
                except OSError:
                    continue
        return 0


# --- the database, read-only -------------------------------------------------------------------


async def queue_depth(engine: AsyncEngine) -> int:
    async with engine.connect() as conn:
        q = sa.select(sa.func.count()).select_from(memo_embedding_queue)
        return int((await conn.execute(q)).scalar_one())


async def lease_holder(engine: AsyncEngine) -> int | None:
    """The pid of the process holding the ``embedding`` lease (host:pid:tag)."""
    async with engine.connect() as conn:
        q = sa.select(job_lease.c.holder).where(job_lease.c.name == "embedding")
        holder = (await conn.execute(q)).scalar()
    return int(holder.rsplit(":", 2)[1]) if holder else None


async def wait_drained(engine: AsyncEngine, limit_s: float) -> float:
    started = time.perf_counter()
    last = -1
    while (depth := await queue_depth(engine)) > 0:
        if time.perf_counter() - started > limit_s:
            raise SystemExit(f"queue still at {depth} after {limit_s:.0f} s")
        if depth != last and (last < 0 or last - depth >= 2000):
            print(f"  queue {depth} ({time.perf_counter() - started:.0f} s)", flush=True)
            last = depth
        await asyncio.sleep(2)
    return time.perf_counter() - started


# --- load ----------------------------------------------------------------------------------------


async def create_memos(base: str, token: str, n: int, rng: random.Random) -> float:
    """``n`` memos through ``memos:batchCreate``, ``BATCH`` per call; memos/s."""
    tags = tag_pool()
    headers = {"Authorization": f"Bearer {token}"}
    started = time.perf_counter()
    async with httpx.AsyncClient(base_url=base, timeout=600, headers=headers) as http:
        done = 0
        while done < n:
            k = min(BATCH, n - done)
            body = {
                "memos": [
                    {
                        "content": markdown(rng, tags),
                        "visibility": rng.choice(["PRIVATE", "PROTECTED", "PUBLIC"]),
                    }
                    for _ in range(k)
                ]
            }
            r = await http.post("/api/v1/memos:batchCreate", json=body)
            r.raise_for_status()
            done += k
            if done % 5000 == 0 or done == n:
                rate = done / (time.perf_counter() - started)
                print(f"  created {done}/{n} ({rate:.0f} memos/s)", flush=True)
    return n / (time.perf_counter() - started)


def search_query(rng: random.Random) -> str:
    """One to three corpus words: mostly new texts, so each search embeds its query."""
    words = [w for w in rng.choices(WORDS, k=rng.randint(1, 3)) if len(w) > 3] or ["meeting"]
    return " ".join(words)


@dataclass(slots=True)
class Window:
    """What the clients of one phase saw."""

    latencies: dict[str, list[tuple[float, int]]] = field(default_factory=lambda: defaultdict(list))
    statuses: Counter[str] = field(default_factory=Counter)
    pending: list[tuple[float, int]] = field(default_factory=list)


def _request(kind: str, rng: random.Random) -> tuple[str, dict[str, Any]]:
    if kind == "list":
        return "/api/v1/memos", {"pageSize": 50}
    return "/api/v1/memos:search", {"query": search_query(rng)}


def _served_by(r: httpx.Response, sockets: Sockets) -> int:
    stream = r.extensions.get("network_stream")
    addr = stream.get_extra_info("client_addr") if stream is not None else None
    return sockets.worker_of(int(addr[1])) if addr else 0


async def connect(
    kinds: list[str], base: str, token: str, sockets: Sockets, tries: int = 40
) -> list[tuple[str, httpx.AsyncClient, int]]:
    """One keep-alive connection per client, each kind's spread evenly over the
    workers: a connection that lands on a worker already holding its share of
    that kind is closed and opened again (up to ``tries`` times)."""
    headers = {"Authorization": f"Bearer {token}"}
    held: Counter[tuple[str, int]] = Counter()
    out = []
    rng = random.Random(3)
    for kind in kinds:
        share = -(-kinds.count(kind) // max(len(sockets.workers), 1))
        for attempt in range(tries):
            http = httpx.AsyncClient(
                base_url=base,
                headers=headers,
                timeout=60,
                verify=False,
                limits=httpx.Limits(max_connections=1),
            )
            url, params = _request(kind, rng)
            (r := await http.get(url, params=params)).raise_for_status()
            pid = _served_by(r, sockets)
            if held[(kind, pid)] < share or attempt == tries - 1:
                held[(kind, pid)] += 1
                out.append((kind, http, pid))
                break
            await http.aclose()
            await asyncio.sleep(rng.uniform(0, 0.05))
    return out


async def client(
    kind: str,
    http: httpx.AsyncClient,
    until: float,
    rng: random.Random,
    think_ms: float,
    window: Window,
    sockets: Sockets,
) -> None:
    try:
        while time.monotonic() < until:
            url, params = _request(kind, rng)
            started = time.perf_counter()
            worker = 0
            try:
                r = await http.get(url, params=params)
                elapsed = time.perf_counter() - started
                code = str(r.status_code)
                worker = _served_by(r, sockets)
                if kind == "search" and r.status_code == 200:
                    window.pending.append((time.monotonic(), r.json()["pendingEmbeddings"]))
            except httpx.HTTPError as exc:
                elapsed = time.perf_counter() - started
                code = type(exc).__name__
            window.latencies[kind].append((elapsed, worker))
            window.statuses[code] += 1
            if think_ms > 0:
                await asyncio.sleep(rng.expovariate(1000 / think_ms))
    finally:
        await http.aclose()


def _stats(samples: list[float], seconds: float) -> dict[str, Any]:
    ordered = sorted(samples)
    if not ordered:
        return {"n": 0}
    return {
        "n": len(ordered),
        "per_s": round(len(ordered) / seconds, 1),
        "p50_ms": round(percentile(ordered, 50) * 1000, 1),
        "p95_ms": round(percentile(ordered, 95) * 1000, 1),
        "p99_ms": round(percentile(ordered, 99) * 1000, 1),
    }


async def phase(
    name: str,
    base: str,
    token: str,
    proc_pid: int,
    engine: AsyncEngine,
    args: argparse.Namespace,
) -> dict[str, Any]:
    holder = await lease_holder(engine)
    workers = worker_pids(proc_pid)
    roles = {p["pid"]: p["role"] for p in processes(proc_pid, holder)}
    port = int(base.rsplit(":", 1)[1])
    sockets = Sockets(port, workers)

    def label(pid: int) -> str:
        if not pid:
            return "unknown"
        if holder is None:  # no embedding worker (the held phase): the workers apart
            return f"worker {workers.index(pid) + 1}" if pid in workers else "other worker"
        return "embedding worker" if pid == holder else "other worker"

    kinds = ["list"] * args.list_clients + ["search"] * args.search_clients
    conns = await connect(kinds, base, token, sockets)
    placement = Counter(f"{kind} on {label(pid)}" for kind, _, pid in conns)
    print(f"\n{name}: connections {dict(sorted(placement.items()))}", flush=True)
    window = Window()
    depths: list[tuple[float, int]] = []
    load_start = os.getloadavg()
    threads_before = threads(proc_pid)
    postmaster = await postmaster_of(engine)
    pg_before = postgres_cpu(postmaster) if postmaster else {}
    server_cpu = {p: cpu_seconds(p) for p in workers}
    supervisor_cpu = cpu_seconds(proc_pid)
    client_cpu = time.process_time()
    started = time.monotonic()
    until = started + args.seconds
    depths.append((0.0, await queue_depth(engine)))

    async def sample_queue() -> None:
        while time.monotonic() < until - 2.5:
            await asyncio.sleep(2.5)
            depths.append((time.monotonic() - started, await queue_depth(engine)))

    clients = [
        client(kind, http, until, random.Random(10 + i), args.think_ms, window, sockets)
        for i, (kind, http, _) in enumerate(conns)
    ]
    spy = None
    if args.py_spy:  # every thread, idle ones left out (it costs CPU: a diagnosis run only)
        args.py_spy.mkdir(parents=True, exist_ok=True)
        out = args.py_spy / f"{name}.txt"
        spy = py_spy_record(proc_pid, out, args.seconds, "--threads", "-r", "50")
    await asyncio.gather(sample_queue(), *clients)
    elapsed = time.monotonic() - started
    depths.append((elapsed, await queue_depth(engine)))
    server = cpu_seconds(proc_pid) - supervisor_cpu
    per_worker = {p: cpu_seconds(p) - server_cpu[p] for p in workers}
    client_used = time.process_time() - client_cpu
    if spy is not None:
        await asyncio.to_thread(spy.wait, 120)
    busiest = busiest_threads(threads_before, threads(proc_pid), roles, elapsed)
    pg_after = postgres_cpu(postmaster) if postmaster else {}
    postgres = {
        k: round((v - pg_before.get(k, 0.0)) / elapsed, 3)
        for k, v in sorted(pg_after.items())
        if v - pg_before.get(k, 0.0) > 0
    }
    load_end = os.getloadavg()

    result: dict[str, Any] = {
        "seconds": round(elapsed, 1),
        "queue_depth": {
            "start": depths[0][1],
            "end": depths[-1][1],
            "min": min(d for _, d in depths),
            "embedded_per_s": round((depths[0][1] - depths[-1][1]) / elapsed, 1),
            "samples": [[round(t, 1), d] for t, d in depths],
        },
        "pending_embeddings_seen": (
            {"first": window.pending[0][1], "last": window.pending[-1][1]} if window.pending else {}
        ),
        "statuses": dict(sorted(window.statuses.items())),
        "server_cpu_cores": round(server / elapsed, 2),
        # PostgreSQL's own processes (same machine), by kind; a child that started
        # before the window and exited in it counts whole under "exited children".
        "postgres_cpu_cores": postgres,
        "worker_cpu_cores": {label(p): round(c / elapsed, 2) for p, c in per_worker.items()},
        "client_cpu_cores": round(client_used / elapsed, 2),
        "load_average": {
            "start": [round(x, 2) for x in load_start],
            "end": [round(x, 2) for x in load_end],
        },
        "busiest_threads": busiest,
        "embedding_worker_pid": holder,
        "connections": dict(sorted(placement.items())),
        "threads_by_nice": threads_by_nice(proc_pid, workers),
    }
    for kind, samples in window.latencies.items():
        result[kind] = _stats([s for s, _ in samples], elapsed)
        by: dict[str, list[float]] = defaultdict(list)
        for s, pid in samples:
            by[label(pid)].append(s)
        result[kind]["by_worker"] = {k: _stats(v, elapsed) for k, v in sorted(by.items())}
    _print_phase(name, result)
    return result


def _print_phase(name: str, r: dict[str, Any]) -> None:
    q = r["queue_depth"]
    load = r["load_average"]
    print(
        f"\n{name}: {r['seconds']:.0f} s, queue {q['start']} -> {q['end']} (min {q['min']},"
        f" {q['embedded_per_s']} embedded/s), server {r['server_cpu_cores']} cores"
        f" {r['worker_cpu_cores']}, clients {r['client_cpu_cores']} cores,"
        f" load {load['start'][0]:.2f} -> {load['end'][0]:.2f}, statuses {r['statuses']}"
    )
    print(f"  {'':<28}{'n':>6}{'req/s':>8}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}")
    for kind in ("list", "search"):
        if kind not in r:
            continue
        rows = [(kind, r[kind])] + [(f"  {k}", v) for k, v in r[kind]["by_worker"].items()]
        for label, s in rows:
            if s["n"]:
                print(
                    f"  {label:<28}{s['n']:>6}{s['per_s']:>8}{s['p50_ms']:>9}"
                    f"{s['p95_ms']:>9}{s['p99_ms']:>9}"
                )
    if r.get("postgres_cpu_cores"):
        pg = r["postgres_cpu_cores"]
        print(f"  PostgreSQL: {sum(pg.values()):.2f} cores {pg}")
    print("  busiest server threads (cores):")
    for t in r["busiest_threads"]:
        print(
            f"    {t['cores']:>6.3f}  nice {t['nice']:>3}  {t['role']}"
            f" {t['pid']}/{t['tid']} {t['thread']}"
        )


def _print_memory(label: str, procs: list[dict[str, Any]]) -> dict[str, float]:
    rss = sum(p["rss_mb"] for p in procs)
    pss = sum(p["pss_mb"] for p in procs)
    print(f"\nmemory, {label}: total RSS {rss:.0f} MB, total PSS {pss:.0f} MB (shared pages split)")
    for p in procs:
        model = ", onnxruntime loaded" if p["onnxruntime"] else ""
        print(
            f"  {p['role']:<22} pid {p['pid']:>7}  RSS {p['rss_mb']:>6.1f}"
            f"  PSS {p['pss_mb']:>6.1f}{model}"
        )
    return {"rss_mb": round(rss, 1), "pss_mb": round(pss, 1)}


async def warm_searches(base: str, token: str, n: int) -> None:
    """Searches on fresh connections, so every worker has answered some."""
    rng = random.Random(7)
    for _ in range(n):
        async with httpx.AsyncClient(
            base_url=base, timeout=120, headers={"Authorization": f"Bearer {token}"}
        ) as http:
            r = await http.get("/api/v1/memos:search", params={"query": search_query(rng)})
            r.raise_for_status()
            (await http.get("/api/v1/memos", params={"pageSize": 50})).raise_for_status()


async def run(args: argparse.Namespace) -> dict[str, Any]:
    report: dict[str, Any] = {
        "dialect": args.dialect,
        "workers": args.workers,
        "model": args.model,
        "base_memos": args.base,
        "backlog_memos": args.backlog,
        "seconds": args.seconds,
        "list_clients": args.list_clients,
        "search_clients": args.search_clients,
        "think_ms": args.think_ms,
        "cpus": os.cpu_count(),
        "uptime_before": uptime(),
    }
    print("load before:", report["uptime_before"])
    env = {"DAYBOOK_EMBED_WORKER": "1", "DAYBOOK_EMBEDDING_MODEL": args.model}
    # The page cache (decision 0048) answers repeated lists while nothing is
    # written, and the backlog's commits end it: with it on, idle would
    # compare kept answers against computed ones.
    env["DAYBOOK_PAGE_CACHE_BYTES"] = str(args.page_cache_bytes)
    report["page_cache_bytes"] = args.page_cache_bytes
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="bench-backlog-") as tmp:
        work = pathlib.Path(tmp)
        async with fresh_database(args.dialect, work) as db:
            report["server_version"] = db.server_version
            engine = create_engine(db.url)

            def serve(settings: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
                return start_server(db.url, work / "data", args.workers, ready_s=300, env=settings)

            async def warm(base: str, token: str) -> None:
                """Every worker has loaded the query model and answered searches."""
                await asyncio.sleep(5)
                await warm_searches(base, token, 4 * args.workers)

            proc, base = serve(env)
            try:
                async with httpx.AsyncClient(base_url=base, timeout=60) as http:
                    token = await _user(http, "holder", "")
                await asyncio.sleep(3)
                empty = processes(proc.pid, await lease_holder(engine))
                report["memory_empty_start"] = {
                    "processes": empty,
                    **_print_memory("empty instance at start (worker model only)", empty),
                }
                print(f"base corpus: {args.base} memos")
                await create_memos(base, token, args.base, rng)
                drained = await wait_drained(engine, args.drain_timeout)
                print(f"  embedded in {drained:.0f} s after the last create")
                # Restarted as an instance with notes starts: every worker warms
                # the query model and the vectors; the lease holder loads its own.
                stop_server(proc)
                proc, base = serve(env)
                await warm(base, token)
                await asyncio.sleep(3)
                holder = await lease_holder(engine)
                idle_procs = processes(proc.pid, holder)
                report["memory_idle"] = {
                    "processes": idle_procs,
                    **_print_memory("idle, models loaded", idle_procs),
                    "maps": {},
                }
                for p in idle_procs:
                    if p["role"].startswith(("worker", "supervisor", "markdown pool")):
                        top = memory_map(p["pid"])
                        report["memory_idle"]["maps"][str(p["pid"])] = top
                        print(f"  {p['role']} {p['pid']} RSS by mapping (MB): {top[:6]}")
                report["idle"] = await phase("idle", base, token, proc.pid, engine, args)

                print(f"\nbacklog: {args.backlog} memos")
                if args.held:
                    # The same corpus and queue, nothing embedding: a server
                    # without the worker takes the backlog and is measured,
                    # then one with it measures the backlog draining.
                    stop_server(proc)
                    proc, base = serve({**env, "DAYBOOK_EMBED_WORKER": "0"})
                t0 = time.perf_counter()
                report["backlog_create_memos_per_s"] = round(
                    await create_memos(base, token, args.backlog, rng), 1
                )
                report["backlog_create_s"] = round(time.perf_counter() - t0, 1)
                if args.held:
                    await warm(base, token)
                    report["held"] = await phase("held", base, token, proc.pid, engine, args)
                    stop_server(proc)
                    proc, base = serve(env)
                    await warm(base, token)
                report["backlog"] = await phase("backlog", base, token, proc.pid, engine, args)
                if report["backlog"]["queue_depth"]["min"] == 0:
                    print("  WARNING: the queue emptied inside the window: grow --backlog")
                report["memory_backlog_end"] = _print_memory(
                    "end of the backlog window", processes(proc.pid, await lease_holder(engine))
                )
                if args.after:
                    drained = await wait_drained(engine, args.drain_timeout)
                    print(f"  drained {drained:.0f} s after the window")
                    report["drain_after_window_s"] = round(drained, 1)
                    report["after"] = await phase("after", base, token, proc.pid, engine, args)
                    report["memory_after"] = _print_memory(
                        "idle after the backlog", processes(proc.pid, await lease_holder(engine))
                    )
            finally:
                stop_server(proc)
                await engine.dispose()
    report["uptime_after"] = uptime()
    _summary(report)
    print("load after:", report["uptime_after"])
    return report


def _summary(report: dict[str, Any]) -> None:
    ratios: dict[str, float] = {}
    print("\nsummary (p95 ratio, backlog over each idle phase; target list <= 1.5x):")
    for against in ("held", "idle", "after"):
        if against not in report:
            continue
        for kind in ("list", "search"):
            a, b = report[against].get(kind, {}), report["backlog"].get(kind, {})
            if a.get("n") and b.get("n"):
                ratio = b["p95_ms"] / a["p95_ms"]
                ratios[f"{kind}_p95_backlog_over_{against}"] = round(ratio, 2)
                print(
                    f"  {kind:<7} p95 {a['p95_ms']:>7} ms {against:<6} {b['p95_ms']:>7} ms backlog"
                    f"  = {ratio:.2f}x   (p50 {a['p50_ms']} -> {b['p50_ms']} ms)"
                )
    report["ratios"] = ratios
    mem = report["memory_idle"]
    print(
        f"  idle memory with the model loaded: RSS {mem['rss_mb']:.0f} MB total"
        f" (PSS {mem['pss_mb']:.0f} MB); target < 300 MB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_options(parser, seconds=60.0, seed=15, out=True)
    parser.add_argument("--backlog", type=int, default=20_000, help="memos created at once")
    parser.add_argument("--base", type=int, default=2_000, help="memos embedded before idle")
    parser.add_argument("--workers", type=int, default=2, help="serve --workers")
    parser.add_argument("--model", default="minilm-onnx", help="DAYBOOK_EMBEDDING_MODEL")
    parser.add_argument("--list-clients", type=int, default=4)
    parser.add_argument("--search-clients", type=int, default=2)
    parser.add_argument(
        "--think-ms", type=float, default=100.0, help="mean think time per client (0: closed loop)"
    )
    parser.add_argument(
        "--py-spy",
        type=pathlib.Path,
        metavar="DIR",
        help="record each window with py-spy into DIR/<phase>.txt (diagnosis: it costs CPU)",
    )
    parser.add_argument("--drain-timeout", type=float, default=1800.0)
    parser.add_argument(
        "--page-cache-bytes",
        type=int,
        default=0,
        help="DAYBOOK_PAGE_CACHE_BYTES (default 0: every phase computes its lists)",
    )
    parser.add_argument(
        "--no-after", dest="after", action="store_false", help="skip the idle phase after the drain"
    )
    parser.add_argument(
        "--no-held",
        dest="held",
        action="store_false",
        help="skip the idle phase on the backlog's corpus before its embedding starts",
    )
    args = parser.parse_args()
    report = asyncio.run(run(args))
    RESULTS.mkdir(exist_ok=True)
    out = pathlib.Path(args.out) if args.out else RESULTS / f"embed_backlog-{args.dialect}.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out}")
    ratio = report["ratios"].get("list_p95_backlog_over_held") or report["ratios"].get(
        "list_p95_backlog_over_idle"
    )
    sys.exit(0 if ratio is not None else 1)


if __name__ == "__main__":
    main()
