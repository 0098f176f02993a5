"""What the benchmarks share to run the product: a served instance, an in-process one.

Each benchmark keeps its own figures; its common options (dialect, corpus
size, users, requests, seconds, clients, seed, output) come from
``add_options``, so they are spelt and parsed the same in every script. It is
also the one place that starts ``daybook serve`` (``serve`` / ``start_server``), builds a
benchmark instance's settings (``bench_settings``) and opens an in-process
client on it (``in_process``). Databases come from ``bench.databases``,
seeded corpora from ``bench.corpus``, percentiles and tables from
``bench.timing``.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import pathlib
import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

from litestar.testing import AsyncTestClient

from app.logs import configure_logging
from app.server import create_app
from app.settings import Settings
from tests.support import free_port, wait_ready

__all__ = ["add_options", "bench_settings", "in_process", "serve", "start_server", "stop_server"]

# Rate limits off: one client address drives every simulated user (decision 0029).
SERVE_ENV = {
    "DAYBOOK_EMBED_WORKER": "0",
    "DAYBOOK_LOG_FORMAT": "json",
    "DAYBOOK_WORKERS": "1",
    "DAYBOOK_RATE_LIMITS": "0",
}


def add_options(
    parser: argparse.ArgumentParser,
    *,
    dialect: bool = True,
    memos: int | None = None,
    users: int | None = None,
    requests: int | None = None,
    warmup: int | None = None,
    seconds: float | None = None,
    clients: int | None = None,
    seed: int | None = None,
    keep: bool = False,
    out: bool = False,
) -> argparse.ArgumentParser:
    """Add the options benchmarks share; each is added only when given a default.

    A script passes its own defaults (``memos=100_000``), so its command line
    stays what it was; the names, types and help are spelt here once.
    """
    if dialect:
        parser.add_argument("--dialect", choices=("sqlite", "postgresql"), default="sqlite")
    if memos is not None:
        parser.add_argument("--memos", type=int, default=memos, help="corpus size")
    if users is not None:
        parser.add_argument("--users", type=int, default=users)
    if requests is not None:
        parser.add_argument("--requests", type=int, default=requests, help="timed requests")
    if warmup is not None:
        parser.add_argument("--warmup", type=int, default=warmup)
    if seconds is not None:
        parser.add_argument("--seconds", type=float, default=seconds)
    if clients is not None:
        parser.add_argument("--clients", type=int, default=clients)
    if seed is not None:
        parser.add_argument("--seed", type=int, default=seed)
    if keep:
        parser.add_argument(
            "--keep", action="store_true", help="keep the temporary database directory"
        )
    if out:
        parser.add_argument("--out", help="JSON path (default under bench/results/)")
    return parser


def start_server(
    url: str | None,
    data: pathlib.Path,
    workers: int = 1,
    ready_s: float = 90,
    env: Mapping[str, str] | None = None,
) -> tuple[subprocess.Popen[bytes], str]:
    """``daybook serve`` in a session of its own (kill the group: it may have workers).

    The caller's ``DAYBOOK_*`` variables are dropped (except ``DAYBOOK_TURN_STATS``)
    so a figure does not depend on the shell it was run from; ``env`` adds
    settings on top of :data:`SERVE_ENV`. ``url`` None serves the SQLite file
    in ``data``.
    """
    port = free_port()
    child_env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("DAYBOOK_") or k == "DAYBOOK_TURN_STATS"
    }
    child_env.update(SERVE_ENV)
    child_env.update(env or {})
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "app.cli",
            "serve",
            "--port",
            str(port),
            "--data",
            str(data),
            *(["--database-url", url] if url is not None else []),
            # Only when asked: the code of an older commit (a baseline) has no --workers.
            *(["--workers", str(workers)] if workers != 1 else []),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=child_env,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    if wait_ready(base, ready_s, proc=proc, interval=0.2):
        return proc, base
    if proc.poll() is not None:
        raise SystemExit("serve exited")
    stop_server(proc)
    raise SystemExit("serve never became ready")


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the server's process group, SIGKILL after 30 s."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@contextlib.contextmanager
def serve(
    url: str | None, data: pathlib.Path, **kw: Any
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """:func:`start_server` for the length of a ``with`` block."""
    proc, base = start_server(url, data, **kw)
    try:
        yield proc, base
    finally:
        stop_server(proc)


def bench_settings(url: str, data: pathlib.Path, **overrides: Any) -> Settings:
    """A benchmark instance: JSON logs, files under ``data``, plus ``overrides``."""
    fields: dict[str, Any] = {"data_dir": data, "database_url": url, "log_format": "json"}
    return Settings(**(fields | overrides))


@contextlib.asynccontextmanager
async def in_process(
    settings: Settings, *, client_timeout: float | None = None, quiet: bool = False
) -> AsyncIterator[AsyncTestClient[Any]]:
    """The app in this process behind a test client (``quiet``: no per-request log lines)."""
    app = create_app(settings)
    if quiet:
        configure_logging("json", logging.WARNING)
    kw: dict[str, Any] = {} if client_timeout is None else {"timeout": client_timeout}
    async with AsyncTestClient(app=app, **kw) as client:
        yield client


def py_spy_record(
    pid: int, out: pathlib.Path, seconds: float, *options: str
) -> subprocess.Popen[bytes]:
    """``py-spy record`` of ``pid`` and its workers for about ``seconds``: collapsed
    stacks written to ``out`` (py-spy is a dev dependency: ``pip install py-spy``).
    ``options`` choose what is sampled (``--gil``, ``--threads``, ``-r RATE``)."""
    spy = shutil.which("py-spy") or str(pathlib.Path(sys.executable).with_name("py-spy"))
    return subprocess.Popen(
        [
            *(spy, "record", "--subprocesses", "--nonblocking", *options, "-p", str(pid)),
            *("-d", str(max(1, int(seconds) - 2)), "-f", "raw", "-o", str(out)),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
