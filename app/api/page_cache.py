"""Answers of read routes kept per process while the database is unchanged.

A daily log is read far more than it is written: the web client and the
Memos clients fetch the same first page of the list again on every focus
and refresh, and each fetch ran the page statement, the related-row
statement and built fifty memo resources (about 4 ms of CPU on the 2-core
machine, so a few hundred lists a second). A route that opts in
(``opt={"page_cache": True}``) has its 200 answers kept here, keyed by
everything the handler's answer depends on that is not in the database,
and stamped with the database's generation (``app.db.generation``) read
before the request's snapshot. A later request with the same key is
answered with the same bytes only when the generation it reads is the
same, that is when nothing at all has been committed since: any write by
any process (a memo, a grant, a setting, a revoked key) makes every entry
stale at once. Nothing here decides who may read what; the audience is
whatever the handler computed for that exact caller.

The key: the path and raw query string, the resolved caller (user, role,
credential, the key's restriction), the instance access setting the
caller's statement read (``app.auth.middleware``), and the current second
when the query mentions CEL's ``now``. Responses that set a cookie, are not
200, or are larger than ``MAX_ENTRY`` are never kept; the whole cache is
bounded in bytes (``Settings.page_cache_bytes``, 0 turns it off) and
evicts the least recently used entry.
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from litestar.enums import ScopeType
from litestar.types import (
    ASGIApp,
    HTTPResponseBodyEvent,
    HTTPResponseStartEvent,
    Message,
    Receive,
    Scope,
    Send,
)

from app.access.caller import Caller
from app.auth.middleware import ACCESS_SCOPE_KEY
from app.db.generation import GENERATION_SCOPE_KEY, Generation

__all__ = ["PageCache", "PageCacheMiddleware"]

MAX_ENTRY = 1024 * 1024  # bytes of one kept answer


@dataclass(frozen=True, slots=True)
class Page:
    generation: str
    status: int
    headers: tuple[tuple[bytes, bytes], ...]
    body: bytes

    @property
    def size(self) -> int:
        return len(self.body) + sum(len(k) + len(v) for k, v in self.headers) + 64


class PageCache:
    """Least-recently-used answers, bounded by their total size in bytes."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.size = 0
        self.hits = 0
        self.misses = 0
        self._pages: OrderedDict[tuple[Any, ...], Page] = OrderedDict()

    def __len__(self) -> int:
        return len(self._pages)

    def get(self, key: tuple[Any, ...], generation: str) -> Page | None:
        page = self._pages.get(key)
        if page is None or page.generation != generation:
            self.misses += 1
            return None
        self._pages.move_to_end(key)
        self.hits += 1
        return page

    def put(self, key: tuple[Any, ...], page: Page) -> None:
        if page.size > min(MAX_ENTRY, self.max_bytes):
            return
        old = self._pages.pop(key, None)
        if old is not None:
            self.size -= old.size
        self._pages[key] = page
        self.size += page.size
        while self.size > self.max_bytes:
            _, evicted = self._pages.popitem(last=False)
            self.size -= evicted.size


def page_key(scope: Scope, now: float) -> tuple[Any, ...]:
    """Everything the answer depends on that the database's generation does not cover."""
    user = scope.get("user")
    caller = user if isinstance(user, Caller) else None
    query: bytes = scope.get("query_string", b"")
    second = int(now) if b"now" in query.lower() else None
    # The ACCESS setting as read (a JSON value): canonical text, so it hashes.
    access = json.dumps(scope.get(ACCESS_SCOPE_KEY), sort_keys=True, default=str)
    return (scope["path"], query, caller, access, second)


class PageCacheMiddleware:
    """Answer an opted-in GET from :class:`PageCache` when the database is unchanged.

    Runs after authentication and rate limits (a kept answer still counts
    against the caller's budget) and before any dependency: a hit takes no
    request slot, no connection and no transaction.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        handler = scope.get("route_handler")
        state = scope["app"].state
        cache: PageCache | None = getattr(state, "page_cache", None)
        generation: Generation | None = getattr(state, "generation", None)
        if (
            scope["type"] != ScopeType.HTTP
            or scope.get("method") != "GET"
            or handler is None
            or not handler.opt.get("page_cache")
            or cache is None
            or generation is None
        ):
            await self.app(scope, receive, send)
            return
        # Before the request's snapshot (app.db.generation); on PostgreSQL the
        # caller's statement has read it already.
        read = scope.get(GENERATION_SCOPE_KEY)
        token = read if isinstance(read, str) else await generation.read()
        if token is None:
            await self.app(scope, receive, send)
            return
        key = page_key(scope, time.time())
        try:
            hash(key)
        except TypeError:  # a caller value that cannot key a dict: never kept
            await self.app(scope, receive, send)
            return
        page = cache.get(key, token)
        if page is not None:
            start: HTTPResponseStartEvent = {
                "type": "http.response.start",
                "status": page.status,
                "headers": page.headers,
            }
            body: HTTPResponseBodyEvent = {
                "type": "http.response.body",
                "body": page.body,
                "more_body": False,
            }
            await send(start)
            await send(body)
            return
        sent: list[Message] = []

        async def keep(message: Message) -> None:
            sent.append(message)
            await send(message)

        await self.app(scope, receive, keep)
        kept = _page(token, sent)
        if kept is not None:
            cache.put(key, kept)


def _page(generation: str, sent: list[Message]) -> Page | None:
    """The answer as sent, when it is a complete 200 worth keeping."""
    if not sent or sent[0]["type"] != "http.response.start" or sent[0]["status"] != 200:
        return None
    headers = tuple((bytes(k), bytes(v)) for k, v in sent[0].get("headers", ()))
    if any(k.lower() == b"set-cookie" for k, _ in headers):
        return None
    body = bytearray()
    for message in sent[1:]:
        if message["type"] != "http.response.body":
            return None
        body += message.get("body", b"")
        if len(body) > MAX_ENTRY:
            return None
    if sent[-1].get("more_body", False):
        return None
    return Page(generation, 200, headers, bytes(body))
