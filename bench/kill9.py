# ruff: noqa: ASYNC212, ASYNC251  (a driver script: blocking setup between kills is intended)
"""Writers under load, SIGKILL, restart; then every acknowledged write checked exactly.

    .venv/bin/python -m bench.kill9 --dialect sqlite --kills 5 --workers 2

A real ``daybook serve`` takes creates and edits from ``--writers``
threads; once at least ``--min-writes`` of them were acknowledged in this
window, and after a random 1-3.5 s, it is killed with SIGKILL (no shutdown
of any kind) and started again, ``--kills`` times. Afterwards the database itself
is read: every acknowledged create exists with exactly its content, every
acknowledged edit's content is the memo's content or was superseded by a
later acknowledged edit of the same memo, no memo row lacks its tags or its
CREATE event (a partial write), and the integrity check is clean (SQLite
``PRAGMA integrity_check``; PostgreSQL: FTS/tag/event consistency queries).
Exit status 1 on any lost or partial write.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pathlib
import random
import re
import signal
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

import httpx
import sqlalchemy as sa

from app.db import schema
from app.db.engine import create_engine
from bench.databases import fresh_database
from bench.harness import add_options, start_server, stop_server
from bench.load import PASSWORD

TAG = re.compile(r"#(\w+)")


@dataclass
class Acked:
    creates: dict[str, str] = field(default_factory=dict)  # uid -> content
    edits: dict[str, list[str]] = field(default_factory=dict)  # uid -> contents, in ack order
    tried: dict[str, list[str]] = field(default_factory=dict)  # uid -> every edit sent, in order
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self) -> int:
        with self.lock:
            return len(self.creates) + sum(len(v) for v in self.edits.values())


def writer(base: str, token: str, tag: str, stop: threading.Event, acked: Acked) -> None:
    rng = random.Random(tag)
    auth = {"Authorization": f"Bearer {token}"}
    mine: list[str] = []
    i = 0
    with httpx.Client(base_url=base, headers=auth, timeout=10) as http:
        while not stop.is_set():
            i += 1
            try:
                if mine and rng.random() < 0.3:
                    uid = rng.choice(mine)
                    content = f"edit {tag}-{i} #e{i % 5}"
                    with acked.lock:
                        acked.tried.setdefault(uid, []).append(content)
                    r = http.patch(
                        f"/api/v1/memos/{uid}?updateMask=content", json={"content": content}
                    )
                    if r.status_code == 200:
                        with acked.lock:
                            acked.edits.setdefault(uid, []).append(content)
                else:
                    content = f"create {tag}-{i} #c{i % 7} #all"
                    r = http.post("/api/v1/memos", json={"content": content})
                    if r.status_code == 200:
                        uid = r.json()["name"].split("/")[1]
                        mine.append(uid)
                        with acked.lock:
                            acked.creates[uid] = content
                if r.status_code >= 500 and r.status_code != 503:
                    acked.errors.append(f"{r.status_code} {r.text[:100]}")
            except httpx.HTTPError:
                time.sleep(0.05)  # the server is down: retry after the restart


async def verify(url: str, acked: Acked) -> list[str]:
    problems: list[str] = []
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            rows = {r.uid: r for r in (await conn.execute(sa.select(schema.memo))).all()}
            tags: dict[int, set[str]] = {}
            for t in (await conn.execute(sa.select(schema.memo_tag))).all():
                tags.setdefault(t.memo_id, set()).add(t.tag)
            events: dict[int, list[tuple[str, int]]] = {}
            for e in (await conn.execute(sa.select(schema.memo_event))).all():
                events.setdefault(e.memo_id, []).append((e.kind, e.version))
            if engine.dialect.name == "sqlite":
                check = (await conn.exec_driver_sql("PRAGMA integrity_check")).scalars().all()
                if list(check) != ["ok"]:
                    problems.append(f"integrity_check: {check[:5]}")
                fts = (await conn.exec_driver_sql("SELECT count(*) FROM memo_fts")).scalar()
                if fts != len(rows):
                    problems.append(f"memo_fts has {fts} rows for {len(rows)} memos")
    finally:
        await engine.dispose()
    for uid, content in acked.creates.items():
        row = rows.get(uid)
        if row is None:
            problems.append(f"lost create {uid}")
            continue
        # The final content is the last acknowledged write or one sent after it
        # (committed, but its answer was cut by the kill).
        tried = acked.tried.get(uid, [])
        edits = acked.edits.get(uid, [])
        later = tried[tried.index(edits[-1]) :] if edits else [content, *tried]
        if row.content not in later:
            problems.append(f"memo {uid}: content {row.content!r} is not its last acknowledged")
    for uid, row in rows.items():
        if tags.get(row.id, set()) != set(TAG.findall(row.content)):
            problems.append(f"partial write: memo {uid} tags {tags.get(row.id)}")
        kinds = sorted(events.get(row.id, []), key=lambda e: e[1])
        if not kinds or kinds[0] != ("CREATE", 1) or kinds[-1][1] != row.version:
            problems.append(f"partial write: memo {uid} events {kinds} version {row.version}")
    return problems


async def run(args: argparse.Namespace) -> int:
    work = pathlib.Path(tempfile.mkdtemp(prefix="daybook-kill9-"))
    acked = Acked()
    async with fresh_database(args.dialect, work) as db:
        data = work / "data"
        proc, base = start_server(db.url, data, args.workers, ready_s=args.ready_timeout)
        with httpx.Client(base_url=base, timeout=30) as http:
            http.post("/api/v1/users", json={"username": "alice", "password": PASSWORD})
            r = http.post(
                "/api/v1/auth/signin",
                json={"passwordCredentials": {"username": "alice", "password": PASSWORD}},
            )
            token = r.json()["accessToken"]
        rng = random.Random(9)
        for kill in range(args.kills):
            stop = threading.Event()
            threads = [
                threading.Thread(target=writer, args=(base, token, f"{kill}.{w}", stop, acked))
                for w in range(args.writers)
            ]
            before = acked.count()
            for t in threads:
                t.start()
            time.sleep(rng.uniform(1.0, 3.0))
            # Strong on every dialect: each kill lands after at least --min-writes
            # acknowledged writes of its own window, mid-stream (a random moment).
            deadline = time.monotonic() + args.window_timeout
            while acked.count() - before < args.min_writes and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(rng.uniform(0.0, 0.5))
            os.killpg(proc.pid, signal.SIGKILL)  # the server and any workers
            proc.wait()
            stop.set()
            for t in threads:
                t.join(15)
            print(
                f"kill {kill + 1}: acknowledged creates so far {len(acked.creates)}, "
                f"edits {sum(len(v) for v in acked.edits.values())} "
                f"(+{acked.count() - before} in this window)",
                flush=True,
            )
            proc, base = start_server(db.url, data, args.workers, ready_s=args.ready_timeout)
        stop_server(proc)
        problems = await verify(db.url, acked)
    print(
        f"dialect={args.dialect} kills={args.kills} writers={args.writers} "
        f"acknowledged creates={len(acked.creates)} "
        f"edits={sum(len(v) for v in acked.edits.values())} 5xx(not 503)={len(acked.errors)}"
    )
    print(f"lost or partial writes: {len(problems)}")
    for p in problems[:20]:
        print("  ", p)
    return 1 if problems or acked.errors else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_options(
        parser,
    )
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--workers", type=int, default=1, help="serve --workers")
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument(
        "--min-writes",
        type=int,
        default=60,
        help="acknowledged writes in each window before its kill",
    )
    parser.add_argument(
        "--ready-timeout", type=float, default=300, help="seconds a restart may take to be ready"
    )
    parser.add_argument(
        "--window-timeout", type=float, default=120, help="longest wait for --min-writes"
    )
    sys.exit(asyncio.run(run(parser.parse_args())))


if __name__ == "__main__":
    main()
