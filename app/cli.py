"""The ``daybook`` command: serve, migrate, user administration."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from app.settings import load_settings

F = TypeVar("F", bound=Callable[..., Any])

_server_options: list[Callable[[F], F]] = [
    click.option(
        "--data",
        "data_dir",
        type=click.Path(path_type=Path),
        default=None,
        help="Data directory [env DAYBOOK_DATA; default ./data]",
    ),
    click.option(
        "--database-url",
        default=None,
        help="sqlite:///path or postgresql://... [env DAYBOOK_DATABASE_URL]",
    ),
]

_storage_options: list[Callable[[F], F]] = [
    click.option(
        "--storage",
        type=click.Choice(["local", "database", "s3"]),
        default=None,
        help="Where new attachments go [env DAYBOOK_STORAGE; default local]; S3 is set by"
        " DAYBOOK_S3_* variables",
    ),
    click.option(
        "--storage-dir",
        default=None,
        help="Directory of local attachments, shared by every process"
        " [env DAYBOOK_STORAGE_DIR; default DATA/attachments]",
    ),
]


def _with(options: list[Callable[[F], F]]) -> Callable[[F], F]:
    def decorate(fn: F) -> F:
        for option in reversed(options):
            fn = option(fn)
        return fn

    return decorate


@click.group()
@click.version_option(package_name="daybook")
def main() -> None:
    """Daybook: a self-hosted daily log with a Memos-compatible API."""
    import os

    from app.logs import configure_logging

    # Progress and lock waits are logged to stderr; stdout keeps each command's result.
    configure_logging(os.environ.get("DAYBOOK_LOG_FORMAT") or "console")


@main.command()
@_with(_server_options)
@_with(_storage_options)
@click.option(
    "--host", default=None, help="Interface to bind [env DAYBOOK_HOST; default 127.0.0.1]"
)
@click.option("--port", type=int, default=None, help="Port [env DAYBOOK_PORT; default 5230]")
@click.option(
    "--public-url",
    default=None,
    help="Public URL, e.g. https://notes.example.com [env DAYBOOK_PUBLIC_URL]",
)
@click.option(
    "--trusted-proxies",
    default=None,
    help="Comma-separated proxy addresses or networks whose X-Forwarded-For/-Proto are"
    " believed, e.g. 127.0.0.1 or 10.0.0.0/8 [env DAYBOOK_TRUSTED_PROXIES; default none]",
)
@click.option("--no-migrate", is_flag=True, help="Do not run migrations at start")
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    envvar="DAYBOOK_WORKERS",
    help="Worker processes sharing the socket and the database"
    " [env DAYBOOK_WORKERS; default: the number of cores, 1 for an in-memory database]",
)
def serve(
    data_dir: Path | None,
    database_url: str | None,
    storage: str | None,
    storage_dir: str | None,
    host: str | None,
    port: int | None,
    public_url: str | None,
    trusted_proxies: str | None,
    no_migrate: bool,
    workers: int | None,
) -> None:
    """Run the HTTP server (finishes requests in flight on SIGTERM)."""
    from app import serve as serving

    settings = load_settings(
        data_dir=data_dir,
        database_url=database_url,
        host=host,
        port=port,
        public_url=public_url,
        migrate_on_start=False if no_migrate else None,
        storage=storage,
        storage_dir=storage_dir,
        trusted_proxies=trusted_proxies,
    ).resolved()
    serving.run(settings, workers or serving.default_workers(settings))


def uvicorn_options(settings: Any) -> dict[str, Any]:
    """uvicorn's settings for ``serve`` (see :func:`app.serve.uvicorn_options`)."""
    from app.serve import uvicorn_options as options

    return options(settings)


@main.command()
@_with(_server_options)
@click.option(
    "--revision", default="head", show_default=True, help="Target revision (down: e.g. base)"
)
@click.option(
    "--yes",
    is_flag=True,
    help="Confirm a downgrade that deletes data (to base, or dropping tables that hold rows)",
)
def migrate(data_dir: Path | None, database_url: str | None, revision: str, yes: bool) -> None:
    """Apply database migrations (or roll back to --revision).

    Safe to run from several processes at once: one migrates, the others wait
    for it and find the database at head.
    """
    from app.db import migrate as m
    from app.db.engine import create_engine

    settings = load_settings(data_dir=data_dir, database_url=database_url).resolved()

    async def run() -> str | None:
        engine = create_engine(settings.database_url)
        try:
            current = await m.current_revision(engine)
            if _is_upgrade(current, revision):
                await m.upgrade(engine, revision)
            else:
                await m.downgrade(engine, revision, confirm=yes)
            return await m.current_revision(engine)
        finally:
            await engine.dispose()

    from alembic.util import CommandError

    try:
        reached = asyncio.run(run())
    except CommandError as exc:  # an unknown or unreachable revision
        raise click.ClickException(str(exc)) from None
    except m.DataLossRefused as exc:
        raise click.ClickException(f"{exc}; nothing was changed. Pass --yes to go ahead.") from None
    except m.MigrationLockTimeout as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"database at revision {reached}")


def _is_upgrade(current: str | None, target: str) -> bool:
    """Whether going from ``current`` to ``target`` is an upgrade (Alembic needs the direction)."""
    from alembic.script import ScriptDirectory

    from app.db.migrate import alembic_config

    if current is None or target in ("head", "heads") or target.startswith("+"):
        return True
    if target == "base" or target.startswith("-"):
        return False
    scripts = ScriptDirectory.from_config(alembic_config())
    wanted = scripts.get_revision(target)  # CommandError when unknown
    if wanted is None or wanted.revision == current:
        return False
    return current in {r.revision for r in scripts.iterate_revisions(wanted.revision, "base")}


@main.command()
@_with(_server_options)
@_with(_storage_options[1:])
@click.argument("dest", type=click.Path(path_type=Path))
def backup(
    data_dir: Path | None, database_url: str | None, storage_dir: str | None, dest: Path
) -> None:
    """Copy the database, its attachment files and the secret into the new directory DEST.

    Safe while servers write: the copy is one consistent snapshot (SQLite's
    backup API; PostgreSQL: pg_dump, which must be on PATH).
    """
    from app.backup import postgres
    from app.backup.run import BackupRefused
    from app.backup.run import backup as run_backup

    settings = load_settings(
        data_dir=data_dir, database_url=database_url, storage_dir=storage_dir
    ).resolved()
    try:
        manifest = asyncio.run(run_backup(settings, dest))
    except BackupRefused as exc:
        raise click.ClickException(str(exc)) from None
    except postgres.ToolMissing as exc:
        raise click.ClickException(
            f"the database was NOT backed up: {exc}. Attachment files and the manifest"
            f" are in {dest}."
        ) from None
    except (OSError, RuntimeError) as exc:
        raise click.ClickException(f"backup failed: {exc}") from None
    where = f"{manifest.files} attachment files"
    if manifest.missing_files:
        where += f" ({len(manifest.missing_files)} deleted since the snapshot, not copied)"
    if manifest.s3_bucket:
        where += f"; S3 objects stay in bucket {manifest.s3_bucket!r}"
    click.echo(
        f"backed up {manifest.dialect} database at revision {manifest.revision}"
        f" ({manifest.memos} memos) and {where} to {dest}"
    )


@main.command()
@_with(_server_options)
@_with(_storage_options[1:])
@click.argument("src", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("--yes", is_flag=True, help="Replace the existing database")
def restore(
    data_dir: Path | None, database_url: str | None, storage_dir: str | None, src: Path, yes: bool
) -> None:
    """Bring back the backup SRC as this instance's database and attachment files.

    Stop every daybook process first: restore refuses a database in use (or a
    stale -wal next to it), and replaces an existing one only with --yes.
    """
    from app.backup import postgres
    from app.backup.manifest import BadBackup
    from app.backup.run import BackupRefused
    from app.backup.run import restore as run_restore
    from app.backup.sqlite import RestoreRefused

    settings = load_settings(
        data_dir=data_dir, database_url=database_url, storage_dir=storage_dir
    ).resolved()
    try:
        manifest = asyncio.run(run_restore(settings, src, replace=yes))
    except (BadBackup, BackupRefused, RestoreRefused, postgres.ToolMissing) as exc:
        raise click.ClickException(f"{exc}; nothing was changed") from None
    except (OSError, RuntimeError) as exc:
        raise click.ClickException(f"restore failed: {exc}") from None
    click.echo(
        f"restored {manifest.dialect} database at revision {manifest.revision}"
        f" ({manifest.memos} memos, {manifest.files} attachment files) from {src};"
        " `daybook serve` migrates it to this version's head"
    )


@main.group()
def user() -> None:
    """User administration."""


@user.command("create")
@_with(_server_options)
@click.option("--username", required=True)
@click.option("--password-stdin", is_flag=True, required=True, help="Read the password from stdin")
@click.option("--admin", is_flag=True, help="Make the user an instance ADMIN")
def user_create(
    data_dir: Path | None,
    database_url: str | None,
    username: str,
    password_stdin: bool,
    admin: bool,
) -> None:
    """Create a user (the password is read from standard input)."""
    import time

    import sqlalchemy as sa

    from app.auth.passwords import hash_password, make_hasher
    from app.db.engine import create_engine
    from app.db.migrate import upgrade
    from app.db.schema import user_account
    from app.users.service import valid_password, valid_username

    password = sys.stdin.readline().rstrip("\n")
    settings = load_settings(data_dir=data_dir, database_url=database_url).resolved()
    try:
        valid_username(username)
        valid_password(password)
    except Exception as exc:
        raise click.ClickException(str(exc)) from None

    async def run() -> None:
        engine = create_engine(settings.database_url)
        try:
            await upgrade(engine)
            now = int(time.time())
            from app.db.transactions import write_transaction

            async with write_transaction(engine) as conn:
                exists = (
                    await conn.execute(
                        sa.select(user_account.c.id).where(user_account.c.username == username)
                    )
                ).first()
                if exists:
                    raise click.ClickException(f"user {username!r} already exists")
                await conn.execute(
                    user_account.insert().values(
                        username=username,
                        role="ADMIN" if admin else "USER",
                        state="NORMAL",
                        password_hash=await hash_password(make_hasher("argon2id"), password),
                        created_ts=now,
                        updated_ts=now,
                    )
                )
        finally:
            await engine.dispose()

    asyncio.run(run())
    click.echo(f"created user {username}{' (ADMIN)' if admin else ''}")


@main.command("reset-password")
@_with(_server_options)
@click.argument("username")
@click.option(
    "--public-url",
    default=None,
    help="Base of the printed link, e.g. https://notes.example.com [env DAYBOOK_PUBLIC_URL]",
)
def reset_password(
    data_dir: Path | None, database_url: str | None, username: str, public_url: str | None
) -> None:
    """Print a one-time link (and its token) with which USERNAME sets a new password.

    The current password keeps working until the link is used; the link
    expires after 24 hours, works once, and is recorded in the user's audit
    events. Nobody but the user learns the new password.
    """
    import time

    import sqlalchemy as sa

    from app.auth import reset
    from app.db.engine import create_engine
    from app.db.migrate import upgrade
    from app.db.schema import user_account

    settings = load_settings(
        data_dir=data_dir, database_url=database_url, public_url=public_url
    ).resolved()

    async def run() -> reset.IssuedReset:
        engine = create_engine(settings.database_url)
        try:
            await upgrade(engine)
            from app.db.transactions import write_transaction

            async with write_transaction(engine) as conn:
                user_id = (
                    await conn.execute(
                        sa.select(user_account.c.id).where(
                            user_account.c.username == username,
                            user_account.c.state == "NORMAL",
                        )
                    )
                ).scalar_one_or_none()
                if user_id is None:
                    raise click.ClickException(f"no active user {username!r}")
                return await reset.issue(
                    conn,
                    user_id,
                    issued_by="cli",
                    now=int(time.time()),
                    lifetime=settings.reset_link_lifetime,
                )
        finally:
            await engine.dispose()

    issued = asyncio.run(run())
    expires = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(issued.expires_ts))
    if settings.public_url:
        click.echo(f"reset link for {username} (single use, expires {expires}):")
        click.echo(issued.url(settings.public_url))
    else:
        click.echo(
            f"reset token for {username} (single use, expires {expires}); open"
            f" <server>{reset.RESET_PATH}#token=<token>, or pass --public-url for a full link:"
        )
    click.echo(f"token: {issued.secret}")


@main.command()
@_with(_server_options)
@click.option("--model", default=None, help="Embedding model [env DAYBOOK_EMBEDDING_MODEL]")
def reindex(data_dir: Path | None, database_url: str | None, model: str | None) -> None:
    """Rebuild the full-text index and recompute every memo's embedding."""
    from app.db.engine import create_engine
    from app.db.migrate import upgrade
    from app.search.embedder import make_embedder
    from app.search.reindex import count_memos, rebuild_fts, reembed_all

    settings = load_settings(
        data_dir=data_dir, database_url=database_url, embedding_model=model
    ).resolved()
    embedder = make_embedder(settings.embedding_model)

    async def run() -> int:
        engine = create_engine(settings.database_url)
        try:
            await upgrade(engine)
            await rebuild_fts(engine)
            total = await count_memos(engine)
            with click.progressbar(length=total, label=f"embedding ({embedder.name})") as bar:
                return await reembed_all(engine, embedder, bar.update)
        finally:
            await engine.dispose()

    click.echo(f"full-text index rebuilt; {asyncio.run(run())} memos embedded")


# Moving in and out of Daybook (app.portability): export, import, import-memos-db.
from app.portability.cli import (  # noqa: E402
    export_command,
    import_command,
    import_memos_db_command,
)

main.add_command(export_command)
main.add_command(import_command)
main.add_command(import_memos_db_command)


if __name__ == "__main__":
    main()
