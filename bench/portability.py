"""Moving in and out: ``import-memos-db``, export and import of N memos with A attachments.

    .venv/bin/python -m bench.portability --dialect sqlite --memos 100000 --attachments 1000
    .venv/bin/python -m bench.portability --dialect postgresql --memos 100000 --attachments 1000

What it does, per size (``--memos`` and, to show how memory scales, one
tenth of it; ``--sizes`` overrides):

1. Builds a Memos 0.26 SQLite database with Memos' own DDL
   (``tests/portability/memos_ddl/sqlite-0.26.sql``): one user, N memos of
   50-600 characters of Markdown (``bench.corpus``), 3% comments, 2% with a
   reference, A attachments of 4-64 KiB stored as database blobs.
2. ``import-memos-db --dry-run`` (counts only, rolled back: the database stays
   empty), then ``import-memos-db``: carries it into a fresh, migrated Daybook
   database, then again (idempotent: nothing changes).
3. Export: streams that user's archive to a file.
4. Import: imports the archive into a second fresh Daybook database.

Each of 2-4 runs in its own process (the code the CLI runs, no HTTP), so its
peak RSS (``ru_maxrss``) is its own; the table shows seconds, memos per
second, peak RSS and the archive size. RSS should not grow with the archive:
compare the two sizes (the ZIP central directory, ~0.27 KB per entry, is
the one thing a ZIP writer must hold until the end). Results go to
``bench/results/portability-<dialect>-<N>.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import json
import os
import pathlib
import pty
import random
import re
import sqlite3
import struct
import subprocess
import sys
import tempfile
import termios
import time
from collections.abc import Callable
from typing import Any

from bench.corpus import content_pool, creator_weights
from bench.databases import BenchDatabase, _autocommit, fresh_database, migrate
from bench.harness import add_options
from bench.timing import markdown_table, step

ROOT = pathlib.Path(__file__).resolve().parents[1]
DDL = ROOT / "tests" / "portability" / "memos_ddl" / "sqlite-0.26.sql"
RESULTS = ROOT / "bench" / "results"


BCRYPT = "$2a$10$7EqJtq98hPqEX7fNZaFWoOhi5BWX4Z8/6pKq4xQ2Uu5Zs1xGfXm1e"


def memos_username(user_id: int) -> str:
    """User 1 is ``steven`` (the one who exports); the others ``user0002``..."""
    return "steven" if user_id == 1 else f"user{user_id:04d}"


def build_memos_db(
    path: pathlib.Path, memos: int, attachments: int, seed: int = 7, users: int = 1
) -> None:
    """A Memos 0.26 SQLite database made with Memos' own DDL.

    With ``users`` > 1 the creators are Zipf-distributed (``bench.corpus``) and the
    memos 60% PRIVATE / 30% PROTECTED / 10% PUBLIC, 3% ARCHIVED (the search
    benchmark's corpus, carried in by ``import-memos-db``); with one user every memo
    is that user's, PRIVATE (the export/import benchmark)."""
    rng = random.Random(seed)
    db = sqlite3.connect(path)
    db.executescript(DDL.read_text())
    db.execute("PRAGMA synchronous=OFF")
    db.executemany(
        "INSERT INTO user (id, username, role, password_hash, nickname) VALUES (?,?,?,?,?)",
        [
            (u, memos_username(u), "ADMIN" if u == 1 else "USER", BCRYPT, f"User {u}")
            for u in range(1, users + 1)
        ],
    )
    pool = content_pool(4000, rng)
    weights = creator_weights(users)
    creators = list(range(1, users + 1))

    base = 1_600_000_000
    rows = []
    creator_of = [0] * (memos + 1)
    for i in range(1, memos + 1):
        body = pool[i % len(pool)]
        ts = base + i * 97
        if users == 1:
            creator, visibility, status = 1, "PRIVATE", "NORMAL"
        else:
            creator = rng.choices(creators, cum_weights=weights)[0]
            r = rng.random()
            visibility = "PRIVATE" if r < 0.6 else "PROTECTED" if r < 0.9 else "PUBLIC"
            status = "ARCHIVED" if rng.random() < 0.03 else "NORMAL"
        creator_of[i] = creator
        rows.append(
            (
                i,
                f"m{i:07d}",
                creator,
                ts,
                ts + 5,
                status,
                body.text,
                visibility,
                int(i % 100 == 0),
                "{}",
            )
        )
        if len(rows) == 5000:
            _memo_rows(db, rows)
            rows = []
    _memo_rows(db, rows)
    relations = []
    for i in range(1, memos + 1):
        if i % 33 == 0 and i > 1:
            relations.append((i, rng.randrange(1, i), "COMMENT"))
        elif i % 50 == 0 and i > 1:
            relations.append((i, rng.randrange(1, i), "REFERENCE"))
    db.executemany("INSERT OR IGNORE INTO memo_relation VALUES (?, ?, ?)", relations)
    for a in range(1, attachments + 1):
        data = rng.randbytes(rng.randrange(4096, 65536))
        memo_id = 1 + (a * 97) % memos
        db.execute(
            "INSERT INTO attachment (id, uid, creator_id, filename, blob, type, size, memo_id,"
            " storage_type) VALUES (?, ?, ?, ?, ?, 'application/octet-stream', ?, ?, 'DATABASE')",
            (a, f"a{a:06d}", creator_of[memo_id], f"file {a}.bin", data, len(data), memo_id),
        )
    db.commit()
    db.close()


def _memo_rows(db: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> None:
    db.executemany(
        "INSERT INTO memo (id, uid, creator_id, created_ts, updated_ts, row_status, content,"
        " visibility, pinned, payload) VALUES (?,?,?,?,?,?,?,?,?,?)",
        rows,
    )


# --- the phases: the real CLI, each in its own process, on a terminal ------------------

DAYBOOK = pathlib.Path(sys.executable).with_name("daybook")
_PCT = re.compile(rb"(\d{1,3})%")
_LABEL = re.compile(rb"(validating|importing|planning|exporting|carrying)")


def run_cli(argv: list[str]) -> dict[str, Any]:
    """Run ``daybook ARGV`` on a pseudo-terminal (so click draws its progress bar as
    a person would see it), and measure it: wall seconds, the process's own peak
    RSS (``wait4``), and the bar: how many frames it drew, the percentage shown at
    a quarter, half and three quarters of the run, and the last one."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    started = time.perf_counter()
    proc = subprocess.Popen(
        [str(DAYBOOK), *argv], stdin=slave, stdout=slave, stderr=slave, cwd=ROOT, close_fds=True
    )
    os.close(slave)
    frames: list[tuple[float, int]] = []
    labels: dict[str, int] = {}
    chunks: list[bytes] = []
    while True:
        try:
            data = os.read(master, 1 << 16)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
        found = _PCT.findall(data)
        if found:
            frames.append((time.perf_counter() - started, int(found[-1])))
            for label in _LABEL.findall(data):
                labels[label.decode()] = labels.get(label.decode(), 0) + 1
    os.close(master)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    output = b"".join(chunks).decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        sys.stderr.write(output[-4000:])
        raise SystemExit(f"daybook {' '.join(argv[:1])} failed")

    def shown_at(fraction: float) -> int | None:
        before = [pct for t, pct in frames if t <= seconds * fraction]
        return before[-1] if before else None

    lines = [ln.strip() for ln in output.replace("\r", "\n").splitlines() if ln.strip()]
    return {
        "seconds": round(seconds, 2),
        "rss_mb": round(usage.ru_maxrss / 1024, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "progress": {
            "frames": len(frames),
            "first_s": round(frames[0][0], 2) if frames else None,
            "at_25": shown_at(0.25),
            "at_50": shown_at(0.5),
            "at_75": shown_at(0.75),
            "last": frames[-1][1] if frames else None,
            "bars": labels,
        },
        # The report's head (the counts) and tail; a long problem list in between is cut.
        "summary": _head_and_tail([ln for ln in lines if "%" not in ln], 40, 20),
    }


def _head_and_tail(lines: list[str], head: int, tail: int) -> list[str]:
    return lines if len(lines) <= head + tail else [*lines[:head], "...", *lines[-tail:]]


def carried(summary: list[str]) -> dict[str, int]:
    """The ``carried`` column of ``import-memos-db``'s report."""
    out = {}
    for line in summary:
        m = re.match(r"(\w+)s\s+carried\s+(\d+)\s+already here\s+(\d+)", line)
        if m:
            out[m.group(1)] = int(m.group(2))
            out[m.group(1) + "_existing"] = int(m.group(3))
    return out


async def _second_database(db: BenchDatabase, workdir: pathlib.Path) -> str:
    if db.dialect == "sqlite":
        url = f"sqlite:///{workdir / 'target.db'}"
    else:
        root = db.url.replace("/daybook_bench?", "/postgres?")
        await _autocommit(root, "DROP DATABASE IF EXISTS daybook_target WITH (FORCE)")
        await _autocommit(root, "CREATE DATABASE daybook_target")
        url = db.url.replace("/daybook_bench?", "/daybook_target?")
    await migrate(url)
    from app.db.engine import create_engine
    from app.db.schema import user_account

    engine = create_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.execute(
                user_account.insert().values(
                    username="steven",
                    role="USER",
                    state="NORMAL",
                    password_hash="x",
                    created_ts=0,
                    updated_ts=0,
                )
            )
    finally:
        await engine.dispose()
    return url


async def _count(url: str, sql: str) -> int:
    from app.db.engine import create_engine

    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            return int((await conn.exec_driver_sql(sql)).scalar_one())
    finally:
        await engine.dispose()


def _db(url: str, data: pathlib.Path) -> list[str]:
    return ["--database-url", url, "--data", str(data)]


ALL_STEPS = ("dry-run", "carry", "again", "export", "import")


async def one_size(
    dialect: str,
    memos: int,
    attachments: int,
    workdir: pathlib.Path,
    sink: Callable[[dict[str, Any]], None] = lambda r: None,
    steps: tuple[str, ...] = ALL_STEPS,
    source: pathlib.Path | None = None,
    archive_in: pathlib.Path | None = None,
) -> dict[str, Any]:
    """The steps at one size; ``sink`` gets the result so far after each one
    (so an interrupted long run keeps what it measured). ``source``: a Memos
    database already built by :func:`build_memos_db` (``--memos-db``)."""
    out: dict[str, Any] = {"memos": memos, "attachments": attachments, "steps": list(steps)}
    if source is None and archive_in is None:
        step(f"{dialect}: building a Memos 0.26 database of {memos} memos, {attachments} files")
        source = workdir / "memos.db"
        build_memos_db(source, memos, attachments)
    async with fresh_database(dialect, workdir) as db:
        data, target_data = workdir / "data", workdir / "target-data"
        if archive_in is not None:  # only the import, of an archive another run exported
            out["archive_bytes"] = os.stat(archive_in).st_size
            await _import_step(db, workdir, archive_in, target_data, out, sink)
            return out
        if "dry-run" in steps:
            step("daybook import-memos-db --dry-run")
            dry = run_cli(["import-memos-db", *_db(db.url, data), "--dry-run", str(source)])
            dry["carried"] = carried(dry["summary"])
            dry["wrote_nothing"] = await _count(db.url, "SELECT count(*) FROM memo") == 0
            out["import_memos_db_dry_run"] = dry
            sink(out)
            step(f"  {dry['seconds']:.1f}s, {dry['rss_mb']:.0f} MB")
        if not {"carry", "again", "export", "import"} & set(steps):
            return out
        step("daybook import-memos-db")
        first = run_cli(["import-memos-db", *_db(db.url, data), str(source)])
        first["carried"] = carried(first["summary"])
        out["import_memos_db"] = first
        sink(out)
        step(f"  {first['seconds']:.1f}s, {first['rss_mb']:.0f} MB")
        if "again" in steps:
            memo_rows = await _count(db.url, "SELECT count(*) FROM memo")
            events = await _count(db.url, "SELECT count(*) FROM memo_event")
            again = run_cli(["import-memos-db", *_db(db.url, data), str(source)])
            again["carried"] = carried(again["summary"])
            again["unchanged"] = (
                await _count(db.url, "SELECT count(*) FROM memo") == memo_rows
                and await _count(db.url, "SELECT count(*) FROM memo_event") == events
                and not any(v for k, v in again["carried"].items() if not k.endswith("_existing"))
            )
            out["import_memos_db_again"] = again
            sink(out)
            step(f"  again: {again['seconds']:.1f}s, unchanged: {again['unchanged']}")
        if not {"export", "import"} & set(steps):
            return out
        archive = workdir / "archive.zip"
        step("daybook export")
        exported = run_cli(["export", *_db(db.url, data), "--user", "steven", "-o", str(archive)])
        exported["archive_bytes"] = archive.stat().st_size
        out["export"] = exported
        out["archive_bytes"] = exported["archive_bytes"]
        sink(out)
        step(f"  {exported['seconds']:.1f}s, {exported['rss_mb']:.0f} MB")
        if "import" in steps:
            await _import_step(db, workdir, archive, target_data, out, sink)
    return out


async def _import_step(
    db: BenchDatabase,
    workdir: pathlib.Path,
    archive: pathlib.Path,
    target_data: pathlib.Path,
    out: dict[str, Any],
    sink: Callable[[dict[str, Any]], None],
) -> None:
    target = await _second_database(db, workdir)
    step("daybook import")
    imported = run_cli(["import", *_db(target, target_data), "--user", "steven", str(archive)])
    imported["memos_after"] = await _count(target, "SELECT count(*) FROM memo")
    step(f"  {imported['seconds']:.1f}s, {imported['rss_mb']:.0f} MB")
    out["import"] = imported
    sink(out)


STEPS = ("import_memos_db_dry_run", "import_memos_db", "import_memos_db_again", "export", "import")


def table(results: list[dict[str, Any]]) -> str:
    rows = []
    for r in results:
        for name in STEPS:
            if name not in r:
                continue
            p = r[name]
            bar = p["progress"]
            rows.append(
                [
                    f"{r['memos']:,}",
                    name.replace("_", "-")
                    .replace("-again", " (again)")
                    .replace("-dry-run", " --dry-run"),
                    f"{p['seconds']:.1f}",
                    f"{p['cpu_s']:.1f}",
                    f"{r['memos'] / p['seconds']:,.0f}",
                    f"{p['rss_mb']:.0f}",
                    f"{r['archive_bytes'] / 1e6:.1f}" if name == "export" else "",
                    f"{bar['frames']}: {bar['at_25']}/{bar['at_50']}/{bar['at_75']}/{bar['last']}%",
                ]
            )
    return markdown_table(
        [
            "memos",
            "step",
            "seconds",
            "CPU s",
            "memos/s",
            "peak RSS MB",
            "archive MB",
            "bar frames: % at 1/4, 1/2, 3/4, end",
        ],
        rows,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_options(parser, memos=100_000)
    parser.add_argument("--attachments", type=int, default=1000)
    parser.add_argument("--sizes", type=str, default="", help="comma-separated memo counts")
    parser.add_argument("--workdir", default=None, help="where the databases go (default: /tmp)")
    parser.add_argument(
        "--steps",
        default=",".join(ALL_STEPS),
        help=f"which steps, comma-separated, of {','.join(ALL_STEPS)} (export and import"
        " need the carry, which they run)",
    )
    parser.add_argument(
        "--memos-db", default=None, help="a Memos database built by --build-only (one size)"
    )
    parser.add_argument(
        "--build-only", default=None, help="only build the Memos database of --memos to this path"
    )
    parser.add_argument("--tag", default="", help="suffix of the results file")
    parser.add_argument(
        "--archive", default=None, help="only import this archive (another run's export)"
    )
    args = parser.parse_args()
    if args.build_only:
        step(f"building a Memos 0.26 database of {args.memos} memos, {args.attachments} files")
        build_memos_db(pathlib.Path(args.build_only), args.memos, args.attachments)
        return
    steps = tuple(s for s in args.steps.split(",") if s)
    if unknown := set(steps) - set(ALL_STEPS):
        parser.error(f"unknown steps: {sorted(unknown)}")
    sizes = (
        [int(s) for s in args.sizes.split(",")] if args.sizes else [args.memos // 10, args.memos]
    )
    results: list[dict[str, Any]] = []
    load: dict[str, Any] = {"start": os.getloadavg()}
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"portability-{args.dialect}-{sizes[-1]}{args.tag}.json"

    def save(partial: dict[str, Any] | None = None) -> None:
        load["now"] = os.getloadavg()
        done = results + ([partial] if partial is not None else [])
        report = {
            "dialect": args.dialect,
            "argv": sys.argv[1:],
            "load": load,
            "cpus": os.cpu_count(),
            "results": done,
        }
        out.write_text(json.dumps(report, indent=2))

    for n in sizes:
        with tempfile.TemporaryDirectory(prefix="daybook-bench-port-", dir=args.workdir) as tmp:
            attachments = max(1, args.attachments * n // args.memos)
            results.append(
                asyncio.run(
                    one_size(
                        args.dialect,
                        n,
                        attachments,
                        pathlib.Path(tmp),
                        save,
                        steps,
                        pathlib.Path(args.memos_db) if args.memos_db else None,
                        pathlib.Path(args.archive) if args.archive else None,
                    )
                )
            )
    save()
    print(table(results))
    print(f"load average at start {load['start']}, at end {load['now']}")
    step(f"wrote {out}")


if __name__ == "__main__":
    main()
