"""The typed intermediate form between the CEL tree and SQL.

Small, frozen, hashable and free of SQLAlchemy and of the request clock, so a
lowered filter can be cached by text and rendered for any dialect and any
``now``. Every predicate here is two-valued in SQL (never NULL), which is what
lets ``Not`` render as a plain ``NOT``: "missing is false" falls out of that.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

CompareOp = Literal["==", "!=", "<", "<=", ">", ">="]
TextMatchOp = Literal["contains", "startsWith", "endsWith"]
Quantifier = Literal["exists", "all", "exists_one"]
TagPredOp = Literal["==", "contains", "startsWith", "endsWith"]
Accessor = Literal[
    "getFullYear",
    "getMonth",
    "getDate",
    "getDayOfMonth",
    "getDayOfWeek",
    "getDayOfYear",
    "getHours",
    "getMinutes",
    "getSeconds",
]


@dataclass(frozen=True)
class BoolConst:
    value: bool


@dataclass(frozen=True)
class And:
    parts: tuple[Pred, ...]


@dataclass(frozen=True)
class Or:
    parts: tuple[Pred, ...]


@dataclass(frozen=True)
class Not:
    part: Pred


@dataclass(frozen=True)
class Flag:
    """A boolean property: ``pinned``, ``has_link``, ... (``has_location`` is a NULL test)."""

    field: str


@dataclass(frozen=True)
class TextCompare:
    """``field op value``; ``folded`` fields compare case-insensitively."""

    field: str
    op: CompareOp
    value: str
    folded: bool


@dataclass(frozen=True)
class TextIn:
    field: str
    values: tuple[str, ...]
    folded: bool


@dataclass(frozen=True)
class TextMatch:
    """``field.contains/startsWith/endsWith(value)``; never called with an empty value."""

    field: str
    op: TextMatchOp
    value: str
    folded: bool


@dataclass(frozen=True)
class Regex:
    field: str
    pattern: str


@dataclass(frozen=True)
class IntField:
    """An integer-valued column expression: ``creator_id``, ``size(content)``,
    ``size(tags)`` or a UTC calendar accessor of a timestamp field."""

    field: str
    accessor: Accessor | None = None


@dataclass(frozen=True)
class IntConst:
    value: int


IntTerm = IntField | IntConst


@dataclass(frozen=True)
class IntCompare:
    left: IntTerm
    op: CompareOp
    right: IntTerm


@dataclass(frozen=True)
class IntIn:
    term: IntField
    values: tuple[int, ...]


@dataclass(frozen=True)
class TsCompare:
    """``field op bound`` in whole epoch seconds, already adjusted for sub-second offsets.

    The bound is ``delta`` plus the request clock when ``from_now``, plus
    ``other_field`` when comparing two timestamp columns, else just ``delta``.
    """

    field: str
    op: CompareOp
    delta: int
    from_now: bool = False
    other_field: str | None = None


@dataclass(frozen=True)
class Creator:
    """``creator == "users/<username>"`` (negation is ``Not``)."""

    username: str


@dataclass(frozen=True)
class TagHas:
    tag: str


@dataclass(frozen=True)
class TagAny:
    tags: tuple[str, ...]


@dataclass(frozen=True)
class TagOnly:
    """Every tag of the memo is in ``tags`` (the second half of ``sets.equivalent``)."""

    tags: tuple[str, ...]


@dataclass(frozen=True)
class TagQuant:
    quantifier: Quantifier
    op: TagPredOp
    value: str


@dataclass(frozen=True)
class IsNull:
    field: str


@dataclass(frozen=True)
class Tree:
    """``tree == path`` or, with ``subtree``, the path and everything below it."""

    path: str
    subtree: bool


@dataclass(frozen=True)
class SpaceIs:
    """``space == "spaces/<uid>"`` (negation is ``Not``; a memo with no space is not in it)."""

    uid: str


@dataclass(frozen=True)
class MemoRef:
    """Attachment's ``memo_id == "memos/<uid>"``."""

    uid: str


Pred = (
    BoolConst
    | And
    | Or
    | Not
    | Flag
    | TextCompare
    | TextIn
    | TextMatch
    | Regex
    | IntCompare
    | IntIn
    | TsCompare
    | Creator
    | TagHas
    | TagAny
    | TagOnly
    | TagQuant
    | IsNull
    | Tree
    | SpaceIs
    | MemoRef
)


def conj(parts: list[Pred]) -> Pred:
    """``AND`` with constant folding: drops ``true``, collapses on ``false``."""
    out: list[Pred] = []
    for part in parts:
        if isinstance(part, BoolConst):
            if not part.value:
                return part
            continue
        out.extend(part.parts if isinstance(part, And) else (part,))
    if not out:
        return BoolConst(True)
    return out[0] if len(out) == 1 else And(tuple(out))


def disj(parts: list[Pred]) -> Pred:
    """``OR`` with constant folding: drops ``false``, collapses on ``true``."""
    out: list[Pred] = []
    for part in parts:
        if isinstance(part, BoolConst):
            if part.value:
                return part
            continue
        out.extend(part.parts if isinstance(part, Or) else (part,))
    if not out:
        return BoolConst(False)
    return out[0] if len(out) == 1 else Or(tuple(out))


def neg(part: Pred) -> Pred:
    if isinstance(part, BoolConst):
        return BoolConst(not part.value)
    if isinstance(part, Not):
        return part.part
    return Not(part)
