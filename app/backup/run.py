"""Backup and restore for the configured instance: database, attachment files, manifest."""

from __future__ import annotations

import shutil
import sqlite3
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import anyio
import sqlalchemy as sa
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncConnection

from app.attachments.storage import StorageType, store_from_settings, valid_key
from app.backup import postgres
from app.backup import sqlite as sqlite_copy
from app.backup.manifest import FILES_DIR, PG_FILE, SQLITE_FILE, BadBackup, Manifest
from app.db.engine import create_engine
from app.db.migrate import scripts
from app.settings import Settings

_INVENTORY = {
    "revision": "SELECT version_num FROM alembic_version",
    "memos": "SELECT count(*) FROM memo",
    "by_type": "SELECT storage_type, count(*) FROM attachment GROUP BY storage_type",
    "keys": "SELECT storage_key FROM attachment WHERE storage_type = 'LOCAL'"
    " AND storage_key IS NOT NULL",
}


class BackupRefused(Exception):
    """The destination is not empty, or the backup does not fit this instance."""


@dataclass
class _Inventory:
    revision: str | None = None
    memos: int = 0
    attachments: dict[str, int] = field(default_factory=dict)
    keys: list[str] = field(default_factory=list)


def _sqlite_inventory(path: Path) -> _Inventory:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rev = conn.execute(_INVENTORY["revision"]).fetchone()
        return _Inventory(
            revision=rev[0] if rev else None,
            memos=int(conn.execute(_INVENTORY["memos"]).fetchone()[0]),
            attachments={t: int(n) for t, n in conn.execute(_INVENTORY["by_type"])},
            keys=[k for (k,) in conn.execute(_INVENTORY["keys"])],
        )
    finally:
        conn.close()


async def _pg_inventory(conn: AsyncConnection) -> _Inventory:
    def q(name: str) -> sa.TextClause:
        return sa.text(_INVENTORY[name])

    return _Inventory(
        revision=(await conn.execute(q("revision"))).scalar(),
        memos=int((await conn.execute(q("memos"))).scalar_one()),
        attachments={str(t): int(n) for t, n in (await conn.execute(q("by_type"))).all()},
        keys=[str(k) for (k,) in (await conn.execute(q("keys"))).all()],
    )


def _copy_files(keys: list[str], source: Path, dest: Path) -> tuple[int, list[str]]:
    dest.mkdir(parents=True, exist_ok=True)
    copied, missing = 0, []
    for key in keys:
        try:
            shutil.copy2(source / valid_key(key), dest / key)
            copied += 1
        except (FileNotFoundError, ValueError):
            missing.append(key)  # deleted since the snapshot (or a corrupt key)
    return copied, missing


def _new_directory(dest: Path) -> None:
    if dest.exists() and any(dest.iterdir()):
        raise BackupRefused(f"{dest} is not empty: back up into a new directory")
    dest.mkdir(parents=True, exist_ok=True)


async def backup(settings: Settings, dest: Path) -> Manifest:
    """Copy the database and its attachment files into the new directory ``dest``.

    Raises ``postgres.ToolMissing`` after copying the files and writing the
    manifest when PostgreSQL's ``pg_dump`` is not available.
    """
    await anyio.to_thread.run_sync(_new_directory, dest)
    store = store_from_settings(settings)
    url = settings.database_url
    dialect = make_url(url).get_backend_name()
    missing_tool: postgres.ToolMissing | None = None
    database: str | None
    if dialect == "sqlite":
        source = Path(str(make_url(url).database))
        await anyio.to_thread.run_sync(sqlite_copy.backup, source, dest / SQLITE_FILE)
        inventory = await anyio.to_thread.run_sync(_sqlite_inventory, dest / SQLITE_FILE)
        database = SQLITE_FILE
    else:
        engine = create_engine(url)
        try:
            async with engine.connect() as conn:
                conn = await conn.execution_options(isolation_level="REPEATABLE READ")
                async with conn.begin():
                    snapshot = (await conn.execute(sa.text("SELECT pg_export_snapshot()"))).scalar()
                    inventory = await _pg_inventory(conn)
                    try:
                        await anyio.to_thread.run_sync(
                            postgres.dump, url, dest / PG_FILE, str(snapshot)
                        )
                        database = PG_FILE
                    except postgres.ToolMissing as exc:
                        database, missing_tool = None, exc
        finally:
            await engine.dispose()
    copied, missing = await anyio.to_thread.run_sync(
        _copy_files, inventory.keys, store.local_dir, dest / FILES_DIR
    )
    manifest = Manifest(
        dialect=dialect,
        revision=inventory.revision,
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        database=database,
        memos=inventory.memos,
        attachments=inventory.attachments,
        files=copied,
        missing_files=missing,
        s3_bucket=store.s3.bucket if store.s3 and inventory.attachments.get("S3") else "",
    )
    manifest.write(dest)
    if missing_tool is not None:
        raise missing_tool
    return manifest


async def _pg_target_state(url: str) -> tuple[int, bool]:
    """Other sessions on the target database, and whether it holds a Daybook schema."""
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            others = (
                await conn.execute(
                    sa.text(
                        "SELECT count(*) FROM pg_stat_activity"
                        " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                    )
                )
            ).scalar_one()
            present = (
                await conn.execute(sa.text("SELECT to_regclass('public.alembic_version')"))
            ).scalar()
        return int(others), present is not None
    finally:
        await engine.dispose()


async def _pg_reset(url: str) -> None:
    engine = create_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.execute(sa.text("DROP SCHEMA public CASCADE"))
            await conn.execute(sa.text("CREATE SCHEMA public"))
    finally:
        await engine.dispose()


async def restore(settings: Settings, src: Path, *, replace: bool) -> Manifest:
    """Bring the backup ``src`` back as this instance's database and attachment files."""
    manifest = Manifest.read(src)
    if manifest.database is None:
        raise BadBackup(f"{src}: this backup holds no copy of the database")
    known = {s.revision for s in scripts().walk_revisions()}
    if manifest.revision is not None and manifest.revision not in known:
        raise BackupRefused(
            f"{src}: made at revision {manifest.revision}, which this Daybook does not know"
            " (restore it with the newer version)"
        )
    url = settings.database_url
    dialect = make_url(url).get_backend_name()
    if dialect != manifest.dialect:
        raise BackupRefused(f"{src}: a {manifest.dialect} backup cannot restore into {dialect}")
    archive = src / manifest.database
    if not archive.is_file():
        raise BadBackup(f"{archive}: missing")
    if dialect == "sqlite":
        target = Path(str(make_url(url).database))
        await anyio.to_thread.run_sync(
            lambda: sqlite_copy.restore(archive, target, replace=replace)
        )
    else:
        others, present = await _pg_target_state(url)
        if present and not replace:
            raise sqlite_copy.RestoreRefused("the target database holds data: pass --yes")
        if others:
            raise sqlite_copy.RestoreRefused(
                f"the target database has {others} other sessions: stop every daybook process"
            )
        postgres.tool("pg_restore")
        await _pg_reset(url)
        await anyio.to_thread.run_sync(lambda: postgres.restore(archive, url, lambda: None))
    files = src / FILES_DIR
    if files.is_dir():
        local = store_from_settings(settings).local_dir
        await anyio.to_thread.run_sync(_restore_files, files, local)
    return manifest


def _restore_files(source: Path, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True, mode=0o700)
    for path in source.iterdir():
        key = valid_key(path.name)
        target = dest / key
        if not target.exists() or target.stat().st_size != path.stat().st_size:
            shutil.copy2(path, target)


__all__ = ["BackupRefused", "StorageType", "backup", "restore"]
