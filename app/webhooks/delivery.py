"""The delivery worker: claim due events in the database, send them, record the outcome.

Reads run in :func:`~app.db.transactions.read_transaction` (one snapshot),
writes in :func:`~app.db.transactions.write_transaction` (SQLite's write lock
taken up front, behind the in-process writer gate). Safe with several
processes on one database: an event is claimed by one
``UPDATE ... WHERE state = 'PENDING' AND claimed_until_ms < now RETURNING``
(PostgreSQL adds ``FOR UPDATE SKIP LOCKED`` to the choice, SQLite serialises
writers), which sets a lease longer than any attempt can take. A process
killed mid-attempt leaves a lease that runs out; the next claim retries the
event with the same ``webhook-id`` (at-least-once; receivers deduplicate on
it, as Standard Webhooks intends).

Each attempt asks the read rule again as the webhook's owner (:mod:`.audience`),
of the memo as the event recorded it and as it is now, before anything leaves
the server; an event the owner can
no longer read is WITHHELD, logged without the memo's name. Failures back off
exponentially (``base * 2**(n-1)``, capped, plus up to 10% jitter) until
``max_attempts``; a refused destination (SSRF rule) fails at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import secrets
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import sqlalchemy as sa
import structlog
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.access.admission import readable
from app.access.audience import AccessMode, MemoFacts
from app.access.caller import Caller
from app.access.vocab import MemoState
from app.db.schema import memo, webhook, webhook_delivery, webhook_event
from app.db.transactions import read_transaction, write_transaction
from app.instance.store import AccessSettings, load_access
from app.jobs.lease import leased
from app.net import guarded
from app.settings import Settings
from app.webhooks import payload
from app.webhooks.audience import creator_state, facts_of, may_read, memo_row, owner_caller
from app.webhooks.outbox import Activity, now_ms
from app.webhooks.signing import sign

log = structlog.get_logger("daybook.webhooks")

FINAL = ("DELIVERED", "FAILED", "WITHHELD")
RETENTION_MS = 7 * 24 * 3600 * 1000  # finished events and their log are kept a week
MAX_ERROR = 500
MAX_REPLY = 64 * 1024  # bytes of a receiver's answer read (Memos reads its JSON code)


@dataclass(frozen=True, slots=True)
class Policy:
    destinations: guarded.Policy
    timeout: float = 10.0
    retry_base: float = 5.0
    retry_cap: float = 3600.0
    max_attempts: int = 12
    poll: float = 1.0
    batch: int = 16
    jitter: float = 0.1

    @property
    def limits(self) -> guarded.Limits:
        """One POST, its answer's head read; a redirect is an answer (a failure), not followed."""
        return guarded.Limits(
            deadline=self.timeout, max_bytes=MAX_REPLY, max_redirects=0, max_connections=16
        )

    @property
    def lease_ms(self) -> int:
        """Longer than an attempt can take (its deadline), with room for the bookkeeping."""
        return int((self.timeout * 2 + 1) * 1000)

    @classmethod
    def from_settings(cls, settings: Settings) -> Policy:
        return cls(
            destinations=guarded.Policy.parse(
                settings.webhook_allow_private, setting="DAYBOOK_WEBHOOK_ALLOW_PRIVATE"
            ),
            timeout=settings.webhook_timeout,
            retry_base=settings.webhook_retry_base,
            retry_cap=settings.webhook_retry_cap,
            max_attempts=max(1, settings.webhook_max_attempts),
            poll=settings.webhook_poll,
        )


def backoff_ms(attempts: int, policy: Policy, rand: float | None = None) -> int:
    """Delay before attempt ``attempts + 1``: exponential, capped, jittered upward only."""
    delay = min(policy.retry_cap, policy.retry_base * 2 ** max(0, attempts - 1))
    r = random.random() if rand is None else rand  # noqa: S311 (jitter, not a secret)
    return int(delay * (1 + policy.jitter * r) * 1000)


@dataclass(frozen=True, slots=True)
class Claim:
    id: int
    msg_id: str
    webhook_id: int
    activity: str
    memo_id: int
    parent_id: int | None
    snapshot: Any
    attempts: int
    token: str


async def claim(engine: AsyncEngine, policy: Policy, limit: int | None = None) -> list[Claim]:
    ev = webhook_event
    now = now_ms()
    async with read_transaction(engine) as conn:
        due = (
            await conn.execute(
                sa.select(ev.c.id)
                .where(ev.c.state == "PENDING", ev.c.next_attempt_ms <= now)
                .limit(1)
            )
        ).first()
    if due is None:
        return []  # the common idle case: a read, no write lock taken
    token = secrets.token_hex(8)
    choice = (
        sa.select(ev.c.id)
        .where(ev.c.state == "PENDING", ev.c.next_attempt_ms <= now, ev.c.claimed_until_ms < now)
        .order_by(ev.c.next_attempt_ms, ev.c.id)
        .limit(limit or policy.batch)
    )
    if engine.dialect.name == "postgresql":
        choice = choice.with_for_update(skip_locked=True)
    async with write_transaction(engine) as conn:
        rows = (
            await conn.execute(
                ev.update()
                .where(
                    ev.c.id.in_(choice.scalar_subquery()),
                    ev.c.state == "PENDING",
                    ev.c.claimed_until_ms < now,
                )
                .values(
                    claimed_until_ms=now + policy.lease_ms,
                    claim_token=token,
                    attempts=ev.c.attempts + 1,
                )
                .returning(
                    ev.c.id,
                    ev.c.msg_id,
                    ev.c.webhook_id,
                    ev.c.activity,
                    ev.c.memo_id,
                    ev.c.parent_id,
                    ev.c.snapshot,
                    ev.c.attempts,
                )
            )
        ).all()
    return [
        Claim(
            id=r.id,
            msg_id=r.msg_id,
            webhook_id=r.webhook_id,
            activity=r.activity,
            memo_id=r.memo_id,
            parent_id=r.parent_id,
            snapshot=r.snapshot,
            attempts=r.attempts,
            token=token,
        )
        for r in rows
    ]


@dataclass(frozen=True, slots=True)
class Prepared:
    url: str
    secret: str
    body: bytes


async def _hidden_names(
    conn: AsyncConnection, owner: Caller, mode: AccessMode, names: set[str]
) -> set[str]:
    """Those of ``names`` (``memos/{uid}``) that exist and the owner cannot read now.

    A name recorded in the event was readable by the owner when it was written;
    one whose memo is gone since tells the owner nothing new, and stays.
    """
    uids = {n.removeprefix("memos/") for n in names}
    if not uids:
        return set()
    found = await conn.execute(
        sa.select(memo.c.uid, readable(owner, mode).label("ok")).where(
            memo.c.uid.in_(uids),
            memo.c.state != MemoState.TRASHED,  # trashed: gone since
        )
    )
    return {f"memos/{u}" for u, ok in found.all() if not ok}


async def _still_readable(
    conn: AsyncConnection, owner: Caller, mode: AccessMode, c: Claim
) -> dict[str, Any] | None:
    """The event's memo as written, if the owner may still read it; None to withhold.

    Asked of the memo as the event recorded it (with the owner's grants and the
    creator's state as they are now) and, while the row exists, of the row as it
    is now: a memo made PRIVATE, moved or archived since is withheld. A memo
    deleted (or trashed) since is judged by the recorded facts alone. Related memos and the
    parent named in the recorded memo are kept only while still readable.
    """
    snap = c.snapshot
    if not isinstance(snap, dict):
        return None

    async def passes(recorded: Any, memo_id: int | None, now_too: bool) -> bool:
        if not isinstance(recorded, dict):
            return False
        state = await creator_state(conn, int(recorded["creator_id"]))
        if not await may_read(conn, owner, MemoFacts(creator_state=state, **recorded), mode):
            return False
        row = await memo_row(conn, memo_id) if now_too and memo_id is not None else None
        if row is None or row.state == MemoState.TRASHED:  # deleted since: the recorded facts
            return True
        return await may_read(conn, owner, facts_of(row), mode)

    if not await passes(snap["facts"], c.memo_id, c.activity != Activity.DELETED.value):
        return None
    if c.parent_id is not None and not await passes(snap.get("parent_facts"), c.parent_id, True):
        return None
    shown = dict(snap["memo"])
    own = snap["name"]
    named = {own}
    for r in shown.get("relations", []):
        named |= {r.get("memo", {}).get("name", ""), r.get("related_memo", {}).get("name", "")}
    if isinstance(shown.get("parent"), str):
        named.add(shown["parent"])
    hidden = await _hidden_names(conn, owner, mode, named - {own, ""})
    kept = [
        r
        for r in shown.get("relations", [])
        if r.get("memo", {}).get("name") not in hidden
        and r.get("related_memo", {}).get("name") not in hidden
    ]
    shown.pop("relations", None)
    if kept:
        shown["relations"] = kept
    if isinstance(shown.get("parent"), str) and shown["parent"] in hidden:
        shown.pop("parent")
    return {"memo": shown, "creator": snap["creator"]}


async def prepare(engine: AsyncEngine, c: Claim) -> Prepared | str | None:
    """The signed request's parts; ``None`` if the webhook is gone, a reason if withheld."""
    async with read_transaction(engine) as conn:
        hook = (
            await conn.execute(
                sa.select(webhook.c.url, webhook.c.secret, webhook.c.owner_id).where(
                    webhook.c.id == c.webhook_id
                )
            )
        ).first()
        if hook is None:
            return None
        owner = await owner_caller(conn, hook.owner_id)
        if owner is None:
            return "the webhook's owner is not an active user"
        mode = (await load_access(conn, AccessSettings())).access_mode
        shown = await _still_readable(conn, owner, mode, c)
    if shown is None:
        return "the memo is not readable by the webhook's owner"
    return Prepared(
        hook.url, hook.secret, payload.body(hook.url, c.activity, shown["creator"], shown["memo"])
    )


@dataclass(frozen=True, slots=True)
class Outcome:
    outcome: str  # DELIVERED | FAILED | REFUSED | WITHHELD
    status_code: int | None = None
    error: str | None = None
    duration_ms: int = 0


def judge(reply: guarded.Reply) -> Outcome:
    """2xx is success, unless the body is Memos' ``{"code": N}`` with N != 0."""
    if not 200 <= reply.status_code < 300:
        error = f"HTTP {reply.status_code}"
        if 300 <= reply.status_code < 400:
            error += " (redirects are not followed)"
        return Outcome("FAILED", reply.status_code, error, reply.elapsed_ms)
    try:
        parsed = json.loads(reply.body)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and isinstance(parsed.get("code"), int) and parsed["code"] != 0:
        message = str(parsed.get("message", ""))[:200]
        return Outcome(
            "FAILED", reply.status_code, f"code {parsed['code']}: {message}", reply.elapsed_ms
        )
    return Outcome("DELIVERED", reply.status_code, None, reply.elapsed_ms)


async def send(prepared: Prepared, c: Claim, policy: Policy) -> Outcome:
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "Daybook-Webhooks",
        **sign(prepared.secret, c.msg_id, int(time.time()), prepared.body),
    }
    started = time.monotonic()
    try:
        reply = await guarded.request(
            "POST",
            prepared.url,
            content=prepared.body,
            headers=headers,
            policy=policy.destinations,
            limits=policy.limits,
        )
    except guarded.Refused as exc:
        return Outcome("REFUSED", None, str(exc))
    except (httpx.HTTPError, OSError, TimeoutError, ValueError) as exc:
        elapsed = int((time.monotonic() - started) * 1000)
        return Outcome("FAILED", None, f"{type(exc).__name__}: {exc}"[:MAX_ERROR], elapsed)
    return judge(reply)


async def record(engine: AsyncEngine, c: Claim, result: Outcome, policy: Policy) -> str:
    """Write the attempt to the log and move the event on; answers the event's new state."""
    now = now_ms()
    if result.outcome in ("DELIVERED", "WITHHELD"):
        state = result.outcome
    elif result.outcome == "REFUSED" or c.attempts >= policy.max_attempts:
        state = "FAILED"
    else:
        state = "PENDING"
    values: dict[str, Any] = {
        "state": state,
        "claimed_until_ms": 0,
        "claim_token": None,
        "last_error": result.error,
    }
    if state == "PENDING":
        values["next_attempt_ms"] = now + backoff_ms(c.attempts, policy)
    else:
        values["finished_ms"] = now
    async with write_transaction(engine) as conn:
        await conn.execute(
            webhook_event.update()
            .where(webhook_event.c.id == c.id, webhook_event.c.claim_token == c.token)
            .values(**values)
        )
        exists = (
            await conn.execute(sa.select(webhook_event.c.id).where(webhook_event.c.id == c.id))
        ).first()
        if exists is not None:
            await conn.execute(
                webhook_delivery.insert().values(
                    event_id=c.id,
                    webhook_id=c.webhook_id,
                    attempt=c.attempts,
                    outcome=result.outcome,
                    status_code=result.status_code,
                    error=result.error[:MAX_ERROR] if result.error else None,
                    started_ms=now - result.duration_ms,
                    duration_ms=result.duration_ms,
                )
            )
    return state


async def deliver(engine: AsyncEngine, c: Claim, policy: Policy) -> str:
    try:
        prepared = await prepare(engine, c)
    except Exception as exc:  # counted like a failed attempt, so it cannot loop forever
        log.warning("webhook event could not be prepared", event=c.msg_id, error=str(exc))
        return await record(engine, c, Outcome("FAILED", error=f"internal: {exc}"), policy)
    if prepared is None:
        return "GONE"  # the webhook was deleted: its events went with it
    if isinstance(prepared, str):
        return await record(engine, c, Outcome("WITHHELD", error=prepared), policy)
    return await record(engine, c, await send(prepared, c, policy), policy)


async def run_once(engine: AsyncEngine, policy: Policy) -> list[str]:
    """Claim what is due and attempt it, concurrently; the new states."""
    claims = await claim(engine, policy)
    return list(await asyncio.gather(*(deliver(engine, c, policy) for c in claims)))


async def prune(engine: AsyncEngine) -> None:
    async with write_transaction(engine) as conn:
        await conn.execute(
            webhook_event.delete().where(
                webhook_event.c.state.in_(FINAL),
                webhook_event.c.finished_ms < now_ms() - RETENTION_MS,
            )
        )


async def worker(engine: AsyncEngine, policy: Policy) -> None:
    last_prune = 0.0
    while True:
        try:
            done = await run_once(engine, policy)
            if time.monotonic() - last_prune > 600:
                await prune(engine)
                last_prune = time.monotonic()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the database may be briefly unavailable: keep going
            log.warning("webhook worker error", error=f"{type(exc).__name__}: {exc}")
            done = []
        if not done:
            await asyncio.sleep(policy.poll)


def webhook_lifespan(enabled: bool) -> Any:
    """The app lifespan running :func:`worker` when ``enabled``, in the one
    process holding the ``webhook-delivery`` lease (app.jobs.lease)."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        if not enabled:
            yield
            return
        settings: Settings = app.state.settings
        engine = app.state.engine
        policy = Policy.from_settings(settings)
        # One delivering process per database (claims already make two safe).
        ttl_ms = int(settings.job_lease_seconds * 1000)
        async with leased(
            engine, "webhook-delivery", lambda: worker(engine, policy), ttl_ms=ttl_ms
        ):
            yield

    return lifespan
