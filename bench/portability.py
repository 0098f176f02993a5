"""Moving in and out: ``import-memos-db``, export and import of N memos with A attachments.

    .venv/bin/python -m bench.portability --dialect sqlite --memos 100000 --attachments 1000
    .venv/bin/python -m bench.portability --dialect postgresql --memos 100000 --attachments 1000

What it does, per size (``--memos`` and, to show how memory scales, one
tenth of it; ``--sizes`` overrides):

1. Builds a Memos 0.26 SQLite database with Memos' own DDL
   (``tests/portability/memos_ddl/sqlite-0.26.sql``): one user, N memos of
   50-600 characters of Markdown (``bench.corpus``), 3% comments, 2% with a
   reference, A attachments of 4-64 KiB stored as database blobs.
2. ``import-memos-db``: carries it into a fresh, migrated Daybook database.
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
import json
import os
import pathlib
import random
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from typing import Any

from bench.corpus import content_pool
from bench.databases import BenchDatabase, _autocommit, fresh_database, migrate
from bench.timing import markdown_table, step

ROOT = pathlib.Path(__file__).resolve().parents[1]
DDL = ROOT / "tests" / "portability" / "memos_ddl" / "sqlite-0.26.sql"
RESULTS = ROOT / "bench" / "results"


def build_memos_db(path: pathlib.Path, memos: int, attachments: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    db = sqlite3.connect(path)
    db.executescript(DDL.read_text())
    db.execute("PRAGMA synchronous=OFF")
    db.execute(
        "INSERT INTO user (id, username, role, password_hash, nickname) VALUES (1, 'steven',"
        " 'ADMIN', '$2a$10$7EqJtq98hPqEX7fNZaFWoOhi5BWX4Z8/6pKq4xQ2Uu5Zs1xGfXm1e', 'Steven')"
    )
    pool = content_pool(4000, rng)

    base = 1_600_000_000
    rows = []
    for i in range(1, memos + 1):
        body = pool[i % len(pool)]
        ts = base + i * 97
        rows.append(
            (i, f"m{i:07d}", 1, ts, ts + 5, "NORMAL", body.text, "PRIVATE", int(i % 100 == 0), "{}")
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
        db.execute(
            "INSERT INTO attachment (id, uid, creator_id, filename, blob, type, size, memo_id,"
            " storage_type) VALUES (?, ?, 1, ?, ?, 'application/octet-stream', ?, ?, 'DATABASE')",
            (a, f"a{a:06d}", f"file {a}.bin", data, len(data), 1 + (a * 97) % memos),
        )
    db.commit()
    db.close()


def _memo_rows(db: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> None:
    db.executemany(
        "INSERT INTO memo (id, uid, creator_id, created_ts, updated_ts, row_status, content,"
        " visibility, pinned, payload) VALUES (?,?,?,?,?,?,?,?,?,?)",
        rows,
    )


# --- the phases, each in its own process ------------------------------------------------


async def _phase(args: argparse.Namespace) -> dict[str, Any]:
    from app.db.engine import create_engine
    from app.settings import Settings

    settings = Settings(
        data_dir=pathlib.Path(args.data), database_url=args.url, secret="bench"
    ).resolved()
    engine = create_engine(settings.database_url)
    started = time.perf_counter()
    out: dict[str, Any] = {}
    try:
        if args.phase == "import-memos-db":
            from app.portability.memosdb.carry import CarryOptions, carry
            from app.portability.memosdb.source import open_source

            async with open_source(pathlib.Path(args.source), None) as source:
                report = await carry(engine, source, CarryOptions(settings.data_dir, None))
            out["carried"] = dict(report.carried)
        elif args.phase == "export":
            from app.access.audience import AccessMode
            from app.portability.cli import _local_caller
            from app.portability.export import ExportRequest, export_archive
            from app.portability.units import read_snapshot

            async with read_snapshot(engine) as conn:
                caller, _ = await _local_caller(conn, "steven", "bench")
            size = 0
            with pathlib.Path(args.archive).open("wb") as fh:  # noqa: ASYNC230
                req = ExportRequest(caller, AccessMode.PRIVATE, settings.data_dir)
                async for chunk in export_archive(engine, req):
                    fh.write(chunk)
                    size += len(chunk)
            out["archive_bytes"] = size
        else:
            from app.db.schema import user_account
            from app.portability.cli import _local_caller
            from app.portability.plan import Policy
            from app.portability.routes import import_archive_file
            from app.portability.staging import Staging
            from app.portability.units import read_snapshot, write_unit

            async with write_unit(engine) as conn:
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
            async with read_snapshot(engine) as conn:
                caller, _ = await _local_caller(conn, "steven", "bench")
            with Staging(settings.data_dir / "tmp") as staging:
                plan = await import_archive_file(
                    engine,
                    settings,
                    caller,
                    pathlib.Path(args.archive),
                    staging,
                    Policy.SKIP,
                    False,
                    int(time.time()),
                )
            out["inserted"] = plan.inserted
            out["attachments"] = plan.attachments_stored
    finally:
        await engine.dispose()
    out["seconds"] = time.perf_counter() - started
    out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def run_phase(phase: str, **kw: str) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "bench.portability", "--phase", phase]
    for k, v in kw.items():
        cmd += [f"--{k}", v]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT)
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-4000:])
        raise SystemExit(f"phase {phase} failed")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


async def _second_database(db: BenchDatabase, workdir: pathlib.Path) -> str:
    if db.dialect == "sqlite":
        url = f"sqlite:///{workdir / 'target.db'}"
    else:
        root = db.url.replace("/daybook_bench?", "/postgres?")
        await _autocommit(root, "DROP DATABASE IF EXISTS daybook_target WITH (FORCE)")
        await _autocommit(root, "CREATE DATABASE daybook_target")
        url = db.url.replace("/daybook_bench?", "/daybook_target?")
    await migrate(url)
    return url


async def one_size(
    dialect: str, memos: int, attachments: int, workdir: pathlib.Path
) -> dict[str, Any]:
    step(f"{dialect}: building a Memos 0.26 database of {memos} memos, {attachments} attachments")
    source = workdir / "memos.db"
    build_memos_db(source, memos, attachments)
    async with fresh_database(dialect, workdir) as db:
        data, target_data = workdir / "data", workdir / "target-data"
        step("import-memos-db")
        carried = run_phase("import-memos-db", url=db.url, data=str(data), source=str(source))
        archive = workdir / "archive.zip"
        step("export")
        exported = run_phase("export", url=db.url, data=str(data), archive=str(archive))
        target = await _second_database(db, workdir)
        step("import")
        imported = run_phase("import", url=target, data=str(target_data), archive=str(archive))
    return {
        "memos": memos,
        "attachments": attachments,
        "import_memos_db": carried,
        "export": exported,
        "import": imported,
    }


def table(results: list[dict[str, Any]]) -> str:
    rows = []
    for r in results:
        for name in ("import_memos_db", "export", "import"):
            p = r[name]
            rows.append(
                [
                    f"{r['memos']:,}",
                    name.replace("_", "-"),
                    f"{p['seconds']:.1f}",
                    f"{r['memos'] / p['seconds']:,.0f}",
                    f"{p['rss_mb']:.0f}",
                    f"{r['export']['archive_bytes'] / 1e6:.1f}" if name == "export" else "",
                ]
            )
    return markdown_table(
        ["memos", "step", "seconds", "memos/s", "peak RSS MB", "archive MB"], rows
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dialect", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--memos", type=int, default=100_000)
    parser.add_argument("--attachments", type=int, default=1000)
    parser.add_argument("--sizes", type=str, default="", help="comma-separated memo counts")
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    for hidden in ("url", "data", "source", "archive"):
        parser.add_argument(f"--{hidden}", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        print(json.dumps(asyncio.run(_phase(args))))
        return
    sizes = (
        [int(s) for s in args.sizes.split(",")] if args.sizes else [args.memos // 10, args.memos]
    )
    results = []
    for n in sizes:
        with tempfile.TemporaryDirectory(prefix="daybook-bench-port-") as tmp:
            attachments = max(1, args.attachments * n // args.memos)
            results.append(asyncio.run(one_size(args.dialect, n, attachments, pathlib.Path(tmp))))
    print(table(results))
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"portability-{args.dialect}-{sizes[-1]}.json"
    out.write_text(
        json.dumps({"dialect": args.dialect, "load": os.getloadavg(), "results": results}, indent=2)
    )
    step(f"wrote {out}")


if __name__ == "__main__":
    main()
