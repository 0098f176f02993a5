"""Why a hit matched, and the part of it to show.

- ``matched_by``: ``LEXICAL`` (only the lexical arm ranked it), ``SEMANTIC``
  (only the semantic arm, above the relevance floor) or ``BOTH``.
- ``highlights``: spans of the query's words in the content (also for a
  semantic hit that happens to contain some of them).
- ``snippet``: a window of about ``SNIPPET_CHARS`` around the densest run of
  highlights; for a semantic hit, the sentence of the memo most similar to
  the query: the one with the most query words when there are any; a memo
  no longer than a snippet is shown whole; else, for
  the page's first such hits, by embedding their sentences with the query's
  model (at most ``MAX_EMBEDDED_SENTENCES`` sentences and ``MAX_EMBEDDED_CHARS``
  characters per page, one model run: each sentence's opening, at most
  ``MAX_SENTENCE_CHARS`` and at least ``MIN_SENTENCE_CHARS``); past that
  budget, the sentence sharing the most character trigrams with the query
  (the first when none do). Embedding sentences is the expensive part of a
  search: with MiniLM on the 2-core machine (load 4), about 3 ms of CPU per
  sentence plus 1 ms per 20 characters: 31 ms for 4 sentences of 160
  characters (the old budget, and the p95 of a search), 13 ms for 4 of 50,
  8 ms for 2 of 50 (a query costs 5 ms) (decision 0041).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from app.search.fusion import Fused
from app.search.highlight import SNIPPET_CHARS, Span, match_spans, sentences, snippet_around
from app.search.terms import Terms

MatchedBy = Literal["LEXICAL", "SEMANTIC", "BOTH"]
MAX_EMBEDDED_SENTENCES = 3  # sentences embedded per page to pick semantic snippets
MAX_SENTENCES_PER_MEMO = 3
MAX_SENTENCE_CHARS = 160
MAX_EMBEDDED_CHARS = 180  # characters per page given to the model for snippets
MIN_SENTENCE_CHARS = 40  # a sentence opening shorter than this says too little


@dataclass(frozen=True, slots=True)
class Explanation:
    matched_by: MatchedBy
    terms: tuple[str, ...]  # the query's words (or CJK bigrams) found in the memo
    highlights: tuple[Span, ...]
    snippet: Span


def matched_by(hit: Fused) -> MatchedBy:
    if hit.lexical_rank and hit.semantic_rank:
        return "BOTH"
    return "LEXICAL" if hit.lexical_rank else "SEMANTIC"


@dataclass(frozen=True, slots=True)
class Draft:
    """An explanation whose snippet may still need the sentence embeddings."""

    explanation: Explanation
    candidates: tuple[Span, ...]  # sentences to embed for the snippet; empty: snippet final


def _clip(span: Span, width: int = SNIPPET_CHARS * 2) -> Span:
    return Span(span.start, min(span.end, span.start + width))


def draft(hit: Fused, content: str, terms: Terms) -> Draft:
    spans, found = match_spans(content, terms)
    how = matched_by(hit)
    if how != "SEMANTIC":
        snippet = snippet_around(content, spans)
        return Draft(Explanation(how, tuple(found), tuple(spans), snippet), ())
    parts = sentences(content)
    if spans and parts:
        counts = [sum(1 for s in spans if p.start <= s.start < p.end) for p in parts]
        best = parts[max(range(len(parts)), key=lambda i: (counts[i], -i))]
        return Draft(Explanation(how, tuple(found), tuple(spans), _clip(best)), ())
    if len(content) <= SNIPPET_CHARS:  # the memo is its own snippet
        return Draft(Explanation(how, (), (), Span(0, len(content))), ())
    if len(parts) <= 1:
        whole = parts[0] if parts else Span(0, len(content))
        return Draft(Explanation(how, (), (), _clip(whole)), ())
    first = _clip(parts[0])
    return Draft(Explanation(how, (), (), first), tuple(parts[:MAX_SENTENCES_PER_MEMO]))


def _trigrams(text: str) -> set[str]:
    t = " ".join(text.lower().split())
    return {t[i : i + 3] for i in range(len(t) - 2)}


def closest_by_trigrams(d: Draft, content: str, query: str) -> Explanation:
    """The candidate sentence sharing the most character trigrams with the query."""
    if not d.candidates:
        return d.explanation
    wanted = _trigrams(query)
    scores = [
        len(wanted & _trigrams(content[span.start : span.end][:MAX_SENTENCE_CHARS]))
        for span in d.candidates
    ]
    best = max(range(len(scores)), key=lambda i: (scores[i], -i))
    return with_sentence(d, best)


def with_sentence(d: Draft, best: int) -> Explanation:
    e = d.explanation
    return Explanation(e.matched_by, e.terms, e.highlights, _clip(d.candidates[best]))
