"""The caller's reach inside spaces: ``(space_id, path, level)`` rows.

One function, :func:`space_scope`, computes the caller's scope as SQL; the
audience predicate embeds it as a subquery and point reads and writes load
it into a :class:`SpaceScope` (pure). A row says "at ``path`` and below in
``space_id``, this caller has ``level``" (READ 1 < WRITE 2 < OWNER 3); the
caller's level at a path is the max over the rows that cover it, 0 when none.

Member grants (:func:`member_grants`) are the caller's direct grants plus the
grants of its groups, only while it is ACTIVE in a space that exists
(``access.md`` section 4).

A restricted key (section 5) is a ceiling over that: only declared spaces are
in scope, and each ceiling row ``(kp, ka)`` meets each member grant
``(mp, ma)`` on one lineage as ``(deeper of kp and mp, min(ka, ma))``, the
clamp of :mod:`app.access.clamp` rendered as one join. A declaration without
tree rows is OWNER at the root (no ceiling). Malformed declarations reach
nothing. The ceiling rows are bound parameters, never SQL text.

Path coverage is rendered in exactly one place, :func:`path_covers`: an
``ltree`` containment (``<@``, GiST-indexed) on PostgreSQL, and a range test
on the materialised path elsewhere (``tree = p OR tree >= p||'.' AND tree <
p||'/'``: ``'/'`` is the character after ``'.'``, so the range holds exactly
the descendants; no ``LIKE``, whose ``_`` is a label character).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.functions import FunctionElement

from app.access.caller import Caller
from app.access.clamp import Grant, clamp, normalise
from app.access.paths import covers
from app.access.restriction import Restriction
from app.access.vocab import Level
from app.db.schema import memo as memo_table
from app.db.schema import space, space_grant, space_group, space_group_member, space_member

READ, WRITE, OWNER = Level.READ, Level.WRITE, Level.OWNER
LEVELS = {"READ": READ, "WRITE": WRITE, "OWNER": OWNER}

__all__ = [
    "LEVELS",
    "OWNER",
    "READ",
    "WRITE",
    "Ceiling",
    "SpaceScope",
    "effective_grants",
    "keeps_admin",
    "key_ceilings",
    "load_member_grants",
    "load_scope",
    "member_grants",
    "path_covers",
    "space_ceiling",
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


def key_ceilings(restriction: Restriction | dict[str, Any]) -> tuple[Ceiling, ...]:
    """The declared spaces of a restriction as ceiling rows (parsed, fail closed).

    A declaration without tree rows is OWNER at the root (no tree ceiling);
    malformed entries were dropped when the restriction was parsed.
    """
    parsed = Restriction.parse(restriction)
    return tuple(Ceiling(d.uid, g.path, g.level) for d in parsed.spaces for g in d.ceiling)


def keeps_admin(restriction: Restriction | None, uid: str) -> bool:
    """Whether a credential keeps its holder's space ADMIN role in space ``uid``.

    Unrestricted credentials do; a restricted key only where its declaration
    of that space says ``admin: true``. The flag preserves a real ADMIN's
    role through the key, never grants one: the seat is read from the roster.
    """
    return restriction is None or restriction.keeps_admin(uid)


def space_ceiling(caller: Caller, uid: str) -> list[Grant] | None:
    """The key's ceiling in the space ``uid`` (empty: undeclared); None when unrestricted."""
    if caller.restriction is None:
        return None
    return caller.restriction.space_ceiling(uid)


# --- SQL ----------------------------------------------------------------------


class path_covers_(FunctionElement[bool]):
    """``prefix`` is ``path`` or one of its ancestors; see :func:`path_covers`."""

    type = sa.Boolean()
    inherit_cache = True
    name = "path_covers"
    _is_implicitly_boolean = True  # a condition: no "= 1" where booleans are integers


@compiles(path_covers_)
def _covers_range(element: path_covers_, compiler: SQLCompiler, **kw: Any) -> str:
    prefix, path = list(element.clauses)
    rendered = sa.or_(
        prefix == sa.literal_column("''"),
        path == prefix,
        sa.and_(
            path >= prefix.concat(sa.literal_column("'.'")),
            path < prefix.concat(sa.literal_column("'/'")),
        ),
    )
    return compiler.process(rendered.self_group(), **kw)


# A canonical path (app.access.paths) in PostgreSQL's regex dialect, where
# ``\Z`` is the end of the string. A stored value that is not one (a grant
# written by an older version that accepted "x\n") must cover nothing rather
# than make ``text2ltree`` raise in every read that meets it.
_CANONICAL_PG = r"^([A-Za-z0-9_-]{1,64}(\.[A-Za-z0-9_-]{1,64}){0,31})?\Z"


def _ltree(expr: ColumnElement[Any], compiler: SQLCompiler, **kw: Any) -> str:
    """``text2ltree`` that fails closed: NULL (covers nothing) for a non-canonical path.

    ``memo.tree`` is cast as is: the GiST index on ``text2ltree(tree)``
    (migration 0005) has already refused any stored value it could not cast,
    and the plain cast is what lets that index serve coverage.
    """
    rendered = compiler.process(expr, **kw)
    table = getattr(expr, "table", None)
    while isinstance(table, sa.Alias):  # memo.alias(): the same column, the same index
        table = table.element
    if getattr(expr, "name", None) == "tree" and table is memo_table:
        return f"text2ltree({rendered})"
    pattern = _CANONICAL_PG.replace("'", "''")
    return f"text2ltree(CASE WHEN {rendered} ~ '{pattern}' THEN {rendered} END)"


@compiles(path_covers_, "postgresql")
def _covers_ltree(element: path_covers_, compiler: SQLCompiler, **kw: Any) -> str:
    prefix, path = list(element.clauses)
    inner, outer = _ltree(path, compiler, **kw), _ltree(prefix, compiler, **kw)
    return f"({inner} <@ {outer})"


def path_covers(prefix: ColumnElement[Any], path: ColumnElement[Any]) -> ColumnElement[bool]:
    """SQL twin of :func:`app.access.paths.covers`, rendered per dialect."""
    return path_covers_(prefix, path)


def _active_seat(space_id: Any, user_id: int) -> ColumnElement[bool]:
    return sa.and_(
        space_member.c.space_id == space_id,
        space_member.c.user_id == user_id,
        space_member.c.state == "ACTIVE",
    )


def member_grants(user_id: Any, space_id: Any = None) -> sa.Select[Any]:
    """``(space_id, path, level)`` of ``user_id``'s direct and group grants, while ACTIVE.

    ``user_id`` and ``space_id`` are values or bound parameters (``space_id``
    None: every space).
    """
    g = space_grant
    direct = (
        sa.select(g.c.space_id.label("space_id"), g.c.path.label("path"), g.c.level.label("level"))
        .join(space_member, _active_seat(g.c.space_id, user_id))
        .join(space, space.c.id == g.c.space_id)
        .where(g.c.user_id == user_id)
    )
    via_group = (
        sa.select(g.c.space_id.label("space_id"), g.c.path.label("path"), g.c.level.label("level"))
        .join(space_group, sa.and_(space_group.c.id == g.c.group_id))
        .join(
            space_group_member,
            sa.and_(
                space_group_member.c.group_id == space_group.c.id,
                space_group_member.c.user_id == user_id,
            ),
        )
        .join(space_member, _active_seat(g.c.space_id, user_id))
        .join(space, space.c.id == g.c.space_id)
        .where(space_group.c.space_id == g.c.space_id)
    )
    if space_id is not None:
        direct = direct.where(g.c.space_id == space_id)
        via_group = via_group.where(g.c.space_id == space_id)
    return sa.union_all(direct, via_group).subquery("member_grant").select()


CeilingRow = tuple[ColumnElement[Any], ColumnElement[Any], ColumnElement[Any]]


def _ceiling_rows(rows: list[CeilingRow]) -> sa.Subquery:
    parts = [
        sa.select(uid.label("space_uid"), path.label("path"), level.label("level"))
        for uid, path, level in rows
    ]
    return (parts[0] if len(parts) == 1 else sa.union_all(*parts)).subquery("ceiling")


def _scope_select(user_id: Any, space_id: Any, ceilings: list[CeilingRow] | None) -> sa.Select[Any]:
    """The scope rows as one statement; ``ceilings`` None means an unrestricted credential."""
    grants = member_grants(user_id, space_id)
    if ceilings is None:
        rows = grants
    else:
        m = grants.cte()
        k = _ceiling_rows(ceilings)
        declared = space.alias("declared")
        key_deeper = path_covers(m.c.path, k.c.path)  # the ceiling is at or below the grant
        rows = (
            sa.select(
                m.c.space_id.label("space_id"),
                sa.case((key_deeper, k.c.path), else_=m.c.path).label("path"),
                sa.case((k.c.level < m.c.level, k.c.level), else_=m.c.level).label("level"),
            )
            .select_from(m)
            .join(declared, declared.c.id == m.c.space_id)
            .join(k, k.c.space_uid == declared.c.uid)
            .where(sa.or_(key_deeper, path_covers(k.c.path, m.c.path)))
        )
    # Computed once per statement (a handful of rows), not once per memo row
    # the predicate's EXISTS looks at: SQLite and PostgreSQL both honour it.
    scope = rows.cte().prefix_with("MATERIALIZED")
    return sa.select(scope.c.space_id, scope.c.path, scope.c.level)


def space_scope(caller: Caller | None, space_id: int | None = None) -> sa.Select[Any] | None:
    """The caller's ``(space_id, path, level)`` rows as SQL; None when it has none.

    Anonymous callers and keys that declare no usable space have no scope, so
    the SPACE branch of the predicate is a literal false for them.
    """
    if caller is None:
        return None
    if caller.restriction is None:
        return _scope_select(caller.user_id, space_id, None)
    ceilings = key_ceilings(caller.restriction)
    if not ceilings:
        return None
    rows: list[CeilingRow] = [
        (
            sa.literal(c.space_uid, sa.String),
            sa.literal(c.path, sa.String),
            sa.literal(c.level, sa.Integer),
        )
        for c in ceilings
    ]
    return _scope_select(caller.user_id, space_id, rows)


@functools.lru_cache(maxsize=256)
def _scope_template(ceilings: int | None, by_space: bool) -> sa.Select[Any]:
    """:func:`space_scope`'s statement with bound parameters, built once per shape.

    Point decisions run on every request, and building the statement costs
    more than running it, so :func:`load_scope` reuses one per shape.
    """
    rows: list[CeilingRow] | None = None
    if ceilings is not None:
        rows = [
            (
                sa.bindparam(f"k{i}_space", type_=sa.String),
                sa.bindparam(f"k{i}_path", type_=sa.String),
                sa.bindparam(f"k{i}_level", type_=sa.Integer),
            )
            for i in range(ceilings)
        ]
    space_param = sa.bindparam("scope_space", type_=sa.Integer) if by_space else None
    return _scope_select(sa.bindparam("scope_user", type_=sa.Integer), space_param, rows)


async def load_scope(
    conn: AsyncConnection, caller: Caller | None, space_id: int | None = None
) -> SpaceScope:
    """The caller's scope rows (only those of ``space_id`` when given), from the SQL resolver."""
    if caller is None:
        return EMPTY_SCOPE
    params: dict[str, Any] = {"scope_user": caller.user_id}
    if space_id is not None:
        params["scope_space"] = space_id
    count: int | None = None
    if caller.restriction is not None:
        ceilings = key_ceilings(caller.restriction)
        if not ceilings:
            return EMPTY_SCOPE
        count = len(ceilings)
        for i, c in enumerate(ceilings):
            params |= {f"k{i}_space": c.space_uid, f"k{i}_path": c.path, f"k{i}_level": c.level}
    stmt = _scope_template(count, space_id is not None)
    rows = (await conn.execute(stmt, params)).all()
    return SpaceScope(frozenset((int(r[0]), str(r[1]), int(r[2])) for r in rows))


# --- the pure twin --------------------------------------------------------------


@functools.lru_cache(maxsize=2)
def _member_template(by_space: bool) -> sa.Select[Any]:
    space_param = sa.bindparam("scope_space", type_=sa.Integer) if by_space else None
    sub = member_grants(sa.bindparam("scope_user", type_=sa.Integer), space_param).subquery()
    return sa.select(sub.c.space_id, sub.c.path, sub.c.level)


async def load_member_grants(
    conn: AsyncConnection, user_id: int, space_id: int | None = None
) -> dict[int, list[Grant]]:
    """The member grants per space id, as loaded rows (no clamp)."""
    params: dict[str, Any] = {"scope_user": user_id}
    if space_id is not None:
        params["scope_space"] = space_id
    rows = (await conn.execute(_member_template(space_id is not None), params)).all()
    out: dict[int, list[Grant]] = {}
    for sid, path, level in rows:
        out.setdefault(int(sid), []).append(Grant(str(path), int(level)))
    return out


def effective_grants(member: list[Grant], ceiling: list[Grant] | None) -> list[Grant]:
    """What the caller may do in one space: the member grants, clamped by a key, normalised."""
    if ceiling is None:
        return normalise(member)
    return clamp(member, ceiling)
