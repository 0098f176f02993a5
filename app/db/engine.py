"""Engine construction for both dialects.

SQLite gets WAL, foreign keys, a busy timeout and Daybook's SQL functions on
every new connection, and its transactions are Daybook's, not the driver's
(:mod:`app.db.transactions`); PostgreSQL URLs are normalised to the asyncpg
driver so that operators can paste the URL their provider gave them.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from app.db import driver, transactions
from app.errors import Unavailable

# busy_timeout first: switching a fresh file to WAL takes a lock another process may hold.
SQLITE_PRAGMAS = ("busy_timeout=5000", "journal_mode=WAL", "foreign_keys=ON", "synchronous=NORMAL")
# SQLite: reads never wait for each other and writers queue on the in-process
# gate (app.db.transactions), so the pool is sized for concurrent requests,
# not for concurrent writers; every connection is a thread and ~2 MiB of cache.
SQLITE_POOL = {"pool_size": 20, "max_overflow": 60, "pool_timeout": 30}
PG_POOL = {"pool_size": 10, "max_overflow": 20, "pool_timeout": 30, "pool_pre_ping": True}


def async_url(url: str) -> str:
    """Return ``url`` with the async driver for its dialect."""
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        return parsed.set(drivername="sqlite+aiosqlite").render_as_string(hide_password=False)
    if backend in ("postgresql", "postgres"):
        return parsed.set(drivername="postgresql+asyncpg").render_as_string(hide_password=False)
    raise ValueError(
        f"unsupported database URL scheme {parsed.drivername!r}: use sqlite or postgresql"
    )


def sync_url(url: str) -> str:
    """The same database through a synchronous driver (used by Alembic's offline tools)."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return parsed.set(drivername="sqlite").render_as_string(hide_password=False)
    return parsed.set(drivername="postgresql+asyncpg").render_as_string(hide_password=False)


def _on_sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
    from app.db import sqlite_functions, statistics

    cursor = dbapi_connection.cursor()
    for pragma in SQLITE_PRAGMAS:
        cursor.execute(f"PRAGMA {pragma}")
    # SQLite's advice for long-lived connections (app.db.statistics): statistics
    # for tables that lack them or changed a lot, bounded; a no-op before 3.46.
    cursor.execute(f"PRAGMA {statistics.OPEN_PRAGMA}")
    cursor.close()
    sqlite_functions.register(dbapi_connection)


def _connect_or_unavailable(dialect: Any, _record: Any, cargs: Any, cparams: Any) -> Any:
    """The driver's connect, with "cannot reach the server" as Unavailable (503).

    asyncpg raises the socket's own OSError (refused, no such socket file,
    timeout) unwrapped; it is an outage, not a bug, whatever the request.
    """
    try:
        return dialect.connect(*cargs, **cparams)
    except OSError as exc:
        raise Unavailable(
            f"the database is unreachable ({exc.strerror or exc}): retry shortly"
        ) from None


def create_engine(url: str, *, echo: bool = False) -> AsyncEngine:
    """Create the application's async engine for ``url``."""
    full = async_url(url)
    kwargs: dict[str, Any] = {"echo": echo}
    is_memory = full.endswith(":memory:") or full.rstrip("/").endswith("sqlite+aiosqlite:")
    if full.startswith("postgresql"):
        kwargs.update(PG_POOL)
    elif not is_memory:
        kwargs.update(SQLITE_POOL)
    if full.startswith("sqlite"):
        # One thread hop per statement, none in a write turn (app.db.driver).
        kwargs["module"] = driver.dbapi()
    engine = create_async_engine(full, **kwargs)
    sa.event.listen(engine.sync_engine, "do_connect", _connect_or_unavailable)
    if engine.dialect.name == "sqlite":
        sa.event.listen(engine.sync_engine, "connect", _on_sqlite_connect)
        transactions.install(engine)
    return engine
