"""``daybook serve``: one process, or several worker processes on one socket.

Several workers (``--workers N``, default the number of cores) let Python
use every core: each is a whole Daybook (its own event loop, engine and
pool) accepting on the socket the supervisor bound, and they share nothing
but the database, where every piece of state already lives (sessions, the
signing secret, throttles, the instance settings, the outbox and the
embedding queue). On SQLite they share the file: the write lock across
processes is SQLite's own, waited for with the busy timeout
(``app.db.transactions``); the in-process gate only orders one process's
writers. The background jobs run once per database, not once per worker,
under leases (``app.jobs.lease``). The supervisor migrates before it starts
the workers, and restarts a worker that dies.
"""

from __future__ import annotations

import asyncio
import os
import signal
from types import FrameType
from typing import Any

import uvicorn
from litestar import Litestar

from app.settings import _ENV, Settings, load_settings

__all__ = ["GracefulServer", "default_workers", "run", "worker_app"]


class GracefulServer(uvicorn.Server):
    """Exit with status 0 after a SIGTERM-initiated graceful shutdown.

    Uvicorn re-raises the signal once requests in flight are done, which
    makes orchestrators report a clean stop as a crash (status -15).
    """

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        if sig == signal.SIGTERM and sig in self._captured_signals:
            self._captured_signals.remove(sig)


def default_workers(settings: Settings) -> int:
    """The number of cores; one for an in-memory SQLite database (nothing to share)."""
    if ":memory:" in settings.database_url or settings.database_url.rstrip("/") == "sqlite:":
        return 1
    return max(1, os.cpu_count() or 1)


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """uvicorn's settings for ``serve``.

    ``proxy_headers`` is off: uvicorn's default trusts X-Forwarded-For from
    loopback, which any local process (or a proxy that passes the header
    through) could forge. The app applies ``--trusted-proxies`` itself
    (``app.server.Daybook``), trusting nobody unless told.
    """
    return {
        "host": settings.host,
        "port": settings.port,
        "log_config": None,
        "access_log": False,
        "proxy_headers": False,
        "server_header": False,
        "timeout_graceful_shutdown": 30,
    }


def _die_with_parent() -> None:
    """Linux: a worker whose supervisor is killed outright (SIGKILL) dies too,
    instead of serving on, unsupervised, from the inherited socket."""
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the supervisor died before the call
        os._exit(1)


def worker_app() -> Litestar:
    """The app of one worker process, from the environment the supervisor set."""
    from app.server import create_app

    _die_with_parent()
    return create_app(load_settings(migrate_on_start=False).resolved())


def _export(settings: Settings) -> None:
    """Put the supervisor's settings where the workers read them: the environment."""
    for name, (var, kind) in _ENV.items():
        value = getattr(settings, name)
        if kind is bool:
            os.environ[var] = "1" if value else "0"
        elif value is not None:
            os.environ[var] = str(value)


def run(settings: Settings, workers: int) -> None:
    """Serve ``settings`` with ``workers`` processes (in this one when 1).

    With several workers the supervisor stays small: it never imports the
    app, and migrates in a child process of its own, so the database layer,
    Alembic and the app's modules (about 120 MB resident) are not kept for
    the supervisor's lifetime just to bind a socket and restart workers.
    """
    if workers <= 1:
        from app.server import create_app

        GracefulServer(uvicorn.Config(create_app(settings), **uvicorn_options(settings))).run()
        return
    if settings.migrate_on_start:
        _migrate_in_child(settings.database_url)
    _export(settings)
    config = uvicorn.Config(
        "app.serve:worker_app",
        factory=True,
        workers=workers,
        # The supervisor kills a worker that does not answer its ping in time;
        # uvicorn's 5 s replaced busy workers mid-request on a loaded machine.
        timeout_worker_healthcheck=30,
        **uvicorn_options(settings),
    )
    from uvicorn.supervisors import Multiprocess

    sock = config.bind_socket()
    Multiprocess(config, sockets=[sock]).run()


def _migrate_in_child(url: str) -> None:
    """Run the migrations in a spawned process; its failure stops the start."""
    import multiprocessing

    child = multiprocessing.get_context("spawn").Process(
        target=_migrate_main, args=(url,), name="daybook-migrate"
    )
    child.start()
    child.join()
    if child.exitcode != 0:
        raise SystemExit(f"migrations failed (exit status {child.exitcode}): not serving")


def _migrate_main(url: str) -> None:
    asyncio.run(_migrate(url))


async def _migrate(url: str) -> None:
    from app.db.engine import create_engine
    from app.db.migrate import upgrade

    engine = create_engine(url)
    try:
        await upgrade(engine)
    finally:
        await engine.dispose()
