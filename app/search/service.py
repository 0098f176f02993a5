"""``SearchMemos``: validate, run both arms under one admission predicate, fuse, page.

Admission is exactly the list's: top-level memos in state NORMAL, the
audience predicate, and the caller's CEL filter as a separate conjunct (a
filter can only narrow). Every arm puts it in the WHERE clause of its own
statement, before its LIMIT.

Paging: the fused list is deterministic for a given query and database
state; a page token carries the offset into it, signed with a fingerprint of
query, mode, filter, pool and caller (``app.api.paging``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from app.access.audience import AccessMode, audience_predicate
from app.access.caller import Caller
from app.api.paging import decode_token, encode_token, fingerprint
from app.db.schema import memo
from app.errors import InvalidArgument
from app.search.fusion import Fused, rrf
from app.search.lexical import lexical_ranking
from app.search.runtime import SearchRuntime
from app.search.semantic import semantic_arm
from app.search.terms import MAX_QUERY_CHARS, parse_terms

MODES = ("hybrid", "lexical", "semantic")
DEFAULT_POOL = 50
MAX_POOL = 200
DEFAULT_PAGE = 10


@dataclass(frozen=True, slots=True)
class SearchQuery:
    caller: Caller | None
    access_mode: AccessMode
    text: str
    mode: str = "hybrid"
    filter_text: str | None = None
    filter_clause: ColumnElement[bool] | None = None
    pool: int = DEFAULT_POOL
    page_size: int = DEFAULT_PAGE
    page_token: str | None = None


@dataclass(frozen=True, slots=True)
class SearchPage:
    hits: list[Fused]
    rows: dict[int, Any]
    next_token: str
    pending: int


def validate(text: str | None, mode: str | None, pool: int | None) -> tuple[str, str, int]:
    """The query text, mode and pool size, or a 400 naming the problem."""
    if text is None or not text.strip():
        raise InvalidArgument("query: must not be empty")
    if len(text) > MAX_QUERY_CHARS:
        raise InvalidArgument(
            f"query: {len(text)} characters exceeds the limit of {MAX_QUERY_CHARS}"
        )
    chosen = (mode or "hybrid").strip().lower()
    if chosen not in MODES:
        raise InvalidArgument(f"mode: {mode!r} is not one of {', '.join(MODES)}")
    if pool is None or pool == 0:
        pool = DEFAULT_POOL
    if not 1 <= pool <= MAX_POOL:
        raise InvalidArgument(f"poolSize: must be between 1 and {MAX_POOL}")
    return text.strip(), chosen, pool


def admission(q: SearchQuery) -> list[ColumnElement[bool]]:
    conditions: list[ColumnElement[bool]] = [
        memo.c.parent_id.is_(None),
        memo.c.state == "NORMAL",
        audience_predicate(q.caller, q.access_mode),
    ]
    if q.filter_clause is not None:
        conditions.append(q.filter_clause.self_group())
    return conditions


async def search_memos(
    conn: AsyncConnection, runtime: SearchRuntime, q: SearchQuery, secret: str
) -> SearchPage:
    query_id = fingerprint(
        "search", q.text, q.mode, q.filter_text, q.pool, q.caller.user_id if q.caller else None
    )
    offset = 0
    if q.page_token:
        key = decode_token(secret, query_id, q.page_token)
        if len(key) != 1 or type(key[0]) is not int or key[0] < 0:
            raise InvalidArgument("pageToken: invalid page token")
        offset = key[0]
    admitted = admission(q)
    embedder = await runtime.loaded_embedder()
    vector = await runtime.embed_query(q.text) if q.mode != "lexical" else None
    # The semantic arm first: on SQLite it opens the read snapshot that the pending
    # count shares with it (and the lexical arm and the page's rows read too).
    arm = await semantic_arm(
        conn,
        runtime.vector_cache(embedder.name, embedder.dim),
        embedder.name,
        embedder.dim,
        runtime.pgvector,
        vector,
        admitted,
        q.pool,
    )
    semantic = arm.ranking
    lexical: list[int] = []
    if q.mode != "semantic":
        # mode=lexical is this arm of hybrid (same tiers, same ranks), plus a
        # last any-word tier when the arm would be empty: a keyword search
        # should not come back empty while a word of the query matches.
        lexical = await lexical_ranking(
            conn, parse_terms(q.text), admitted, q.pool, any_word=q.mode == "lexical"
        )
    fused = rrf(lexical, semantic)
    page = fused[offset : offset + q.page_size]
    next_token = ""
    if offset + q.page_size < len(fused):
        next_token = encode_token(secret, query_id, [offset + q.page_size])
    rows: dict[int, Any] = {}
    if page:
        ids = [h.memo_id for h in page]
        rows = {r.id: r for r in await conn.execute(sa.select(memo).where(memo.c.id.in_(ids)))}
        # PostgreSQL reads each statement in its own snapshot: drop a memo deleted since
        page = [h for h in page if h.memo_id in rows]
    return SearchPage(page, rows, next_token, arm.pending)
