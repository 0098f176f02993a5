"""Tree levels and Memory Engine's clamp, as pure functions.

A member's level at a path ``x`` is the highest level of any grant on ``x``
or an ancestor of ``x`` (grants are additive, there are no deny rows). A
restricted key has its own ceiling in the same form. The key's level is

    level_key(x) = min(level(M, x), level(K, x))

which :func:`clamp` computes as a *set* of grants, the way Timescale's
Memory Engine does: for every ceiling ``(kp, ka)`` and every grant
``(mp, ma)`` on one lineage, emit ``(deeper of kp and mp, min(ka, ma))``.
Pairs on disjoint lineages emit nothing, so a key can never reach a path its
holder cannot. The identity holds because a pair covers ``x`` exactly when
both of its members cover ``x``, so the best pair is ``min(max ma, max ka)``.

The same computation runs in SQL inside list and search statements
(``app.access.scope``); this twin serves point decisions, the
``spaces/{space}/access`` endpoint and the property tests that tie the two
together.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from app.access.paths import covers  # the one path-cover function (re-exported)
from app.access.vocab import Level

__all__ = [
    "FULL_CEILING",
    "LEVELS",
    "LEVEL_NAMES",
    "NONE",
    "OWNER",
    "READ",
    "WRITE",
    "Grant",
    "clamp",
    "covers",
    "deeper",
    "level_at",
    "normalise",
    "on_one_lineage",
]

NONE, READ, WRITE, OWNER = Level.NONE, Level.READ, Level.WRITE, Level.OWNER
LEVEL_NAMES: dict[int, str] = {READ: "READ", WRITE: "WRITE", OWNER: "OWNER"}
LEVELS: dict[str, int] = {name: level for level, name in LEVEL_NAMES.items()}


@dataclass(frozen=True, slots=True, order=True)
class Grant:
    """``level`` at ``path`` and every descendant. ``""`` is the root."""

    path: str
    level: int


def on_one_lineage(a: str, b: str) -> bool:
    return covers(a, b) or covers(b, a)


def deeper(a: str, b: str) -> str:
    """The deeper of two paths on one lineage."""
    return a if covers(b, a) else b


def level_at(grants: Iterable[Grant], path: str) -> int:
    return max((g.level for g in grants if covers(g.path, path)), default=NONE)


def clamp(member: Iterable[Grant], ceiling: Iterable[Grant]) -> list[Grant]:
    """The key's grants: every same-lineage pair at the deeper path, the lower level."""
    ceiling = list(ceiling)
    pairs = [
        Grant(deeper(m.path, k.path), min(m.level, k.level))
        for m in member
        for k in ceiling
        if on_one_lineage(m.path, k.path) and min(m.level, k.level) > NONE
    ]
    return normalise(pairs)


def normalise(grants: Iterable[Grant]) -> list[Grant]:
    """Max per path, then drop rows covered by an ancestor of equal or higher level.

    The result answers :func:`level_at` exactly as the input does, with no
    redundant rows, so it is what the access endpoint shows.
    """
    best: dict[str, int] = {}
    for g in grants:
        if g.level > NONE:
            best[g.path] = max(best.get(g.path, NONE), g.level)
    kept = [
        Grant(path, level)
        for path, level in best.items()
        if not any(
            other != path and covers(other, path) and other_level >= level
            for other, other_level in best.items()
        )
    ]
    return sorted(kept)


FULL_CEILING = (Grant("", OWNER),)  # a declared space without tree rows: no ceiling
