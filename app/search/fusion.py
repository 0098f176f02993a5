"""Reciprocal Rank Fusion (Cormack et al., 2009): ``score = Σ 1 / (k + rank)``."""

from __future__ import annotations

from dataclasses import dataclass

RRF_K = 60


@dataclass(frozen=True, slots=True)
class Fused:
    memo_id: int
    score: float
    lexical_rank: int  # 1-based; 0: not in the lexical arm
    semantic_rank: int  # 1-based; 0: not in the semantic arm


def rrf(lexical: list[int], semantic: list[int], k: int = RRF_K) -> list[Fused]:
    """Fuse two best-first id lists; ties go to the better single rank, then the newer id."""
    lex = {memo_id: i for i, memo_id in enumerate(lexical, 1)}
    sem = {memo_id: i for i, memo_id in enumerate(semantic, 1)}
    fused = []
    for memo_id in lex.keys() | sem.keys():
        lr, sr = lex.get(memo_id, 0), sem.get(memo_id, 0)
        score = (1 / (k + lr) if lr else 0.0) + (1 / (k + sr) if sr else 0.0)
        fused.append(Fused(memo_id, score, lr, sr))
    fused.sort(
        key=lambda f: (-f.score, min(r for r in (f.lexical_rank, f.semantic_rank) if r), -f.memo_id)
    )
    return fused
