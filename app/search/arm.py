"""What the semantic arm gives back, whichever way it ran (pgvector, the SQLite
cache's walk, or the exact scan over admitted ids)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SemanticArm:
    ranking: list[int]  # memo ids, best first (empty when no query vector was given)
    pending: int  # admitted memos without a current vector, in the ranking's snapshot
    similarity: tuple[float, ...] = ()  # cosine of each ranked memo, in ranking order


@dataclass(frozen=True, slots=True)
class Coverage:
    """How many admitted memos the exact scan ranked."""

    admitted: int  # memos the caller's search ranges over
    embedded: int  # ...of which have a vector of the current model (and were rankable)

    @property
    def pending(self) -> int:
        return self.admitted - self.embedded
