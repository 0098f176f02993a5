"""Sign-in throttling that an anonymous attacker cannot turn into a lockout.

Two keys are counted for every sign-in attempt, in the database (table
``throttle``) so that every process on one database shares them:

- ``(username, client)``: guesses at one account from one client. A real user
  signs in from another client, so an attacker exhausting this key locks out
  nobody but itself.
- ``client``: guesses from one client across usernames (password spraying),
  with a higher allowance.

A client is the peer address (after trusted-proxy resolution, see
``app.server``); IPv6 addresses count per /64, the block one subscriber gets.

Each key has ``free`` attempts; every attempt after them must wait a back-off
that doubles (1 s, 2 s, 4 s ... capped), and an attempt made while waiting is
refused with 429 and ``Retry-After`` without being counted. A key is forgotten
after ``quiet`` seconds without attempts, and a successful sign-in forgets
its ``(username, client)`` key. An attempt is counted *before* the password is
checked, with a compare-and-set on the row, so concurrent guesses cannot
overrun the allowance. Unknown usernames are counted exactly like real ones.

No library fits: Litestar's rate limiter and ``limits`` keep counters in
memory, Redis or Memcached, not in the application's SQL database.
"""

from __future__ import annotations

import hashlib
import ipaddress
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from app.db.schema import throttle as table
from app.db.transactions import write_transaction

PRUNE_AFTER = 24 * 3600  # idle seconds after which any key is deleted (>= every policy's quiet)
CAS_ATTEMPTS = 20  # compare-and-set retries under contention before failing closed


@dataclass(frozen=True, slots=True)
class Policy:
    free: int  # attempts allowed before back-off starts
    cap: int = 15 * 60  # longest back-off, seconds
    quiet: int = 15 * 60  # seconds without attempts after which the key is forgotten


@dataclass(frozen=True, slots=True)
class KeyState:
    attempts: int
    last_ts: int
    blocked_until: int


@dataclass(frozen=True, slots=True)
class Verdict:
    """``allowed`` with the key's next state, or refused for ``retry_after`` seconds."""

    allowed: bool
    state: KeyState
    retry_after: int = 0


def backoff(policy: Policy, attempts: int) -> int:
    """Seconds the attempt after ``attempts`` counted ones must wait."""
    over = attempts - policy.free
    if over < 0:
        return 0
    return min(policy.cap, 1 << min(over, 30))


def decide(state: KeyState | None, now: int, policy: Policy) -> Verdict:
    """Pure: whether an attempt at ``now`` may go ahead, and the key's state after it."""
    if state is not None and state.blocked_until > now:
        return Verdict(False, state, state.blocked_until - now)
    attempts = 1 if state is None or now - state.last_ts >= policy.quiet else state.attempts + 1
    return Verdict(True, KeyState(attempts, now, now + backoff(policy, attempts)))


def relieve(state: KeyState, policy: Policy) -> KeyState:
    """Pure: a successful sign-in takes its own attempt back off a shared key."""
    attempts = max(0, state.attempts - 1)
    blocked = min(state.blocked_until, state.last_ts + backoff(policy, attempts))
    return KeyState(attempts, state.last_ts, blocked)


def client_of(host: str) -> str:
    """The throttled client of a peer address: IPv6 per /64, anything else as is."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host[:128]
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is None:
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return str(address)


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode("utf-8", "surrogatepass")).hexdigest()


def user_key(username: str, client: str) -> str:
    return _digest("user", username, client)


def client_key(client: str) -> str:
    return _digest("client", client)


def named_key(*parts: str) -> str:
    """A key for another throttled action (e.g. ``("memo-id", user id)``)."""
    return _digest(*parts)


def _write(engine: AsyncEngine) -> Any:
    """A short write transaction of its own (the request's rolls back with a 401/409).

    Decision 0018's ``write_transaction`` (BEGIN IMMEDIATE behind the writer
    gate on SQLite). Throttle writes run before the request's own write
    begins, or after it ended (app.memos.chosen_ids), never while it holds
    the write lock, which would make them wait for themselves.
    """
    return write_transaction(engine)


async def _load(engine: AsyncEngine, key: str) -> KeyState | None:
    async with engine.connect() as conn:
        row = (
            await conn.execute(
                sa.select(
                    table.c.attempts,
                    table.c.last_ts,
                    table.c.blocked_until,
                ).where(table.c.key == key)
            )
        ).first()
    return KeyState(row.attempts, row.last_ts, row.blocked_until) if row else None


async def _swap(engine: AsyncEngine, key: str, old: KeyState | None, new: KeyState) -> bool:
    """Write ``new`` if the row still holds ``old``; False when another attempt won."""
    values = {"attempts": new.attempts, "last_ts": new.last_ts, "blocked_until": new.blocked_until}
    async with _write(engine) as conn:
        if old is None:
            try:
                async with conn.begin_nested():
                    await conn.execute(table.insert().values(key=key, **values))
            except IntegrityError:
                return False
            return True
        result = await conn.execute(
            table.update()
            .where(
                table.c.key == key,
                table.c.attempts == old.attempts,
                table.c.last_ts == old.last_ts,
                table.c.blocked_until == old.blocked_until,
            )
            .values(**values)
        )
        return bool(result.rowcount == 1)


async def peek(engine: AsyncEngine, key: str, now: int, policy: Policy) -> Verdict:
    return decide(await _load(engine, key), now, policy)


async def count_attempt(engine: AsyncEngine, key: str, now: int, policy: Policy) -> Verdict:
    """Count one attempt on ``key`` if it may go ahead (compare-and-set, fail closed)."""
    for _ in range(CAS_ATTEMPTS):
        old = await _load(engine, key)
        verdict = decide(old, now, policy)
        if not verdict.allowed:
            return verdict
        if await _swap(engine, key, old, verdict.state):
            return verdict
    return Verdict(False, KeyState(0, now, now + 1), 1)


async def admit(engine: AsyncEngine, keys: list[tuple[str, Policy]], now: int) -> int:
    """Count one attempt on every key; 0 when it may go ahead, else seconds to wait.

    All keys are checked before any is counted, so a refused attempt counts
    nowhere (a throttled client cannot push a shared key further).
    """
    for key, policy in keys:
        verdict = await peek(engine, key, now, policy)
        if not verdict.allowed:
            return max(1, verdict.retry_after)
    for key, policy in keys:
        verdict = await count_attempt(engine, key, now, policy)
        if not verdict.allowed:
            return max(1, verdict.retry_after)
    return 0


async def forget(engine: AsyncEngine, key: str) -> None:
    """A successful sign-in clears its ``(username, client)`` key."""
    async with _write(engine) as conn:
        await conn.execute(table.delete().where(table.c.key == key))


async def credit(engine: AsyncEngine, key: str, policy: Policy) -> None:
    """Give the attempt of a successful sign-in back to a shared (client) key."""
    for _ in range(CAS_ATTEMPTS):
        old = await _load(engine, key)
        if old is None or await _swap(engine, key, old, relieve(old, policy)):
            return


async def prune(engine: AsyncEngine, now: int, quiet: int = PRUNE_AFTER) -> None:
    """Delete keys idle for longer than ``quiet`` and not blocked (housekeeping, on each
    successful sign-in). Invisible to the rule: :func:`decide` treats such a key as new."""
    async with _write(engine) as conn:
        await conn.execute(
            table.delete().where(table.c.last_ts < now - quiet, table.c.blocked_until <= now)
        )
