"""A restricted key's restriction, as one frozen, hashable value (``access.md`` section 5).

A PAT's restriction is stored as JSON (``access_token.restriction``), written
by the validator of :mod:`app.tokens.restriction`. It is parsed exactly once,
when the credential is resolved into a :class:`~app.access.caller.Caller`,
into a :class:`Restriction`; every decision reads that value's fields and
methods, and the memoised access expressions key on it (it is hashable).

Parsing never raises and fails closed, entry by entry, with the rules the
readers used to apply one by one:

- ``scope``: WRITE only when exactly ``"WRITE"``; anything else is READ;
- ``personal``: NONE, OWN or AUDIENCE; anything else is NONE;
- ``spaces``: a list of declarations ``{space: "spaces/{uid}", admin, trees}``.
  An entry that is not such a mapping, names no space, or has ``trees`` that
  is not a list is dropped. No tree rows means no tree ceiling in that space
  (OWNER at the root). Tree rows that are malformed (a non-canonical path,
  an unknown level) are dropped; a declaration whose every row was dropped
  reaches nothing in its space and is dropped too. ``admin`` counts only
  when it is exactly ``true``.

A stored value that is not a mapping at all yields the empty restriction: a
READ key that reaches nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from app.access.clamp import Grant
from app.access.paths import LABEL_RE, MAX_LABELS
from app.access.vocab import Level

__all__ = ["Declaration", "KeyScope", "PersonalReach", "Restriction"]


class KeyScope(StrEnum):
    READ = "READ"
    WRITE = "WRITE"


class PersonalReach(StrEnum):
    """A key's reach over memos outside spaces."""

    NONE = "NONE"  # none at all, not even PUBLIC
    OWN = "OWN"  # only memos the holder created
    AUDIENCE = "AUDIENCE"  # whatever the holder could read


@dataclass(frozen=True, slots=True)
class Declaration:
    """One declared space: its uid, whether the holder keeps its ADMIN role, the ceiling."""

    uid: str
    ceiling: tuple[Grant, ...]  # (path, level) rows; () is never stored (dropped)
    admin: bool = False
    full: bool = False  # declared without tree rows: no tree ceiling


def canonical_path(path: str) -> bool:
    """A stored path as the validator writes it (``""`` is the root)."""
    if path == "":
        return True
    labels = path.split(".")
    return len(labels) <= MAX_LABELS and all(LABEL_RE.fullmatch(label) for label in labels)


_LEVELS = {"READ": Level.READ, "WRITE": Level.WRITE, "OWNER": Level.OWNER}


def _declaration(entry: Any) -> Declaration | None:
    if not isinstance(entry, dict):
        return None
    name = entry.get("space")
    if not isinstance(name, str) or not name.startswith("spaces/") or len(name) <= 7:
        return None
    uid = name[len("spaces/") :]
    trees = entry.get("trees") or []
    if not isinstance(trees, list):
        return None
    admin = entry.get("admin") is True
    if not trees:
        return Declaration(uid, (Grant("", Level.OWNER),), admin, full=True)
    rows: list[Grant] = []
    for tree in trees:
        if not isinstance(tree, dict):
            continue
        path, raw_level = tree.get("path"), tree.get("level")
        level = _LEVELS.get(raw_level) if isinstance(raw_level, str) else None
        if isinstance(path, str) and canonical_path(path) and level is not None:
            rows.append(Grant(path, int(level)))
    if not rows:
        return None
    return Declaration(uid, tuple(rows), admin)


@dataclass(frozen=True, slots=True)
class Restriction:
    """A key's ceiling: never a grant. Intersected with the holder's live access on use."""

    scope: KeyScope = KeyScope.READ
    personal: PersonalReach = PersonalReach.NONE
    spaces: tuple[Declaration, ...] = ()

    @classmethod
    def parse(cls, raw: Any) -> Restriction:
        """The restriction a stored value stands for; malformed parts reach nothing."""
        if isinstance(raw, Restriction):
            return raw
        if not isinstance(raw, dict):
            return cls()
        scope = KeyScope.WRITE if raw.get("scope") == "WRITE" else KeyScope.READ
        personal_raw = raw.get("personal")
        personal = (
            PersonalReach(personal_raw)
            if isinstance(personal_raw, str) and personal_raw in PersonalReach.__members__
            else PersonalReach.NONE
        )
        spaces_raw = raw.get("spaces")
        declared: list[Declaration] = []
        if isinstance(spaces_raw, list):
            for entry in spaces_raw:
                d = _declaration(entry)
                if d is not None:
                    declared.append(d)
        return cls(scope, personal, tuple(declared))

    def may_write(self) -> bool:
        """A READ key can never write anything."""
        return self.scope is KeyScope.WRITE

    def reaches_personal(self, creator_id: int, holder_id: int) -> bool:
        """Whether memos outside spaces by ``creator_id`` are within reach at all."""
        if self.personal is PersonalReach.AUDIENCE:
            return True
        return self.personal is PersonalReach.OWN and creator_id == holder_id

    def declared_uids(self) -> frozenset[str]:
        return frozenset(d.uid for d in self.spaces)

    def space_ceiling(self, uid: str) -> list[Grant]:
        """The ceiling rows in the space ``uid``; empty when it is not declared."""
        return [g for d in self.spaces if d.uid == uid for g in d.ceiling]

    def keeps_admin(self, uid: str) -> bool:
        """``admin: true`` on the declaration of ``uid``: the holder's ADMIN role survives."""
        return any(d.admin for d in self.spaces if d.uid == uid)

    def to_json(self) -> dict[str, Any]:
        """The stored form, as the API shows it."""
        names = {int(level): level.name for level in _LEVELS.values()}
        return {
            "scope": self.scope.value,
            "personal": self.personal.value,
            "spaces": [
                {
                    "space": f"spaces/{d.uid}",
                    "admin": d.admin,
                    "trees": []
                    if d.full
                    else [{"path": g.path, "level": names[g.level]} for g in d.ceiling],
                }
                for d in self.spaces
            ],
        }
