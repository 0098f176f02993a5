"""Retention purge throughput: N expired trashed memos (with comments and attachment files).

    python -m bench.trash_purge --dialect sqlite --memos 100000 [--attachments 1000]
        [--workers 2] [--batch 500]

Seeds one user's trash directly (Core bulk inserts: memos in state TRASHED,
their ``memo_trash`` rows trashed 31 days ago, one comment per 10 memos, and
``--attachments`` local files), then runs the retention job
(:func:`app.memos.trash.purge_until_done`) with ``--workers`` concurrent
purgers on separate engines, as separate processes would. Reports wall time,
memos purged per second, and checks the exact outcome: every memo gone, every
file removed, one DELETE event per memo.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import pathlib
import secrets
import tempfile
import time
from typing import Any

import sqlalchemy as sa

from app.attachments.storage import AttachmentStore, StorageType
from app.db.engine import create_engine
from app.db.schema import attachment, memo, memo_event, memo_trash, user_account
from app.memos.trash import DAY, purge_until_done
from bench.databases import fresh_database
from bench.harness import add_options

CHUNK = 2000


def _new_file(files_dir: pathlib.Path) -> str:
    files_dir.mkdir(parents=True, exist_ok=True)
    key = secrets.token_hex(16)
    (files_dir / key).write_bytes(b"x" * 1024)
    return key


def _files_left(files_dir: pathlib.Path) -> int:
    return len(list(files_dir.iterdir())) if files_dir.exists() else 0


async def seed(url: str, files_dir: pathlib.Path, memos: int, attachments: int) -> int:
    now = int(time.time())
    trashed_ts = now - 31 * DAY
    engine = create_engine(url)
    total = 0
    try:
        async with engine.begin() as conn:
            user = (
                await conn.execute(
                    user_account.insert()
                    .values(
                        username="bench",
                        role="ADMIN",
                        state="NORMAL",
                        password_hash="x",
                        created_ts=now,
                        updated_ts=now,
                    )
                    .returning(user_account.c.id)
                )
            ).scalar_one()
        every = max(1, memos // attachments) if attachments else 0
        for start in range(0, memos, CHUNK):
            async with engine.begin() as conn:
                rows = [
                    {
                        "uid": f"m{i}",
                        "creator_id": user,
                        "content": f"memo {i} #bench some words to index",
                        "visibility": "PRIVATE",
                        "state": "TRASHED",
                        "created_ts": now - 40 * DAY + i,
                        "updated_ts": now - 40 * DAY + i,
                        "origin": {"kind": "session"},
                        "version": 2,
                    }
                    for i in range(start, min(memos, start + CHUNK))
                ]
                ids = (
                    await conn.execute(memo.insert().returning(memo.c.id, memo.c.uid), rows)
                ).all()
                by_uid = {u: int(i) for i, u in ids}
                roots = [by_uid[f"m{i}"] for i in range(start, min(memos, start + CHUNK))]
                comments = [
                    {**rows[k], "uid": f"c{start + k}", "parent_id": roots[k]}
                    for k in range(0, len(rows), 10)
                ]
                cids = (
                    (await conn.execute(memo.insert().returning(memo.c.id), comments))
                    .scalars()
                    .all()
                )
                trash = [
                    {
                        "memo_id": r,
                        "root_id": r,
                        "prior_state": "NORMAL",
                        "trashed_ts": trashed_ts,
                        "trashed_by": user,
                    }
                    for r in roots
                ] + [
                    {
                        "memo_id": int(c),
                        "root_id": roots[k * 10],
                        "prior_state": "NORMAL",
                        "trashed_ts": trashed_ts,
                        "trashed_by": user,
                    }
                    for k, c in enumerate(cids)
                ]
                await conn.execute(memo_trash.insert(), trash)
                files = []
                if every:
                    for k, r in enumerate(roots):
                        if (start + k) % every == 0 and (start + k) // every < attachments:
                            key = _new_file(files_dir)
                            files.append(
                                {
                                    "uid": f"a{start + k}",
                                    "creator_id": user,
                                    "memo_id": r,
                                    "filename": "f.bin",
                                    "mime_type": "application/octet-stream",
                                    "size": 1024,
                                    "storage_key": key,
                                    "created_ts": now,
                                    "storage_type": "LOCAL",
                                }
                            )
                if files:
                    await conn.execute(attachment.insert(), files)
                total += len(rows) + len(comments)
    finally:
        await engine.dispose()
    return total


async def count(url: str, stmt: Any) -> int:
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            return int((await conn.execute(stmt)).scalar_one())
    finally:
        await engine.dispose()


async def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="daybook-bench-") as tmp:
        workdir = pathlib.Path(tmp)
        async with fresh_database(args.dialect, workdir) as db:
            files_dir = workdir / "attachments"
            t0 = time.perf_counter()
            seeded = await seed(db.url, files_dir, args.memos, args.attachments)
            seed_s = time.perf_counter() - t0
            print(f"seeded {seeded} memos ({args.memos} roots) in {seed_s:.1f}s", flush=True)
            store = AttachmentStore(kind=StorageType.LOCAL, local_dir=files_dir)
            engines = [create_engine(db.url) for _ in range(args.workers)]
            now = int(time.time())
            t0 = time.perf_counter()
            try:
                runs = await asyncio.gather(
                    *(purge_until_done(e, store, now, args.batch) for e in engines)
                )
            finally:
                for e in engines:
                    await e.dispose()
            wall = time.perf_counter() - t0
            left = await count(db.url, sa.select(sa.func.count()).select_from(memo))
            events = await count(
                db.url, sa.select(sa.func.count()).where(memo_event.c.kind == "DELETE")
            )
            files_left = _files_left(files_dir)
            purged = sum(r.memos for r in runs)
            result = {
                "dialect": args.dialect,
                "server_version": db.server_version,
                "roots": args.memos,
                "memos": seeded,
                "attachments": args.attachments,
                "workers": args.workers,
                "batch": args.batch,
                "seed_s": round(seed_s, 1),
                "purge_s": round(wall, 2),
                "memos_per_s": round(purged / wall, 1),
                "per_worker": [r.memos for r in runs],
                "ok": purged == seeded and left == 0 and events == seeded and files_left == 0,
            }
            assert result["ok"], (purged, seeded, left, events, files_left)
            return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_options(parser, memos=100_000)
    parser.add_argument("--attachments", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=500)
    args = parser.parse_args()
    result = asyncio.run(run(args))
    print(json.dumps(result, indent=2))
    name = f"trash_purge-{args.dialect}-{args.memos}.json"
    out = pathlib.Path(__file__).parent / "results" / name
    out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
