"""A second PostgreSQL connection that reads exactly the request's snapshot.

Why: a hybrid search runs two independent statements, the lexical arm and the
semantic arm. On one connection they run one after the other, so a search
waits for their sum (on the 2-core machine at 100k memos about 18 and 13 ms
p50), while the other core idles. PostgreSQL lets a transaction export its
snapshot (``pg_export_snapshot()``) and another ``REPEATABLE READ``
transaction adopt it (``SET TRANSACTION SNAPSHOT``) before its first query:
both then see exactly the same rows, so the rule that every statement serving
a read runs in one snapshot still holds, and the two statements overlap.

Only a request's read transaction (``REPEATABLE READ``, see
``app.db.transactions``) is shared: in ``READ COMMITTED`` every statement of
the request takes a new snapshot, so there is no one snapshot to share.

Bounded: at most :data:`MAX_SHARED` second connections per engine at once
(the pool has 30 per process, request slots take at most 8 of them, so a
sibling never waits for a connection a request holds). Past the bound, on
SQLite, or outside a read transaction, :func:`shared_snapshot` yields
``None`` and the caller runs its statement on its own connection, as before.
"""

from __future__ import annotations

import contextlib
import re
import weakref
from collections.abc import AsyncIterator
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from app.db.transactions import read_transaction

__all__ = ["MAX_SHARED", "shared_snapshot"]

MAX_SHARED = 4

# What pg_export_snapshot() returns: hex words and a counter ("00000003-0000001B-1").
# It is spliced into SET TRANSACTION SNAPSHOT (a utility statement takes no
# parameters), so it is checked with a full match first.
_SNAPSHOT_ID = re.compile(r"[0-9A-F]{8}(?:-[0-9A-F]{8})+-[0-9]+")

_EXPORT = sa.text("SELECT pg_export_snapshot()")


@dataclass(slots=True)
class _Budget:
    in_use: int = 0


_budgets: weakref.WeakKeyDictionary[sa.Engine, _Budget] = weakref.WeakKeyDictionary()


def _shareable(conn: AsyncConnection) -> bool:
    """A PostgreSQL connection whose transaction is (or, at its first statement, will
    be) a ``REPEATABLE READ`` read: one snapshot for all of it."""
    if conn.dialect.name != "postgresql" or conn.sync_connection is None:
        return False
    options = conn.sync_connection.get_execution_options()
    return options.get("isolation_level") == "REPEATABLE READ" and bool(
        options.get("postgresql_readonly", False)
    )


@contextlib.asynccontextmanager
async def shared_snapshot(conn: AsyncConnection) -> AsyncIterator[AsyncConnection | None]:
    """A second connection in ``conn``'s snapshot, or ``None`` (see the module's note).

    ``conn``'s transaction must stay open for the whole block: the exported
    snapshot is valid only while the exporting transaction is.
    """
    budget = _budgets.setdefault(conn.engine.sync_engine, _Budget())
    if not _shareable(conn) or budget.in_use >= MAX_SHARED:
        yield None
        return
    budget.in_use += 1
    try:
        snapshot = str((await conn.execute(_EXPORT)).scalar_one())
        if _SNAPSHOT_ID.fullmatch(snapshot) is None:
            raise ValueError(f"unexpected snapshot id from pg_export_snapshot(): {snapshot!r}")
        async with read_transaction(conn.engine) as sibling:
            await sibling.exec_driver_sql(f"SET TRANSACTION SNAPSHOT '{snapshot}'")
            yield sibling
    finally:
        budget.in_use -= 1
