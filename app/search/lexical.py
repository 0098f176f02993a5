"""The lexical arm: the best ``pool`` memos that genuinely match the query's words.

One statement per dialect, with the caller's admission conditions (audience
predicate, CEL filter, scope) in its WHERE clause, before ORDER BY/LIMIT:

- SQLite: ``memo_fts MATCH '"w1" AND "w2"'`` (or a majority of the words:
  an OR of ANDs) ranked by ``bm25()`` (negative, lower is better).
- PostgreSQL: ``memo_tsv.tsv @@`` the same combination of ``plainto_tsquery``
  per word, ranked by ``ts_rank_cd`` of that stored tsvector (``memo_tsv``
  and its GIN index, migration 0019). Ranking needs the tsvector of every
  match; computed from the content, as the expression index of 0004 made
  PostgreSQL do, it cost 250-330 ms at 22,000 memos for a word in 5,000 of
  them, against 13-17 ms read from the table (decision 0046). A one-word
  query first ranks only the memos holding the word at least twice
  (``_repeated_tsquery``, migration 0020): when ``pool`` admitted memos do,
  they are the page, exactly; a two-word query likewise with the memos
  holding either word twice or more.
- A query with CJK text, on both: memos containing any of its bigrams (or
  words), ranked by how many distinct ones they contain.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from app.db.schema import memo
from app.search.tables import memo_fts, memo_tsv
from app.search.terms import Terms, fts5_match, min_match_tiers, tsquery_groups

_SIMPLE: ColumnElement[Any] = sa.literal_column("'simple'::regconfig")


@dataclass(frozen=True, slots=True)
class LexicalHit:
    """One memo of the lexical arm: its engine score and content, for fusion and highlights."""

    memo_id: int
    score: float  # higher is better: -bm25() on SQLite, ts_rank_cd on PostgreSQL, a count for CJK
    content: str
    all_words: bool  # it contains every word of the query (the strictest tier)


def _fts5(
    terms: Terms, admitted: Sequence[ColumnElement[bool]], pool: int, at_least: int
) -> sa.Select[Any]:
    fts: ColumnElement[Any] = sa.literal_column("memo_fts")
    rank = sa.func.bm25(fts)
    return (
        sa.select(memo.c.id, (-rank).label("score"), memo.c.content)
        .select_from(memo_fts.join(memo, memo.c.id == memo_fts.c.rowid))
        .where(fts.op("MATCH")(fts5_match(terms.words, at_least)), *admitted)
        .order_by(rank, memo.c.id.desc())
        .limit(pool)
    )


def _pg_query(words: tuple[str, ...], at_least: int) -> ColumnElement[Any]:
    """``(w1 & w2) | (w1 & w3) ...`` from ``plainto_tsquery`` of each word (never raises)."""
    ors: list[ColumnElement[Any]] = []
    for group in tsquery_groups(words, at_least):
        parts: list[ColumnElement[Any]] = [
            sa.func.plainto_tsquery(_SIMPLE, sa.literal(w)) for w in group
        ]
        ands: ColumnElement[Any] = parts[0]
        for part in parts[1:]:
            ands = ands.op("&&")(part)
        ors.append(ands)
    query = ors[0]
    for part in ors[1:]:
        query = query.op("||")(part)
    return query


def _tsquery(
    terms: Terms, admitted: Sequence[ColumnElement[bool]], pool: int, at_least: int
) -> sa.Select[Any]:
    # From the stored tsvectors, joined to memo by its primary key for the
    # admission and the content: the matches are ranked without parsing a memo.
    query = _pg_query(terms.words, at_least)
    rank = sa.func.ts_rank_cd(memo_tsv.c.tsv, query)
    return (
        sa.select(memo.c.id, rank.label("score"), memo.c.content)
        .select_from(memo_tsv.join(memo, memo.c.id == memo_tsv.c.memo_id))
        .where(memo_tsv.c.tsv.op("@@")(query), *admitted)
        .order_by(rank.desc(), memo.c.id.desc())
        .limit(pool)
    )


# ts_rank_cd of one lexeme in a to_tsvector (every position of weight D, 0.1),
# as PostgreSQL returns it (real): a memo's rank for a word it holds once, and
# the most a memo holding each word of an AND query once can have.
ONE_COVER_RANK = float(np.float32(0.1))
# Queries of at most this many words try ``_repeated_tsquery`` first. On the
# benchmark's corpus, 60-80 of the ~6,000 memos holding two words rank above
# ONE_COVER_RANK, 0-3 of the ~1,700 holding three: there it would only add a
# statement.
REPEATED_MAX_WORDS = 2


def _repeated_tsquery(
    terms: Terms, admitted: Sequence[ColumnElement[bool]], pool: int
) -> sa.Select[Any]:
    """The all-words page when it lies among the matches holding a query word twice or more.

    ``ts_rank_cd`` with ``to_tsvector``'s single weight (D, 0.1) sums, over the
    covers of the query (minimal spans holding every word), 0.1 / (1 + the
    other words inside the span). A memo holding each query word exactly once
    has one cover, so it ranks at most 0.1 (``ONE_COVER_RANK``); for one word,
    exactly 0.1 per position. So if this statement, which ranks only the
    matches holding some query word twice or more, returns ``pool`` admitted
    memos all ranked above 0.1, no other match can rank among them: they are
    the first ``pool`` of the full statement (``_tsquery``), with the same
    scores and order. The caller checks that, and otherwise runs the full one.

    ``daybook_tsv_repeated(tsv)``, the words a memo holds twice or more, has a
    GIN index (migration 0020): a word of the benchmark's vocabulary is in
    23,000 of 100,000 memos and repeated in 3,400. ``numnode`` checks that
    each word is one lexeme (always, for words of ``parse_terms``; otherwise
    this returns nothing and the caller ranks every match).

    The ranking is a subquery that cannot be flattened (``OFFSET 0``), so it
    sorts ``(memo_id, score)`` only: in one statement PostgreSQL sorts the
    matches with their 580-byte tsvector, to rank them again above the join.
    """
    words = terms.words
    query = _pg_query(words, len(words))
    rank = sa.func.ts_rank_cd(memo_tsv.c.tsv, query).label("score")
    matched: list[ColumnElement[bool]] = [
        sa.func.daybook_tsv_repeated(memo_tsv.c.tsv).op("@@")(_pg_query(words, 1)),
        sa.func.numnode(query) == 2 * len(words) - 1,
    ]
    if len(words) > 1:  # one word repeated is a match; the others must be there too
        matched.append(memo_tsv.c.tsv.op("@@")(query))
    repeated = (
        sa.select(memo_tsv.c.memo_id, rank)
        .where(*matched)
        .order_by(rank.desc(), memo_tsv.c.memo_id.desc())
        .offset(sa.literal_column("0"))
        .subquery("repeated")
    )
    return (
        sa.select(memo.c.id, repeated.c.score, memo.c.content)
        .select_from(repeated.join(memo, memo.c.id == repeated.c.memo_id))
        .where(*admitted)
        .order_by(repeated.c.score.desc(), memo.c.id.desc())
        .limit(pool)
    )


def _substring(terms: Terms, admitted: Sequence[ColumnElement[bool]], pool: int) -> sa.Select[Any]:
    hits: list[ColumnElement[bool]] = [
        memo.c.content.contains(g, autoescape=True) for g in terms.cjk
    ] + [sa.func.lower(memo.c.content).contains(w, autoescape=True) for w in terms.words]
    score = sum((sa.case((h, 1), else_=0) for h in hits[1:]), sa.case((hits[0], 1), else_=0))
    return (
        sa.select(memo.c.id, score.label("score"), memo.c.content)
        .where(sa.or_(*hits), *admitted)
        .order_by(score.desc(), memo.c.created_ts.desc(), memo.c.id.desc())
        .limit(pool)
    )


def lexical_statement(
    dialect_name: str,
    terms: Terms,
    admitted: Sequence[ColumnElement[bool]],
    pool: int,
    at_least: int = 1,
) -> sa.Select[Any] | None:
    if terms.empty:
        return None
    if terms.cjk:
        return _substring(terms, admitted, pool)
    if dialect_name == "sqlite":
        return _fts5(terms, admitted, pool, at_least)
    return _tsquery(terms, admitted, pool, at_least)


async def lexical_ranking(
    conn: AsyncConnection,
    terms: Terms,
    admitted: Sequence[ColumnElement[bool]],
    pool: int,
    any_word: bool = False,
) -> list[int]:
    """``lexical_hits``' memo ids."""
    return [h.memo_id for h in await lexical_hits(conn, terms, admitted, pool, any_word)]


async def lexical_hits(
    conn: AsyncConnection,
    terms: Terms,
    admitted: Sequence[ColumnElement[bool]],
    pool: int,
    any_word: bool = False,
) -> list[LexicalHit]:
    """Memos, best first (at most ``pool``), with their scores and content.

    Only genuine matches enter the arm: memos containing all the query's words
    (after stop words); if no admitted memo does, a majority of them
    (``terms.min_match_tiers``); a single word of a multi-word query only with
    ``any_word`` (``mode=lexical``) and only when no stricter tier matched.
    Each tier is one statement under the admission predicate, so a hidden
    memo never decides which tier is used.
    """
    tiers = [1] if terms.cjk else min_match_tiers(len(terms.words), any_word)
    wanted = len(terms.cjk) + len(terms.words)
    if conn.dialect.name == "postgresql":
        # asyncpg prepares the statement; after five runs PostgreSQL may keep a
        # generic plan, planned without the words. It guesses 0.5% of memos
        # match, so it joins every match to memo and ranks the admitted ones
        # (35-41 ms for a word in 5,000 of 22,000 memos). Planned with the
        # word, it sorts the matches by rank and reads memo for the first
        # ``pool`` only (17-21 ms). Decision 0046; the semantic arm sets the
        # same for its own reasons (``pgvector_arm``). Ends with the request's
        # read transaction.
        await conn.exec_driver_sql("SET LOCAL plan_cache_mode = force_custom_plan")
        if not terms.cjk and 0 < len(terms.words) <= REPEATED_MAX_WORDS:
            # The all-words tier's page exactly, when it fills the pool above
            # ONE_COVER_RANK (its docstring); otherwise every match is ranked below.
            rows = list(await conn.execute(_repeated_tsquery(terms, admitted, pool)))
            if len(rows) >= pool and all(r.score > ONE_COVER_RANK for r in rows):
                return [LexicalHit(int(r.id), float(r.score), r.content, True) for r in rows]
    for at_least in tiers:
        stmt = lexical_statement(conn.dialect.name, terms, admitted, pool, at_least)
        if stmt is None:
            return []
        hits = [
            LexicalHit(
                int(r.id),
                float(r.score or 0.0),
                r.content,
                at_least >= len(terms.words) if not terms.cjk else int(r.score) >= wanted,
            )
            for r in await conn.execute(stmt)
        ]
        if hits:
            return hits
    return []
