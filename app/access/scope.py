"""The caller's reach inside spaces: ``(space_id, path, level)`` rows.

One function, :func:`space_scope`, computes the caller's scope as SQL; the
audience predicate embeds it as a subquery and point reads and writes load
it into a :class:`SpaceScope` (pure). A row says "at ``path`` and below in
``space_id``, this caller has ``level``" (READ 1 < WRITE 2 < OWNER 3); the
caller's level at a path is the max over the rows that cover it, 0 when none.

Until tree grants exist (the next issue), every ACTIVE member stands in for a
member grant of WRITE at the root of each of its spaces: members read the
whole tree and write where they create. When grants arrive, only
:func:`_member_grants` changes (it becomes a join over the grants and group
tables); the key clamp and both renderings stay as they are.

A restricted key (``access.md`` section 5) is a ceiling over that: only
declared spaces are in scope, and a declaration with tree rows narrows each
row to ``(deeper path, min level)``. Malformed declarations reach nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from app.access.caller import Caller
from app.access.paths import covers
from app.db.schema import space, space_member

READ, WRITE, OWNER = 1, 2, 3
LEVELS = {"READ": READ, "WRITE": WRITE, "OWNER": OWNER}
MEMBER_LEVEL = WRITE  # the stand-in member grant at the root (see module docstring)

__all__ = [
    "LEVELS",
    "OWNER",
    "READ",
    "WRITE",
    "Ceiling",
    "SpaceScope",
    "key_ceilings",
    "load_scope",
    "path_covers",
    "space_scope",
]


@dataclass(frozen=True, slots=True)
class Ceiling:
    """One row of a key's ceiling: in the space named ``space_uid``, ``level`` at ``path``."""

    space_uid: str
    path: str
    level: int


@dataclass(frozen=True, slots=True)
class SpaceScope:
    """The caller's scope rows, loaded once per decision (pure from here on)."""

    rows: frozenset[tuple[int, str, int]] = frozenset()

    def level_at(self, space_id: int, path: str) -> int:
        return max(
            (lvl for sid, prefix, lvl in self.rows if sid == space_id and covers(prefix, path)),
            default=0,
        )

    def space_ids(self) -> frozenset[int]:
        return frozenset(sid for sid, _, _ in self.rows)


EMPTY_SCOPE = SpaceScope()


def key_ceilings(restriction: dict[str, Any]) -> tuple[Ceiling, ...]:
    """The declared spaces of a restriction as ceiling rows; malformed entries are dropped.

    A declaration without tree rows is OWNER at the root (no tree ceiling).
    Paths are stored canonical by the validator; anything else fails closed.
    """
    out: list[Ceiling] = []
    spaces = restriction.get("spaces")
    if not isinstance(spaces, list):
        return ()
    for entry in spaces:
        if not isinstance(entry, dict):
            continue
        name = entry.get("space")
        if not isinstance(name, str) or not name.startswith("spaces/") or len(name) <= 7:
            continue
        uid = name[len("spaces/") :]
        trees = entry.get("trees") or []
        if not isinstance(trees, list):
            continue
        if not trees:
            out.append(Ceiling(uid, "", OWNER))
            continue
        for tree in trees:
            if not isinstance(tree, dict):
                continue
            path, level = tree.get("path"), LEVELS.get(str(tree.get("level")))
            if isinstance(path, str) and level is not None:
                out.append(Ceiling(uid, path, level))
    return tuple(out)


def _member_grants(caller: Caller) -> sa.Select[Any]:
    """The caller's member grants: today one WRITE@root row per ACTIVE space."""
    return (
        sa.select(
            space_member.c.space_id.label("space_id"),
            sa.literal("", sa.String).label("path"),
            sa.literal(MEMBER_LEVEL, sa.Integer).label("level"),
        )
        .join(space, space.c.id == space_member.c.space_id)
        .where(space_member.c.user_id == caller.user_id, space_member.c.state == "ACTIVE")
    )


def space_scope(caller: Caller | None) -> sa.Select[Any] | None:
    """The caller's ``(space_id, path, level)`` rows as SQL; None when it has none.

    Anonymous callers and keys that declare no usable space have no scope, so
    the SPACE branch of the predicate is a literal false for them.
    """
    if caller is None:
        return None
    grants = _member_grants(caller)
    if caller.restriction is None:
        return grants
    ceilings = key_ceilings(caller.restriction)
    if not ceilings:
        return None
    # Member grants are at the root for now, so the deeper path is the key's
    # and the clamp is min(key level, member level), both known here.
    parts = [
        sa.select(
            space_member.c.space_id.label("space_id"),
            sa.literal(c.path, sa.String).label("path"),
            sa.literal(min(c.level, MEMBER_LEVEL), sa.Integer).label("level"),
        )
        .join(space, space.c.id == space_member.c.space_id)
        .where(
            space_member.c.user_id == caller.user_id,
            space_member.c.state == "ACTIVE",
            space.c.uid == c.space_uid,
        )
        for c in ceilings
    ]
    return parts[0] if len(parts) == 1 else sa.union_all(*parts).subquery().select()


def path_covers(prefix: ColumnElement[Any], path: ColumnElement[Any]) -> ColumnElement[bool]:
    """SQL twin of :func:`app.access.paths.covers` (no LIKE, so ``_`` is not a wildcard)."""
    return sa.or_(
        prefix == "",
        path == prefix,
        sa.func.substr(path, 1, sa.func.length(prefix) + 1) == prefix.concat("."),
    )


async def load_scope(
    conn: AsyncConnection, caller: Caller | None, space_id: int | None = None
) -> SpaceScope:
    """The caller's scope rows (only those of ``space_id`` when given)."""
    query = space_scope(caller)
    if query is None:
        return EMPTY_SCOPE
    sub = query.subquery()
    stmt = sa.select(sub.c.space_id, sub.c.path, sub.c.level)
    if space_id is not None:
        stmt = stmt.where(sub.c.space_id == space_id)
    rows = (await conn.execute(stmt)).all()
    return SpaceScope(frozenset((int(r[0]), str(r[1]), int(r[2])) for r in rows))
