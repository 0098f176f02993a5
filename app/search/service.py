"""``SearchMemos``: validate, run both arms under one admission predicate, floor, fuse, page.

Admission is exactly the list's: top-level memos in state NORMAL, the
audience predicate, and the caller's CEL filter as a separate conjunct (a
filter can only narrow). Every arm puts it in the WHERE clause of its own
statement, before its LIMIT.

Paging: the fused list is deterministic for a given query and database
state; a page token carries the offset into it, signed with a fingerprint of
query, mode, filter, pool and caller (``app.api.paging``).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from app.access.admission import Admission, conditions
from app.access.audience import AccessMode
from app.access.caller import Caller
from app.api.paging import decode_token, encode_token, fingerprint
from app.db.joins import by_key, ordered_join
from app.db.records import records
from app.db.schema import memo
from app.errors import InvalidArgument
from app.search.explain import (
    MAX_EMBEDDED_CHARS,
    MAX_EMBEDDED_SENTENCES,
    MAX_SENTENCE_CHARS,
    MIN_SENTENCE_CHARS,
    Explanation,
    closest_by_trigrams,
    draft,
    with_sentence,
)
from app.search.fusion import (
    Floor,
    Fused,
    Fusion,
    LexicalCandidate,
    SemanticCandidate,
    apply_floor,
    fuse,
    lexical_order,
)
from app.search.highlight import phrase_match
from app.search.lexical import lexical_hits
from app.search.runtime import SearchRuntime
from app.search.semantic import semantic_arm
from app.search.terms import MAX_QUERY_CHARS, Terms, parse_terms

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
class Arms:
    """Both arms' candidates before the floor, as ``combine`` needs them."""

    lexical: list[LexicalCandidate]
    semantic: list[SemanticCandidate]  # the whole pool, best first
    pending: int
    pool: int

    @property
    def exact(self) -> bool:
        """Whether the question has a literal answer: the semantic arm's nearest
        neighbour is a lexical hit containing every query word. The floor then
        keeps only near-equals of it (``Floor.exact_margin``). "Some lexical hit
        has every word" alone is common and says little on long notes (measured:
        it cut relevant neighbours on both public sets)."""
        if not self.semantic:
            return False
        best = self.semantic[0].memo_id
        return any(c.memo_id == best and c.all_words for c in self.lexical)


@dataclass(frozen=True, slots=True)
class Ranked:
    hits: list[Fused]  # every relevant hit, best first
    floor: float  # the cosine the semantic arm's neighbours needed (-1: no floor)
    total_is_exact: bool  # False when an arm filled its pool: more may match


def combine(arms: Arms, fusion: Fusion, floor: Floor) -> Ranked:
    """Floor the semantic arm, fuse, and say how complete the total is. Pure."""
    kept, threshold = apply_floor(arms.semantic, floor, arms.exact)
    fused = fuse(lexical_order(arms.lexical, fusion), kept, fusion, threshold)
    full = len(arms.lexical) >= arms.pool or len(kept) >= arms.pool
    return Ranked(fused, threshold if arms.semantic else floor.minimum, not full)


@dataclass(frozen=True, slots=True)
class SearchPage:
    hits: list[Fused]
    rows: dict[int, Any]
    next_token: str
    pending: int
    total: int  # relevant hits under the caller's audience (hidden memos never counted)
    total_is_exact: bool
    floor: float
    explanations: dict[int, Explanation]


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
    """The list's admission: top-level NORMAL memos, the audience, the filter."""
    return list(conditions(Admission(q.caller, q.access_mode, filter=q.filter_clause)))


_PAGE_KEYS = by_key(memo, "page_keys")


def page_rows_statement(q: SearchQuery, ids: list[int]) -> sa.Select[Any]:
    """The page's memo rows by id, under the same admission as the arms.

    Driven from the ids (``_PAGE_KEYS``, primary-key lookups only on SQLite),
    then ``memo`` by its primary key with the admission on it: no statistics
    can turn it into a walk of the timeline.
    """
    return (
        sa.select(memo)
        .select_from(ordered_join(_PAGE_KEYS, memo, memo.c.id == _PAGE_KEYS.c.id))
        .where(_PAGE_KEYS.c.id.in_(ids), *admission(q))
    )


async def rank_arms(
    conn: AsyncConnection, runtime: SearchRuntime, q: SearchQuery, terms: Terms
) -> Arms:
    """Both arms under the admission conditions, in one read snapshot.

    The query's embedding (ONNX, in a worker thread) runs while the lexical
    arm's statement runs (in the driver's thread): the two use both cores, and
    a search waits for the longer of them instead of their sum (about 6 ms of
    a 40 ms search on the 2-core machine; decision 0041). Inside a request the
    read transaction is already open, so the lexical statement running first
    changes no snapshot; the semantic arm then syncs its cache to that same
    snapshot (``semantic.semantic_arm``)."""
    admitted = admission(q)
    embedder = await runtime.loaded_embedder()
    embedding = asyncio.ensure_future(runtime.embed_query(q.text)) if q.mode != "lexical" else None
    lexical: list[LexicalCandidate] = []
    try:
        if q.mode != "semantic":
            # mode=lexical is this arm of hybrid (same tiers, same ranks), plus a
            # last any-word tier when the arm would be empty: a keyword search
            # should not come back empty while a word of the query matches.
            lexical = [
                LexicalCandidate(h.memo_id, h.score, h.all_words, phrase_match(h.content, terms))
                for h in await lexical_hits(
                    conn, terms, admitted, q.pool, any_word=q.mode == "lexical"
                )
            ]
        vector = await embedding if embedding is not None else None
    finally:
        if embedding is not None and not embedding.done():
            embedding.cancel()
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
    semantic = [
        SemanticCandidate(memo_id, sim)
        for memo_id, sim in zip(arm.ranking, arm.similarity, strict=True)
    ]
    return Arms(lexical, semantic, arm.pending, q.pool)


async def explain(
    runtime: SearchRuntime,
    hits: list[Fused],
    rows: dict[int, Any],
    terms: Terms,
    text: str,
) -> dict[int, Explanation]:
    """Highlights and a snippet per hit; a semantic-only hit of several sentences
    gets its sentence most similar to the query (one bounded model run for the
    page, within ``explain.MAX_EMBEDDED_SENTENCES`` and ``MAX_EMBEDDED_CHARS``)."""
    drafts = {h.memo_id: draft(h, rows[h.memo_id].content, terms) for h in hits}
    out = {memo_id: d.explanation for memo_id, d in drafts.items() if not d.candidates}
    wanted: list[tuple[int, int]] = []  # (memo id, sentence index)
    texts: list[str] = []
    room = MAX_EMBEDDED_CHARS
    for memo_id, d in drafts.items():  # whole memos, best hits first, within the budget
        if not d.candidates or len(texts) + len(d.candidates) > MAX_EMBEDDED_SENTENCES:
            continue
        width = min(MAX_SENTENCE_CHARS, room // len(d.candidates))
        if width < MIN_SENTENCE_CHARS:
            continue
        content = rows[memo_id].content
        for i, span in enumerate(d.candidates):
            wanted.append((memo_id, i))
            texts.append(content[span.start : span.end][:width])
            room -= len(texts[-1])
    if texts:
        query, vectors = await runtime.embed_sentences(text, texts)
        best: dict[int, tuple[float, int]] = {}
        for (memo_id, i), v in zip(wanted, vectors, strict=True):
            sim = float(v @ query)
            if memo_id not in best or sim > best[memo_id][0]:
                best[memo_id] = (sim, i)
        for memo_id, (_, i) in best.items():
            out[memo_id] = with_sentence(drafts[memo_id], i)
    for memo_id, d in drafts.items():  # past the page's budget: by shared trigrams
        if memo_id not in out:
            out[memo_id] = closest_by_trigrams(d, rows[memo_id].content, text)
    return out


async def search_memos(
    conn: AsyncConnection,
    runtime: SearchRuntime,
    q: SearchQuery,
    secret: str,
    fusion: Fusion | None = None,
    floor: Floor | None = None,
) -> SearchPage:
    """One page of the relevant hits. ``fusion`` and ``floor`` default to the
    runtime's (the evaluation passes others to compare them)."""
    query_id = fingerprint(
        "search", q.text, q.mode, q.filter_text, q.pool, q.caller.user_id if q.caller else None
    )
    offset = 0
    if q.page_token:
        key = decode_token(secret, query_id, q.page_token)
        if len(key) != 1 or type(key[0]) is not int or key[0] < 0:
            raise InvalidArgument("pageToken: invalid page token")
        offset = key[0]
    terms = parse_terms(q.text)
    arms = await rank_arms(conn, runtime, q, terms)
    embedder = await runtime.loaded_embedder()
    chosen = floor if floor is not None else runtime.floor(embedder.name)
    ranked = combine(arms, fusion or runtime.fusion, chosen)
    fused = ranked.hits
    page = fused[offset : offset + q.page_size]
    next_token = ""
    if offset + q.page_size < len(fused):
        next_token = encode_token(secret, query_id, [offset + q.page_size])
    rows: dict[int, Any] = {}
    explanations: dict[int, Explanation] = {}
    if page:
        # The page's rows are read again under the same admission: a memo made
        # private, archived or deleted since the arms ranked it (another
        # snapshot, without the request's single one) drops out of the page
        # rather than showing what it became.
        ids = [h.memo_id for h in page]
        rows = {r.id: r for r in records(await conn.execute(page_rows_statement(q, ids)))}
        page = [h for h in page if h.memo_id in rows]
        explanations = await explain(runtime, page, rows, terms, q.text)
    return SearchPage(
        page,
        rows,
        next_token,
        arms.pending,
        len(fused),
        ranked.total_is_exact,
        ranked.floor,
        explanations,
    )
