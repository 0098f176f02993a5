"""The two units of work portability needs, from ``app.db.transactions``.

An export is one read snapshot however long it streams (PostgreSQL:
``REPEATABLE READ READ ONLY``; SQLite: one deferred transaction, one WAL
snapshot); an import is one write transaction covering everything it
touches. Both are opened by the route itself rather than the request's
dependency, because the export outlives the handler (it is streamed) and
the import validates for a long time before it may take the write lock.
"""

from __future__ import annotations

from app.db.transactions import read_transaction as read_snapshot
from app.db.transactions import write_transaction as write_unit

__all__ = ["read_snapshot", "write_unit"]
