"""The access vocabulary, in one module that imports nothing of the app.

Visibilities, memo states, tree levels and the instance access mode were
string and integer literals restated in several modules; they are enums
here. ``StrEnum`` and ``IntEnum`` members compare equal to the strings and
integers stored in the database, so rows, JSON and SQL literals are
unchanged.
"""

from __future__ import annotations

from enum import IntEnum, StrEnum

__all__ = ["AccessMode", "Level", "MemoState", "Visibility"]


class AccessMode(StrEnum):
    """Instance setting: PUBLIC lets anonymous callers read PUBLIC memos."""

    PRIVATE = "PRIVATE"
    PUBLIC = "PUBLIC"


class Visibility(StrEnum):
    """Who reads a memo. The declaration order is the widening order (decision 0020)."""

    PRIVATE = "PRIVATE"
    SPACE = "SPACE"
    PROTECTED = "PROTECTED"
    PUBLIC = "PUBLIC"

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {v: i for i, v in enumerate(Visibility)}


class MemoState(StrEnum):
    """A memo's state. ``TRASHED`` is never readable (``audience.MEMO_STATES``)."""

    NORMAL = "NORMAL"
    ARCHIVED = "ARCHIVED"
    TRASHED = "TRASHED"


class Level(IntEnum):
    """A tree level: read < write < owner; NONE where no grant covers a path."""

    NONE = 0
    READ = 1
    WRITE = 2
    OWNER = 3
