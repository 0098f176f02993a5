"""Window counters in the database, shared by every process (decision 0029).

One check is one statement in a write transaction of its own, before the
request's transaction opens (never inside it, so the limiter never holds the
SQLite write lock while a memo write runs, and never waits for itself)::

    INSERT INTO rate_limit (key, window_start, hits) VALUES (:k, :w, :n)
    ON CONFLICT (key) DO UPDATE SET
      hits = CASE WHEN rate_limit.window_start >= excluded.window_start
                  THEN rate_limit.hits + excluded.hits ELSE excluded.hits END,
      window_start = CASE ... the newer of the two ... END
    RETURNING hits

The same text on SQLite (>= 3.35) and PostgreSQL: atomic under concurrency
on both, so N processes enforce one budget exactly. A request refused is
given back (a second statement, only on refusal), so refusals cost nothing
and a large batch that does not fit does not eat the budget of small calls;
while the give-back is in flight another request may see the budget fuller
than it is and be refused too (fail closed, never over the quota).

Reads (policies marked ``leased``) take ``lease`` hits at once and spend
them in process memory, so only one read in ``lease`` touches the database.
That loosens exactness in one direction only: hits leased by a process but
not spent count as spent, so a client spread over P processes may be
refused up to ``P * (lease - 1)`` requests before its quota; never after it.

If the database cannot be reached or stays busy, the check admits the
request (fail open): the request then meets the same database itself, and a
write backlog must not turn into refused reads.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
import structlog
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.auth.throttle import named_key
from app.db.schema import rate_limit as table
from app.db.transactions import write_transaction
from app.errors import Unavailable
from app.limits.policy import Charge, Outcome, Per, window_start

__all__ = ["Limiter", "Subject"]

log = structlog.get_logger("daybook.limits")

PRUNE_EVERY = 600.0  # seconds between deletions of expired rows, per process


@dataclass(frozen=True, slots=True)
class Subject:
    client: str
    user_id: int | None


@dataclass(slots=True)
class _Lease:
    """Hits this process holds for one key and window but has not spent."""

    hits: int  # the key's count in the database when last seen
    left: int
    expires: int


@dataclass(frozen=True, slots=True)
class _Taken:
    key: str
    start: int
    charge: Charge
    leased: bool


def _upsert(dialect: str, key: str, start: int, amount: int) -> Any:
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    stmt = insert(table).values(key=key, window_start=start, hits=amount)
    current = table.c.window_start >= stmt.excluded.window_start
    return stmt.on_conflict_do_update(
        index_elements=[table.c.key],
        set_={
            "hits": sa.case((current, table.c.hits + stmt.excluded.hits), else_=stmt.excluded.hits),
            "window_start": sa.case(
                (current, table.c.window_start), else_=stmt.excluded.window_start
            ),
        },
    ).returning(table.c.hits)


class Limiter:
    """The per-process side of the shared counters (leases), bound to one engine."""

    def __init__(self, engine: AsyncEngine, lease: int) -> None:
        self.engine = engine
        self.lease = max(1, lease)
        self._leases: dict[tuple[str, int], _Lease] = {}
        self._pruned = self._leases_pruned = time.monotonic()
        self._longest = 0  # the longest window charged so far (the pruning horizon)

    @staticmethod
    def key(charge: Charge, subject: Subject) -> str:
        who = (
            f"user:{subject.user_id}"
            if charge.policy.per is Per.USER and subject.user_id is not None
            else f"client:{subject.client}"
        )
        return named_key("rate", charge.policy.name, who)

    @contextlib.asynccontextmanager
    async def _write(self) -> AsyncIterator[AsyncConnection]:
        """A short write transaction of the counter's own.

        SQLite: decision 0018's ``write_transaction`` (BEGIN IMMEDIATE behind
        the writer gate), held for one statement. PostgreSQL: a plain
        transaction at the server's default READ COMMITTED (the UPSERT is
        atomic at any level; setting and resetting the isolation level per
        connection, as ``write_transaction`` does, tripled the check's cost),
        whose commit does not wait for its WAL flush (``SET LOCAL
        synchronous_commit``): a crash may forget the last fraction of a
        second of counts, which a rate limit can afford, and waiting for the
        flush made each check cost a disk sync. SQLite in WAL with
        ``synchronous=NORMAL`` does not sync per commit anyway.
        """
        if self.engine.dialect.name != "postgresql":
            async with write_transaction(self.engine) as conn:
                yield conn
            return
        async with self.engine.connect() as conn, conn.begin():
            await conn.execute(sa.text("SET LOCAL synchronous_commit TO OFF"))
            yield conn

    async def _bump(self, key: str, start: int, amount: int) -> int:
        async with self._write() as conn:
            hits = (
                await conn.execute(_upsert(self.engine.dialect.name, key, start, amount))
            ).scalar_one()
        return int(hits)

    async def _give_back(self, key: str, start: int, amount: int) -> None:
        async with self._write() as conn:
            await conn.execute(
                table.update()
                .where(table.c.key == key, table.c.window_start == start)
                .values(hits=table.c.hits - amount)
            )

    async def _take(self, charge: Charge, key: str, start: int, now: int) -> Outcome:
        """Spend ``charge`` from this process's lease, else from the shared row.

        Concurrent requests of one process may both reach the database; what
        each leases is added to the one entry (never overwritten), so no
        leased hit is lost by a race.
        """
        policy, cost = charge.policy, charge.cost
        reset = start + policy.window - now
        held = self._leases.get((key, start)) if policy.leased else None
        if held is not None and held.left >= cost:
            held.left -= cost
            return Outcome(policy, True, policy.quota - held.hits + held.left, reset)
        have = 0
        if held is not None:  # too little left: take it, lease the rest
            have, held.left = held.left, 0
        need = cost - have
        want = max(need, self.lease) if policy.leased else need
        hits = await self._bump(key, start, want)
        granted = want
        if hits > policy.quota:
            over = hits - policy.quota
            granted = want - over
            if granted < need:  # does not fit: give everything back
                await self._give_back(key, start, want)
                if held is not None:
                    held.left += have
                return Outcome(policy, False, max(0, policy.quota - (hits - want)) + have, reset)
            await self._give_back(key, start, over)
            hits = policy.quota
        spare = granted - need
        if not policy.leased:
            return Outcome(policy, True, policy.quota - hits, reset)
        current = self._leases.get((key, start))
        if current is None:
            current = self._leases[(key, start)] = _Lease(hits, 0, start + policy.window)
        current.left += spare
        current.hits = max(current.hits, hits)
        return Outcome(policy, True, policy.quota - current.hits + current.left, reset)

    async def _undo(self, taken: _Taken) -> None:
        if taken.leased:
            held = self._leases.get((taken.key, taken.start))
            if held is not None:
                held.left += taken.charge.cost
            return
        await self._give_back(taken.key, taken.start, taken.charge.cost)

    async def admit(
        self, charges: tuple[Charge, ...], subject: Subject, now: int
    ) -> tuple[Outcome, ...]:
        """Spend every charge, or none: a refusal gives back what was taken before it."""
        outcomes: list[Outcome] = []
        taken: list[_Taken] = []
        try:
            for charge in charges:
                self._longest = max(self._longest, charge.policy.window)
                key = self.key(charge, subject)
                start = window_start(now, charge.policy.window)
                outcome = await self._take(charge, key, start, now)
                outcomes.append(outcome)
                if not outcome.allowed:
                    for earlier in taken:
                        await self._undo(earlier)
                    break
                taken.append(_Taken(key, start, charge, charge.policy.leased))
            await self._housekeeping(now)
        except (DBAPIError, Unavailable) as exc:
            log.warning("rate limit check skipped: database unavailable", error=str(exc)[:200])
            return ()
        return tuple(outcomes)

    async def _housekeeping(self, now: int) -> None:
        """Forget leases of ended windows (at most once a second when there are
        many); delete rows whose window ended long ago (twice the longest window
        seen, at least two hours), at most every :data:`PRUNE_EVERY` seconds."""
        clock = time.monotonic()
        crowded = len(self._leases) > 10_000 and clock - self._leases_pruned > 1.0
        if crowded or clock - self._pruned > PRUNE_EVERY:
            self._leases = {k: v for k, v in self._leases.items() if v.expires > now}
            self._leases_pruned = clock
        if clock - self._pruned > PRUNE_EVERY:
            self._pruned = clock
            horizon = max(7200, 2 * self._longest)
            async with self._write() as conn:
                await conn.execute(table.delete().where(table.c.window_start < now - horizon))
