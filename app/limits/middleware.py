"""The rate-limit check on every request, after the caller is known (decision 0029).

Runs behind ``AuthMiddleware`` (which puts the caller in ``scope["user"]``)
and before any handler, so the check's own short write never overlaps the
request's transaction. The client is the peer address as resolved from
``--trusted-proxies`` only (``app.server.Daybook``), per /64 for IPv6
(``app.auth.throttle.client_of``), the same client the sign-in throttle keys.

A batch call's body (already read whole by ``app.api.body_limits``) is
counted here: its cost is the length of its longest top-level list
(``memos``, ``usernames``, ``names`` ...), or for a GET the most repeated
query parameter.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from urllib.parse import parse_qsl

import msgspec
from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, ReceiveMessage, Scope, Send

from app.auth.throttle import client_of
from app.errors import ResourceExhausted
from app.limits.policy import Outcome, Policy, charges, is_batch, render
from app.limits.store import Limiter, Subject

__all__ = ["RateLimitMiddleware", "batch_items"]

_STATE_KEY = "rate_limiter"


def batch_items(body: bytes, query: bytes) -> int:
    """A batch call's item count: its longest top-level JSON list, or repeated query key."""
    counts = [0]
    if body.strip():
        try:
            decoded = msgspec.json.decode(body)
        except msgspec.DecodeError:
            decoded = None  # the handler answers 400 for it; cost 1 here
        if isinstance(decoded, dict):
            counts += [len(v) for v in decoded.values() if isinstance(v, list)]
    if query:
        seen: dict[str, int] = {}
        for name, _ in parse_qsl(query.decode("latin-1"), keep_blank_values=True):
            seen[name] = seen.get(name, 0) + 1
        counts += list(seen.values())
    return max(counts)


async def _buffer(receive: Receive) -> tuple[bytes, Receive]:
    """The whole body, and a ``receive`` that replays it."""
    chunks: list[bytes] = []
    pending: list[ReceiveMessage] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            pending.append(message)
            break
        chunks.append(bytes(message.get("body", b"")))
        if not message.get("more_body", False):
            break
    body = b"".join(chunks)
    queue: list[ReceiveMessage] = [{"type": "http.request", "body": body, "more_body": False}]
    queue += pending

    async def replay() -> ReceiveMessage:
        return queue.pop(0) if queue else await receive()

    return body, replay


def _refusal(outcomes: tuple[Outcome, ...]) -> ResourceExhausted:
    refused = next(o for o in outcomes if not o.allowed)
    policy = refused.policy
    wait = max(1, refused.reset)
    return ResourceExhausted(
        f"rate limit exceeded: {policy.name} allows {policy.quota} per {policy.window} s;"
        f" retry in {wait} s",
        retry_after=wait,
        headers=render(outcomes),
    )


class RateLimitMiddleware:
    def __init__(self, app: ASGIApp, policies: Mapping[str, Policy], lease: int) -> None:
        self.app = app
        self.policies = policies
        self.lease = lease

    def _limiter(self, scope: Scope) -> Limiter:
        state = scope["app"].state
        limiter = getattr(state, _STATE_KEY, None)
        if not isinstance(limiter, Limiter) or limiter.engine is not state.engine:
            limiter = Limiter(state.engine, self.lease)
            setattr(state, _STATE_KEY, limiter)
        return limiter

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await self.app(scope, receive, send)
            return
        path, method = scope["path"], scope["method"]
        user_id = getattr(scope.get("user"), "user_id", None)
        items = 0
        if is_batch(path):
            body, receive = await _buffer(receive)
            items = batch_items(body, scope.get("query_string", b""))
        chosen = charges(
            method, path, signed_in=user_id is not None, items=items, policies=self.policies
        )
        if not chosen:
            await self.app(scope, receive, send)
            return
        peer = scope.get("client")
        subject = Subject(client_of(peer[0] if peer else ""), user_id)
        outcomes = await self._limiter(scope).admit(chosen, subject, int(time.time()))
        if any(not o.allowed for o in outcomes):
            raise _refusal(outcomes)
        extra = [(k.lower().encode(), v.encode()) for k, v in render(outcomes).items()]
        if not extra:
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {bytes(n).lower() for n, _ in message.get("headers", [])}
                added = [(n, v) for n, v in extra if n not in names]
                message = {**message, "headers": [*message.get("headers", []), *added]}
            await send(message)

        await self.app(scope, receive, send_with_headers)
