"""The typed values the lowering step passes around while it walks the tree.

Constants stay Python values so they fold; anything that touches a row is a
field reference or an IR predicate. Each carries the offset of the source
text it came from, for error messages.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from app.filter.ir import IntTerm, Pred, TagPredOp

FieldKind = Literal[
    "text",  # case-folded text: every comparison and match
    "exact_text",  # case-sensitive text: ==, !=, in, contains/startsWith/endsWith
    "enum",  # ==, !=, in
    "creator",  # == / != "users/<username>"
    "tree",  # == and .startsWith (subtree)
    "space",  # == null / != null
    "memo_ref",  # == null / != null / == "memos/<uid>"
    "tag",  # only `tag in [..]`
]


@dataclass(frozen=True)
class VBool:
    pred: Pred
    at: int


@dataclass(frozen=True)
class VInt:
    term: IntTerm
    at: int


@dataclass(frozen=True)
class VStr:
    value: str
    at: int


@dataclass(frozen=True)
class VNull:
    at: int


@dataclass(frozen=True)
class VField:
    """A string-typed column; what may be done with it depends on ``kind``."""

    name: str
    kind: FieldKind
    at: int


@dataclass(frozen=True)
class VTs:
    """A timestamp: ``field`` or the request clock (``now``) or epoch 0, plus ``offset`` ns."""

    at: int
    offset: int = 0
    field: str | None = None
    now: bool = False


@dataclass(frozen=True)
class VDur:
    nanos: int
    at: int


@dataclass(frozen=True)
class VList:
    items: tuple[str | int | bool, ...]
    at: int


@dataclass(frozen=True)
class VTags:
    at: int


@dataclass(frozen=True)
class VTagVar:
    at: int


@dataclass(frozen=True)
class VTagPred:
    op: TagPredOp
    value: str
    at: int


@dataclass(frozen=True)
class VNamespace:
    """``sets``: only usable as the receiver of ``sets.contains/intersects/equivalent``."""

    name: str
    at: int


Value = (
    VBool
    | VInt
    | VStr
    | VNull
    | VField
    | VTs
    | VDur
    | VList
    | VTags
    | VTagVar
    | VTagPred
    | VNamespace
)


def type_name(value: Value) -> str:
    """The CEL-ish type name used in error messages."""
    if isinstance(value, VBool):
        return "bool"
    if isinstance(value, VInt):
        return "int"
    if isinstance(value, (VStr, VField)):
        return "string"
    if isinstance(value, VNull):
        return "null"
    if isinstance(value, VTs):
        return "timestamp"
    if isinstance(value, VDur):
        return "duration"
    if isinstance(value, (VList, VTags)):
        return "list"
    if isinstance(value, (VTagVar, VTagPred)):
        return "comprehension variable"
    return "namespace"
