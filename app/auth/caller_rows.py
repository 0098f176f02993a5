"""The caller's row kept per process while the database is unchanged (SQLite).

Every signed-in request starts with the caller's statement
(``app.auth.middleware``): the credential's row, its user, the ACCESS
setting. On SQLite that is a thread hop through the driver and about a
fifth of a kept page's time (``app.api.page_cache``), for a row that changes
only when someone signs out, revokes a key, or an admin edits a user or the
instance. So the row is kept here, stamped with the database's generation
(``app.db.generation``) read *before* the statement, and used again only
while a generation read now is the same: nothing at all has been committed
since, by any connection of any process, so the statement would return the
same row. The one thing the row depends on that is not in the database is
the clock: a kept row past its ``expires_ts`` is never used.

Only where the generation is local (SQLite's ``PRAGMA data_version``, read
on the loop's thread in microseconds). On PostgreSQL reading the generation
is itself a round trip, and the caller's statement already returns it as a
column, so nothing would be saved.

Keyed by the credential's kind and its digest, never the secret itself.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

__all__ = ["MAX_ROWS", "CallerRows"]

MAX_ROWS = 4096  # credentials kept per process; the least recently used goes first


class CallerRows:
    """Least-recently-used caller rows, each valid for one generation."""

    def __init__(self, max_rows: int = MAX_ROWS) -> None:
        self.max_rows = max_rows
        self.hits = 0
        self._rows: OrderedDict[tuple[str, str], tuple[str, Any]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._rows)

    def get(self, key: tuple[str, str], generation: str, now: int) -> Any | None:
        """The row read at ``generation`` when it is still live at ``now``."""
        kept = self._rows.get(key)
        if kept is None:
            return None
        stamp, row = kept
        if stamp != generation or (row.expires_ts is not None and row.expires_ts <= now):
            del self._rows[key]
            return None
        self._rows.move_to_end(key)
        self.hits += 1
        return row

    def put(self, key: tuple[str, str], generation: str, row: Any) -> None:
        self._rows[key] = (generation, row)
        self._rows.move_to_end(key)
        while len(self._rows) > self.max_rows:
            self._rows.popitem(last=False)
