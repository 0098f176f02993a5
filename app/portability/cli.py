"""``daybook export``, ``daybook import`` and ``daybook import-memos-db``.

They operate directly on the database (``--data``/``--database-url`` as the
other commands), acting for a named user exactly as that user's session
would (same audience, same write rule); the history records the tool as the
origin. Each shows a progress bar (on a terminal) and prints a summary.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from app.settings import Settings, load_settings

__all__ = ["export_command", "import_command", "import_memos_db_command"]

_options: list[Callable[[Any], Any]] = [
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


def _with_db_options(fn: Any) -> Any:
    for option in reversed(_options):
        fn = option(fn)
    return fn


def _settings(data_dir: Path | None, database_url: str | None) -> Settings:
    return load_settings(data_dir=data_dir, database_url=database_url).resolved()


async def _local_caller(conn: Any, username: str, tool: str) -> Any:
    import sqlalchemy as sa

    from app.db.schema import user_account
    from app.portability.access import local_caller

    row = (
        await conn.execute(sa.select(user_account).where(user_account.c.username == username))
    ).first()
    if row is None:
        raise click.ClickException(f"user {username!r} not found")
    if row.state != "NORMAL":
        raise click.ClickException(f"user {username!r} is archived")
    return local_caller(row.id, row.username, row.role, tool), row


@click.command("export")
@_with_db_options
@click.option("--user", "username", required=True, help="Whose memos (a username)")
@click.option(
    "--output",
    "-o",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Archive to write [default memos-export-<user>-<time>.zip]",
)
def export_command(
    data_dir: Path | None, database_url: str | None, username: str, output: Path | None
) -> None:
    """Export a user's memos as a Memos Export Format 1.0 archive."""
    from app.db.engine import create_engine
    from app.db.migrate import upgrade
    from app.instance.store import AccessSettings, load_access
    from app.portability import format as fmt
    from app.portability.export import ExportRequest, export_archive, export_counts
    from app.portability.units import read_snapshot

    settings = _settings(data_dir, database_url)
    now = int(time.time())
    target = output or Path(fmt.archive_filename(username, now))

    async def run() -> tuple[int, int, int]:
        engine = create_engine(settings.database_url)
        try:
            await upgrade(engine)
            async with read_snapshot(engine) as conn:
                caller, row = await _local_caller(conn, username, "cli-export")
                access = await load_access(conn, AccessSettings())
                memos, attachments = await export_counts(conn, caller, access.access_mode)
            written = 0
            with (
                click.progressbar(length=memos, label="exporting") as bar,
                target.open("xb") as fh,
            ):
                req = ExportRequest(
                    caller=caller,
                    mode=access.access_mode,
                    data_dir=settings.data_dir,
                    display_name=row.nickname,
                    export_ts=now,
                    progress=bar.update,
                )
                async for chunk in export_archive(engine, req):
                    fh.write(chunk)
                    written += len(chunk)
            return memos, attachments, written
        finally:
            await engine.dispose()

    try:
        memos, attachments, size = asyncio.run(run())
    except FileExistsError:
        raise click.ClickException(f"{target} exists; choose another --output") from None
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            if target.exists() and target.stat().st_mtime >= now - 1:
                target.unlink()
        raise
    click.echo(f"exported {memos} memos and {attachments} attachments to {target} ({size} bytes)")


def _print_plan(plan: Any) -> None:
    verb = "would import" if plan.validate_only else "imported"
    click.echo(
        f"{verb} {plan.memo_count} memos ({plan.attachment_count} attachments) from "
        f"{plan.generator.name} {plan.generator.version}, exported {plan.export_time} by "
        f"{plan.exporter or '?'}; policy {plan.conflict_policy}"
    )
    click.echo(
        f"  new {plan.new}, existing {plan.existing}, renamed {plan.renamed}; "
        f"inserted {plan.inserted}, replaced {plan.replaced}, skipped {plan.skipped}, "
        f"duplicated {plan.duplicated}; attachments stored {plan.attachments_stored}, "
        f"reused {plan.attachments_reused}"
    )
    for w in plan.warnings[:20]:
        click.echo(f"  warning: {w.memo or 'archive'}: {w.message}")
    if plan.warning_count > 20:
        click.echo(f"  ... and {plan.warning_count - 20} more warnings")


class _TwoBars:
    """The import's two bars, one after the other: the archive's bytes as they are
    read and checked ("validating"), then its memos as they are applied. The
    first is finished when the first memo is reported."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.first: Any = click.progressbar(length=size, label="validating")
        self.second: Callable[[], Any] = lambda: None
        self.current: Any = None

    def __enter__(self) -> _TwoBars:
        self.current = self.first.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.current.__exit__(*exc)

    def validating(self, n: int) -> None:
        self.first.update(n)

    def memos(self, n: int) -> None:
        if self.current is self.first:
            self.first.update(self.size - self.first.pos)
            self.first.__exit__(None, None, None)
            self.current = self.second().__enter__()
        self.current.update(n)


@click.command("import")
@_with_db_options
@click.argument("archive", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@click.option("--user", "username", required=True, help="Into whose account (a username)")
@click.option(
    "--conflict-policy",
    type=click.Choice(["SKIP", "REPLACE", "DUPLICATE"], case_sensitive=False),
    default="SKIP",
    show_default=True,
    help="What to do with memos that are already the user's",
)
@click.option("--validate-only", is_flag=True, help="Only check the archive and print the plan")
def import_command(
    data_dir: Path | None,
    database_url: str | None,
    archive: Path,
    username: str,
    conflict_policy: str,
    validate_only: bool,
) -> None:
    """Import a Memos Export Format 1.0 archive into a user's account (all or nothing)."""
    from app.db.engine import create_engine
    from app.db.migrate import upgrade
    from app.errors import DaybookError
    from app.portability.plan import Policy
    from app.portability.routes import import_archive_file
    from app.portability.staging import Staging
    from app.portability.units import read_snapshot

    settings = _settings(data_dir, database_url)
    size = max(archive.stat().st_size, 1)

    async def run() -> Any:
        engine = create_engine(settings.database_url)
        try:
            await upgrade(engine)
            async with read_snapshot(engine) as conn:
                caller, _ = await _local_caller(conn, username, "cli-import")
            with Staging(settings.data_dir / "tmp") as staging, _TwoBars(size) as bars:
                bars.second = lambda: click.progressbar(
                    length=max(staging.count("record"), 1),
                    label="planning" if validate_only else "importing",
                )
                return await import_archive_file(
                    engine,
                    settings,
                    caller,
                    archive,
                    staging,
                    Policy(conflict_policy.upper()),
                    validate_only,
                    int(time.time()),
                    bars.memos,
                    bars.validating,
                )
        finally:
            await engine.dispose()

    try:
        plan = asyncio.run(run())
    except DaybookError as exc:
        details = getattr(exc, "problems", ())
        for p in details[3:20]:
            click.echo(f"  problem: {p}", err=True)
        raise click.ClickException(exc.message) from None
    _print_plan(plan)


@click.command("import-memos-db")
@_with_db_options
@click.argument("path", required=False, type=click.Path(path_type=Path, dir_okay=False))
@click.option("--postgres", "postgres_url", default=None, help="A Memos PostgreSQL database URL")
@click.option(
    "--attachments-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Memos' data directory, where its local attachments live [default: beside PATH]",
)
@click.option("--dry-run", is_flag=True, help="Only read the Memos database and print counts")
@click.option(
    "--access-mode",
    type=click.Choice(["PRIVATE", "PUBLIC"]),
    default=None,
    help="Instance access mode, when the Memos database does not store it (before 0.31)",
)
def import_memos_db_command(
    data_dir: Path | None,
    database_url: str | None,
    path: Path | None,
    postgres_url: str | None,
    attachments_dir: Path | None,
    dry_run: bool,
    access_mode: str | None,
) -> None:
    """Carry a Memos instance (0.22 to 0.31) over: users, memos, attachments, spaces, settings."""
    from app.db.engine import create_engine
    from app.db.migrate import upgrade
    from app.portability.memosdb.carry import CarryOptions, carry
    from app.portability.memosdb.source import open_source

    if (path is None) == (postgres_url is None):
        raise click.UsageError("give the Memos SQLite file PATH, or --postgres URL (one of them)")
    settings = _settings(data_dir, database_url)
    files_dir = attachments_dir or (path.parent if path is not None else None)

    async def run() -> Any:
        engine = create_engine(settings.database_url)
        try:
            await upgrade(engine)
            async with open_source(path, postgres_url) as source:
                total = await source.count_memos()
                with click.progressbar(
                    length=max(total, 1),
                    label=f"carrying Memos {source.schema.version_label}",
                ) as bar:
                    return await carry(
                        engine,
                        source,
                        CarryOptions(
                            data_dir=settings.data_dir,
                            memos_data_dir=files_dir,
                            dry_run=dry_run,
                            access_mode=access_mode,
                            progress=bar.update,
                        ),
                    )
        finally:
            await engine.dispose()

    report = asyncio.run(run())
    for line in report.lines():
        click.echo(line)
