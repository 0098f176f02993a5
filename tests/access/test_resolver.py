"""The effective-access resolver obeys Memory Engine's identity, in SQL and in Python.

For random grant sets (direct grants and grants of several groups, on shared
and disjoint lineages, labels with ``_`` and ``-``) and random key ceilings,
at every probe path ``x``:

    level_key(x) = min(level(M, x), level(K, x))

where ``level(M, x)`` is computed here from the raw rows (max over grants of
the member or its groups at ``x`` or an ancestor; 0 unless the holder is
ACTIVE), and ``level(K, x)`` is 3 for a declaration without tree rows and 0
for an undeclared space. Checked three ways: the SQL resolver
(``space_scope``) with the level per probe computed *in SQL* through
``path_covers``, on SQLite and PostgreSQL; the rows it returns
(``load_scope``); and the pure twin (``load_member_grants`` +
``effective_grants``) that serves ``GET /spaces/{s}/access``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.access.caller import Caller, Credential
from app.access.clamp import level_at
from app.access.paths import covers
from app.access.scope import (
    effective_grants,
    load_member_grants,
    load_scope,
    path_covers,
    space_ceiling,
    space_scope,
)
from app.db.engine import create_engine
from app.db.schema import (
    memo,
    space,
    space_grant,
    space_group,
    space_group_member,
    space_member,
    user_account,
)

HOLDER, OTHER = 1, 2
SPACE, ELSEWHERE = 1, 2
# Shared lineages (a, a.b, a.b.c), near-misses that are string prefixes but
# not ancestors (ab, a-x, a_b), and a disjoint one (b...).
PATHS = ("", "a", "a.b", "a.b.c", "ab", "a-x", "a_b", "a.b-c", "b", "b.c", "home.1")
PROBES = (*PATHS, "a.b.c.d", "b.c.d", "a_b.z", "aXb", "zz")
GROUPS = (1, 2, 3, 4)
LEVEL_NAMES = {1: "READ", 2: "WRITE", 3: "OWNER"}


@dataclass(frozen=True)
class Case:
    seat: str | None  # the holder's state in SPACE
    groups: dict[int, int]  # group -> space
    in_groups: frozenset[int]  # groups the holder is in
    grants: tuple[
        tuple[int, int | None, int | None, str, int], ...
    ]  # space, user, group, path, lvl
    restriction: dict[str, Any] | None


@st.composite
def cases(draw: st.DrawFn) -> Case:
    seat = draw(st.sampled_from(("ACTIVE", "ACTIVE", "ACTIVE", "INVITED", None)))
    gids = draw(st.lists(st.sampled_from(GROUPS), max_size=4, unique=True))
    groups = {g: draw(st.sampled_from((SPACE, SPACE, ELSEWHERE))) for g in gids}
    in_groups = frozenset(g for g in gids if draw(st.booleans()))
    grants = []
    for _ in range(draw(st.integers(0, 12))):
        principal = draw(st.sampled_from(("me", "me", "other", *(["group"] if gids else []))))
        grants.append(
            (
                draw(st.sampled_from((SPACE, SPACE, SPACE, ELSEWHERE))),
                HOLDER if principal == "me" else OTHER if principal == "other" else None,
                draw(st.sampled_from(gids)) if principal == "group" else None,
                draw(st.sampled_from(PATHS)),
                draw(st.integers(1, 3)),
            )
        )
    ceiling = st.lists(
        st.fixed_dictionaries(
            {"path": st.sampled_from(PATHS), "level": st.sampled_from(tuple(LEVEL_NAMES.values()))}
        ),
        max_size=5,
    )
    kind = draw(st.sampled_from(("none", "trees", "trees", "trees", "declared", "undeclared")))
    restriction: dict[str, Any] | None = None
    if kind == "trees":
        trees = draw(ceiling)
        restriction = {"spaces": [{"space": "spaces/s1", "trees": trees}]}
    elif kind == "declared":
        restriction = {"spaces": [{"space": "spaces/s1", "trees": []}]}
    elif kind == "undeclared":
        restriction = {"spaces": [{"space": "spaces/s2", "trees": draw(ceiling)}]}
    if restriction is not None:
        restriction |= {"scope": "READ", "personal": "NONE"}
    return Case(seat, groups, in_groups, tuple(grants), restriction)


def member_level(case: Case, x: str) -> int:
    """level(M, x) from the raw rows, written independently of app.access."""
    if case.seat != "ACTIVE":
        return 0
    levels = [
        level
        for sid, uid, gid, path, level in case.grants
        if sid == SPACE
        and (uid == HOLDER or (gid in case.in_groups and case.groups.get(gid) == SPACE))
        and (path == "" or x == path or x.startswith(path + "."))
    ]
    return max(levels, default=0)


def key_level(case: Case, x: str) -> int:
    """level(K, x): 3 without a key or without tree rows, 0 when SPACE is undeclared."""
    if case.restriction is None:
        return 3
    levels = [0]
    for entry in case.restriction["spaces"]:
        if entry["space"] != "spaces/s1":
            continue
        if not entry["trees"]:
            return 3
        levels += [
            {"READ": 1, "WRITE": 2, "OWNER": 3}[t["level"]]
            for t in entry["trees"]
            if covers(t["path"], x)
        ]
    return max(levels)


async def write(conn: Any, case: Case) -> None:
    for table in (space_grant, space_group_member, space_group, memo, space_member, space):
        await conn.execute(table.delete())
    await conn.execute(user_account.delete())
    await conn.execute(
        user_account.insert(),
        [
            {
                "id": uid,
                "username": f"u{uid}",
                "role": "USER",
                "state": "NORMAL",
                "password_hash": "x",
                "created_ts": 0,
                "updated_ts": 0,
            }
            for uid in (HOLDER, OTHER)
        ],
    )
    await conn.execute(
        space.insert(),
        [
            {
                "id": sid,
                "uid": f"s{sid}",
                "title": "t",
                "creator_id": 1,
                "created_ts": 0,
                "updated_ts": 0,
            }
            for sid in (SPACE, ELSEWHERE)
        ],
    )
    seats = [{"space_id": ELSEWHERE, "user_id": HOLDER, "state": "ACTIVE", "role": "USER"}]
    if case.seat is not None:
        seats.append({"space_id": SPACE, "user_id": HOLDER, "state": case.seat, "role": "USER"})
    seats.append({"space_id": SPACE, "user_id": OTHER, "state": "ACTIVE", "role": "ADMIN"})
    await conn.execute(
        space_member.insert(), [{**s, "created_ts": 0, "updated_ts": 0} for s in seats]
    )
    if case.groups:
        await conn.execute(
            space_group.insert(),
            [
                {"id": g, "space_id": s, "title": "g", "created_ts": 0}
                for g, s in case.groups.items()
            ],
        )
    if case.in_groups:
        await conn.execute(
            space_group_member.insert(),
            [{"group_id": g, "user_id": HOLDER} for g in sorted(case.in_groups)],
        )
    if case.grants:
        await conn.execute(
            space_grant.insert(),
            [
                {
                    "space_id": sid,
                    "user_id": uid,
                    "group_id": gid,
                    "path": path,
                    "level": level,
                    "created_by": OTHER,
                    "created_ts": 0,
                }
                for sid, uid, gid, path, level in case.grants
            ],
        )


def caller_for(case: Case) -> Caller:
    if case.restriction is None:
        return Caller(HOLDER, "u1", "USER", Credential.SESSION)
    return Caller(HOLDER, "u1", "USER", Credential.PAT, pat_id=1, restriction=case.restriction)


async def sql_levels(conn: Any, caller: Caller) -> dict[str, int]:
    """The level at every probe, computed by the database over the resolver's rows."""
    query = space_scope(caller)
    if query is None:
        return dict.fromkeys(PROBES, 0)
    scope = query.subquery("scope")
    probes = sa.union_all(
        *(sa.select(sa.literal(p, sa.String).label("probe")) for p in PROBES)
    ).subquery("probes")
    stmt = (
        sa.select(probes.c.probe, sa.func.coalesce(sa.func.max(scope.c.level), 0))
        .select_from(probes)
        .outerjoin(
            scope,
            sa.and_(scope.c.space_id == SPACE, path_covers(scope.c.path, probes.c.probe)),
        )
        .group_by(probes.c.probe)
    )
    return {str(p): int(level) for p, level in (await conn.execute(stmt)).all()}


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=cases())
async def test_level_key_is_min_of_member_and_key(database_url: str, case: Case) -> None:
    engine = create_engine(database_url)
    try:
        async with engine.begin() as conn:
            await write(conn, case)
        caller = caller_for(case)
        expected = {x: min(member_level(case, x), key_level(case, x)) for x in PROBES}
        async with engine.connect() as conn:
            assert await sql_levels(conn, caller) == expected
            loaded = await load_scope(conn, caller)
            assert {x: loaded.level_at(SPACE, x) for x in PROBES} == expected
            member = (await load_member_grants(conn, HOLDER, SPACE)).get(SPACE, [])
            twin = effective_grants(member, space_ceiling(caller, "s1"))
            assert {x: level_at(twin, x) for x in PROBES} == expected
    finally:
        await engine.dispose()


def test_the_identity_is_not_vacuous() -> None:
    """The strategy's oracle distinguishes the classic cases (sanity for the property)."""
    grants = ((SPACE, HOLDER, None, "a", 2), (SPACE, None, 1, "a.b", 3))
    case = Case("ACTIVE", {1: SPACE}, frozenset({1}), grants, None)
    assert [member_level(case, x) for x in ("", "a", "a.b.c", "ab")] == [0, 2, 3, 0]
    keyed = Case(
        "ACTIVE",
        {1: SPACE},
        frozenset({1}),
        grants,
        {"spaces": [{"space": "spaces/s1", "trees": [{"path": "a.b.c", "level": "READ"}]}]},
    )
    assert [min(member_level(keyed, x), key_level(keyed, x)) for x in ("a", "a.b.c.d")] == [0, 1]
