"""Where a memo matches the query: highlight spans, matched terms, a snippet, sentences.

Pure functions over a memo's content and the query's ``Terms``. Offsets are
indices into the memo's ``content`` as a sequence of Unicode code points
(Python string indices), end exclusive, so ``content[start:end]`` is the
matched text.

A content word matches a query word when their light stems are equal (a
few English suffixes stripped: "meetings" and "meeting", "renewed" and
"renew"), which is close to what the lexical arm's Porter stemmer (SQLite)
and the ``simple`` parser (PostgreSQL, exact words) accept. CJK terms are
bigrams, matched as substrings, as the arm does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from app.search.terms import STOPWORDS, Terms

_WORD = re.compile(r"\w+", re.UNICODE)
_SUFFIXES = ("ings", "ing", "edly", "ies", "ied", "es", "ed", "ly", "s")
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n+")
SNIPPET_CHARS = 160  # length of a snippet window around the best match
MAX_SPANS = 64  # highlight spans per memo (a long memo repeating a word)


@dataclass(frozen=True, slots=True)
class Span:
    start: int
    end: int


@lru_cache(maxsize=1 << 16)
def light_stem(word: str) -> str:
    """A lower-cased word with one common English suffix removed (kept at least 3 letters).

    Memoised: a search stems every word of every lexical candidate (pure,
    and a corpus repeats its words), which was a third of a search's CPU."""
    w = word.lower()
    for suffix in _SUFFIXES:
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            return w[: -len(suffix)]
    return w


def _merge(spans: list[Span]) -> list[Span]:
    merged: list[Span] = []
    for s in sorted(spans, key=lambda s: (s.start, s.end)):
        if merged and s.start <= merged[-1].end:
            last = merged[-1]
            merged[-1] = Span(last.start, max(last.end, s.end))
        else:
            merged.append(s)
    return merged


def match_spans(content: str, terms: Terms) -> tuple[list[Span], list[str]]:
    """Spans of ``content`` matching a query term, merged, and the query terms found."""
    stems = {light_stem(w): w for w in terms.words}
    spans: list[Span] = []
    found: dict[str, None] = {}
    for m in _WORD.finditer(content):
        term = stems.get(light_stem(m.group()))
        if term is not None:
            spans.append(Span(m.start(), m.end()))
            found[term] = None
    for gram in terms.cjk:
        start = content.find(gram)
        while start >= 0 and len(spans) < 4 * MAX_SPANS:
            spans.append(Span(start, start + len(gram)))
            found[gram] = None
            start = content.find(gram, start + 1)
    ordered = [t for t in (*terms.words, *terms.cjk) if t in found]
    return _merge(spans)[:MAX_SPANS], ordered


def phrase_match(content: str, terms: Terms) -> bool:
    """Whether the query's words (two or more) occur in order, next to each other
    once stop words are skipped ("streak of 21 days" in "a streak of 21 days")."""
    if len(terms.words) < 2:
        return False
    wanted = [light_stem(w) for w in terms.words]
    # A stem is the start of a lower-cased content word, so an ASCII stem absent
    # from the lower-cased content rules the phrase out without stemming it
    # (Python's lower() is per character for every output that is ASCII).
    lowered = content.lower()
    if any(stem.isascii() and stem not in lowered for stem in wanted):
        return False
    seq = [s for s in map(_content_stem, _WORD.findall(content)) if s is not None]
    n, first = len(wanted), wanted[0]
    return any(seq[i] == first and seq[i : i + n] == wanted for i in range(len(seq) - n + 1))


@lru_cache(maxsize=1 << 16)
def _content_stem(word: str) -> str | None:
    """A content word's stem for phrase matching; None for a stop word."""
    return None if word.lower() in STOPWORDS else light_stem(word)


def _word_bounds(content: str, start: int, end: int) -> tuple[int, int]:
    """Widen ``start``/``end`` outwards to whitespace so no word is cut in half."""
    while start > 0 and not content[start - 1].isspace():
        start -= 1
    while end < len(content) and not content[end].isspace():
        end += 1
    return start, end


def snippet_around(content: str, spans: list[Span], width: int = SNIPPET_CHARS) -> Span:
    """The ``width``-character window holding the most matched spans (ties: earliest)."""
    if len(content) <= width:
        return Span(0, len(content))
    if not spans:
        return Span(0, _word_bounds(content, 0, width)[1] if width else 0)
    best, best_count = spans[0], 0
    for i, first in enumerate(spans):
        count = sum(1 for s in spans[i:] if s.end <= first.start + width)
        if count > best_count:
            best, best_count = first, count
    lead = max(0, (width - (best.end - best.start)) // 4)
    start = max(0, min(best.start - lead, len(content) - width))
    start, end = _word_bounds(content, start, min(len(content), start + width))
    if start > 0 and best.start - start > width // 2:  # a very long word before the match
        start = best.start
    return Span(start, end)


def sentences(content: str) -> list[Span]:
    """Sentence (and line) spans of ``content``, leading and trailing spaces left out."""
    out: list[Span] = []
    pos = 0
    for m in [*_SENTENCE_END.finditer(content), None]:
        end = m.start() if m is not None else len(content)
        piece = content[pos:end]
        stripped = piece.strip()
        if stripped and _WORD.search(stripped):
            lead = len(piece) - len(piece.lstrip())
            out.append(Span(pos + lead, pos + lead + len(stripped)))
        if m is not None:
            pos = m.end()
    return out
