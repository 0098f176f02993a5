"""Fusing the two arms, and the relevance floor that decides what the semantic arm may add.

Pure functions over the arms' candidates (decision 0016):

- ``apply_floor``: the semantic arm always returns its ``pool`` nearest
  neighbours, however far. Only those that are actually close count: a
  similarity at least the model's calibrated ``minimum``, and within
  ``margin`` of the best neighbour (``exact_margin`` instead when the
  lexical arm found a memo with every query word: the question then has a
  literal answer and only near-equals of it are worth adding). Lexical hits
  always count.
- ``fuse``: Reciprocal Rank Fusion (``rrf``, optionally weighted), or a
  weighted sum of min-max (``minmax``) or z-score (``zscore``) normalised
  arm scores, plus an exactness boost for memos holding every query word
  and for the query's words as a phrase. The default was chosen by
  ``python -m bench.search_eval`` on the tuning splits of every evaluation
  set (``bench/results/search_eval.md``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

RRF_K = 60

Method = Literal["rrf", "minmax", "zscore", "margin"]


@dataclass(frozen=True, slots=True)
class LexicalCandidate:
    memo_id: int
    score: float  # the engine's score, higher is better
    all_words: bool = False  # contains every query word
    phrase: bool = False  # contains the query's words as a phrase


@dataclass(frozen=True, slots=True)
class SemanticCandidate:
    memo_id: int
    similarity: float  # cosine with the query vector


@dataclass(frozen=True, slots=True)
class Floor:
    """What the semantic arm may contribute (``minimum=-1, margin=inf``: everything)."""

    minimum: float = -1.0
    margin: float = math.inf
    exact_margin: float = math.inf

    def threshold(self, best: float, exact: bool) -> float:
        """The similarity a neighbour needs, given the best one's and whether the
        best one is a lexical hit containing every query word."""
        margin = min(self.margin, self.exact_margin) if exact else self.margin
        return max(self.minimum, best - margin)


OFF = Floor()


@dataclass(frozen=True, slots=True)
class Fusion:
    method: Method = "rrf"
    k: float = RRF_K
    lexical_weight: float = 1.0
    semantic_weight: float = 1.0
    all_words_boost: float = 0.0
    phrase_boost: float = 0.0


@dataclass(frozen=True, slots=True)
class Fused:
    memo_id: int
    score: float
    lexical_rank: int  # 1-based; 0: not in the lexical arm
    semantic_rank: int  # 1-based; 0: not in the semantic arm (or below the floor)
    similarity: float = 0.0  # cosine with the query; 0 when not ranked semantically


def apply_floor(
    semantic: list[SemanticCandidate], floor: Floor, exact: bool = False
) -> tuple[list[SemanticCandidate], float]:
    """The neighbours that pass the floor (best first), and the similarity they needed."""
    if not semantic:
        return [], floor.minimum
    best = max(c.similarity for c in semantic)
    threshold = floor.threshold(best, exact)
    return [c for c in semantic if c.similarity >= threshold], threshold


def _minmax(values: list[float]) -> list[float]:
    lo, hi = min(values), max(values)
    if hi - lo < 1e-12:
        return [1.0] * len(values)
    return [(v - lo) / (hi - lo) for v in values]


def _zscore(values: list[float]) -> list[float]:
    mean = sum(values) / len(values)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    if sd < 1e-12:
        return [1.0] * len(values)
    return [(v - mean) / sd for v in values]


def _lexical_values(lexical: list[LexicalCandidate]) -> list[float]:
    """The lexical arm's values for normalisation: its ranks, not its BM25 values.

    FTS5's ``bm25()`` and PostgreSQL's ranking use statistics of every memo
    (IDF, average length), hidden ones included: normalised BM25 values would
    let memos a caller cannot see move the scores and order of those it can.
    The arm's order is the engine's; within it, the rank carries the evidence."""
    n = len(lexical)
    return [float(n - i) for i in range(n)]


def _arm_scores(values: list[float], fusion: Fusion) -> list[float]:
    if not values:
        return []
    if fusion.method == "rrf":
        return [1 / (fusion.k + rank) for rank in range(1, len(values) + 1)]
    if fusion.method in ("minmax", "margin"):
        return _minmax(values)
    return _zscore(values)


def fuse(
    lexical: list[LexicalCandidate],
    semantic: list[SemanticCandidate],
    fusion: Fusion,
    threshold: float = 0.0,
) -> list[Fused]:
    """One list, best first; ties go to the better single rank, then the newer id.

    Both lists are best first. A memo absent from an arm gets nothing from it
    (in ``zscore``, the arm's lowest normalised score, so absence never beats
    a weak presence). ``margin``: the lexical arm min-max normalised, the
    semantic arm by how far a neighbour's cosine is above ``threshold`` (the
    floor it passed), so one clearly closer neighbour outweighs a crowd of
    near-equals, which min-max and ranks cannot tell apart.
    """
    lex_norm = _arm_scores(_lexical_values(lexical), fusion)
    if fusion.method == "margin":
        sem_norm = [max(0.0, c.similarity - threshold) for c in semantic]
    else:
        sem_norm = _arm_scores([c.similarity for c in semantic], fusion)
    lex_floor = min(lex_norm) if fusion.method == "zscore" and lex_norm else 0.0
    sem_floor = min(sem_norm) if fusion.method == "zscore" and sem_norm else 0.0
    lex = {c.memo_id: (i, c) for i, c in enumerate(lexical, 1)}
    sem = {c.memo_id: (i, c) for i, c in enumerate(semantic, 1)}
    fused = []
    for memo_id in lex.keys() | sem.keys():
        lr, lc = lex.get(memo_id, (0, None))
        sr, sc = sem.get(memo_id, (0, None))
        score = fusion.lexical_weight * (lex_norm[lr - 1] if lr else lex_floor)
        score += fusion.semantic_weight * (sem_norm[sr - 1] if sr else sem_floor)
        if lc is not None:
            score += fusion.all_words_boost * lc.all_words + fusion.phrase_boost * lc.phrase
        fused.append(Fused(memo_id, score, lr, sr, sc.similarity if sc is not None else 0.0))
    fused.sort(
        key=lambda f: (-f.score, min(r for r in (f.lexical_rank, f.semantic_rank) if r), -f.memo_id)
    )
    return fused


def lexical_order(lexical: list[LexicalCandidate], fusion: Fusion) -> list[LexicalCandidate]:
    """The lexical arm in the order of its contribution to ``fuse`` (engine score
    plus the exactness boosts), so ``lexicalRank`` is that order and
    ``mode=lexical`` lists its hits by ``lexicalRank`` (decision 0012, section 4).
    Min-max and z-score contributions do not depend on the order, so the fused
    scores are unchanged; ties keep the engine's order."""
    base = _arm_scores(_lexical_values(lexical), fusion)
    keyed = [
        (
            fusion.lexical_weight * b
            + fusion.all_words_boost * c.all_words
            + fusion.phrase_boost * c.phrase,
            -i,
            c,
        )
        for i, (b, c) in enumerate(zip(base, lexical, strict=True))
    ]
    keyed.sort(key=lambda t: (t[0], t[1]), reverse=True)
    return [c for _, _, c in keyed]


def rrf(lexical: list[int], semantic: list[int], k: int = RRF_K) -> list[Fused]:
    """Plain RRF of two best-first id lists (the fusion of decision 0006)."""
    return fuse(
        [LexicalCandidate(i, 0.0) for i in lexical],
        [SemanticCandidate(i, 0.0) for i in semantic],
        Fusion("rrf", k),
    )
