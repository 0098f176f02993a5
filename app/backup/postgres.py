"""PostgreSQL: ``pg_dump`` and ``pg_restore`` (the client tools must match the server).

The dump runs in a snapshot exported by our own REPEATABLE READ transaction
(``pg_dump --snapshot``), so the attachment files listed from that same
snapshot are exactly those the dump names. The tools are looked up on
``PATH``; when they are missing the database is not copied, and the command
says so and fails rather than pretending.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from sqlalchemy.engine import make_url


class ToolMissing(Exception):
    """``pg_dump`` or ``pg_restore`` is not on PATH."""


def tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise ToolMissing(
            f"{name} not found on PATH: install the PostgreSQL client tools of the"
            f" server's major version (e.g. postgresql-client-18), or run {name} yourself"
            " as the README's Backups section shows"
        )
    return found


def libpq(url: str) -> tuple[str, dict[str, str]]:
    """A libpq connection URI for ``url`` and the environment carrying its password."""
    parsed = make_url(url)
    env = dict(os.environ)
    if parsed.password:
        env["PGPASSWORD"] = str(parsed.password)
    query = dict(parsed.query)
    if "ssl" in query and "sslmode" not in query:  # asyncpg's spelling
        query["sslmode"] = str(query.pop("ssl"))
    bare = parsed.set(drivername="postgresql", password=None, query=query)
    return bare.render_as_string(hide_password=False), env


def dump(url: str, dest: Path, snapshot: str | None) -> None:
    uri, env = libpq(url)
    args = [tool("pg_dump"), "--format=custom", "--no-owner", f"--file={dest}", f"--dbname={uri}"]
    if snapshot:
        args.append(f"--snapshot={snapshot}")
    # The tool found on PATH, with arguments built here; no shell.
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=False)  # noqa: S603
    if done.returncode != 0:
        raise RuntimeError(f"pg_dump failed: {done.stderr.strip()[-2000:]}")


def restore(archive: Path, url: str, reset: Callable[[], None]) -> None:
    """Empty the target's schema (``reset``), then load ``archive`` in one transaction."""
    command = tool("pg_restore")
    uri, env = libpq(url)
    reset()
    args = [
        command,
        "--no-owner",
        "--single-transaction",
        "--exit-on-error",
        f"--dbname={uri}",
        str(archive),
    ]
    # The tool found on PATH, with arguments built here; no shell.
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=False)  # noqa: S603
    if done.returncode != 0:
        raise RuntimeError(f"pg_restore failed: {done.stderr.strip()[-2000:]}")
