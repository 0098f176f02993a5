"""The list predicate and the point-read decision agree on every row of random worlds.

Hypothesis builds a world and writes it straight into the tables (no API, so
it can hold what the API never writes: a creator row that is gone, a memo in
a space that does not exist, a visibility from the future, a SPACE memo
without a path, PRIVATE, PROTECTED and PUBLIC memos placed in a space, with
and without a path). For every caller (each
user, a user id with no row, anonymous, and a few restricted keys, some of
them malformed) under both access modes:

    {id : memo WHERE audience_predicate(caller, mode)}
        == {m : can_read(facts(m), caller, mode, scope(caller))}

where ``facts`` and ``scope`` are computed here in Python from the world
itself (member grants from the grant, group and roster rows; a key's ceiling
through the pure clamp), independently of SQL; and ``load_scope`` (what point
reads use) must give the same level at every probe path. One database per
dialect per test, emptied between examples.

Agreement alone would let both renderings drift together, so every decision
is also held to :func:`spec_reads`, the rule of ``access.md`` section 3 and
decision 0030 written out here from the world's rows (not through
``can_read``), and to two bounds: a key never reads what its holder's
session cannot, and never a placed memo outside its ceiling.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from app.access.audience import AccessMode, MemoFacts, audience_predicate, can_read
from app.access.caller import Caller, Credential
from app.access.clamp import Grant, clamp
from app.access.restriction import Restriction
from app.access.scope import SpaceScope, key_ceilings, load_scope
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
from app.memos.listing import ListQuery, list_memos

USER_IDS = (1, 2, 3, 4)
GHOST = 9  # a creator id with no user row
SPACE_IDS = (1, 2, 3)
DANGLING_SPACE = 77
TREES = (None, "", "share", "share.a", "shared", "SHARE.a", "home.1", "home.1.x", "a_b", "aXb.c")
CEILING_PATHS = ("", "share", "share.a", "home.1", "a_b", "sh")
GRANT_PATHS = ("", "share", "share.a", "home.1", "home.2", "a_b", "shared")
GROUP_IDS = (1, 2, 3)
# Weighted towards SPACE and existing spaces, so that the interesting
# conjunctions (a key's ceiling path against a memo's path in a space its
# holder is ACTIVE in) occur in most examples rather than in a few.
VISIBILITY = ("PRIVATE", "PROTECTED", "PUBLIC", "SPACE", "SPACE", "SPACE", "FRIENDS")
MEMO_STATES = ("NORMAL", "ARCHIVED", "DELETED", "TRASHED")


@dataclass(frozen=True)
class World:
    users: dict[int, str]  # id -> NORMAL | ARCHIVED
    spaces: tuple[int, ...]
    roster: dict[tuple[int, int], tuple[str, str]]  # (space, user) -> (state, role)
    memos: tuple[dict[str, Any], ...]
    keys: tuple[tuple[int, dict[str, Any]], ...] = ()
    groups: dict[int, int] = field(default_factory=dict)  # group id -> space id
    group_members: frozenset[tuple[int, int]] = frozenset()  # (group, user)
    # (space, user or None, group or None, path, level)
    grants: tuple[tuple[int, int | None, int | None, str, int], ...] = ()


space_names = st.sampled_from(
    ("spaces/s1", "spaces/s2", "spaces/s3") * 3 + ("spaces/s77", "s1", "spaces/", 7)
)
tree_rows = st.lists(
    st.fixed_dictionaries(
        {
            "path": st.sampled_from(CEILING_PATHS),
            "level": st.sampled_from(("READ", "WRITE", "OWNER", "ALL")),
        }
    ),
    max_size=3,
)


def restrictions(names: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    declared = st.lists(st.fixed_dictionaries({"space": names, "trees": tree_rows}), max_size=3)
    return st.fixed_dictionaries(
        {
            "scope": st.sampled_from(("READ", "WRITE")),
            "personal": st.sampled_from(("NONE", "OWN", "AUDIENCE", "BOGUS")),
            "spaces": st.one_of(
                declared,
                declared,
                declared,
                st.just("everything"),  # malformed: not a list
                st.just([["spaces/s1"]]),  # malformed entry
            ),
        }
    )


@st.composite
def worlds(draw: st.DrawFn) -> World:
    ids = draw(st.lists(st.sampled_from(USER_IDS), min_size=1, max_size=4, unique=True))
    users = {i: draw(st.sampled_from(("NORMAL", "NORMAL", "ARCHIVED"))) for i in sorted(ids)}
    spaces = tuple(sorted(draw(st.lists(st.sampled_from(SPACE_IDS), max_size=3, unique=True))))
    # Keys are mostly about this world's users and spaces, so they reach something.
    holders = st.sampled_from((*users, GHOST, 3))
    own_names = st.sampled_from(tuple(f"spaces/s{sid}" for sid in spaces) or ("spaces/s1",))
    names = st.one_of(own_names, own_names, own_names, space_names)
    key_list = draw(st.lists(st.tuples(holders, restrictions(names)), min_size=1, max_size=4))
    roster: dict[tuple[int, int], tuple[str, str]] = {}
    for sid in spaces:
        for uid in users:
            seat = draw(
                st.sampled_from(
                    (
                        None,
                        ("ACTIVE", "ADMIN"),
                        ("ACTIVE", "USER"),
                        ("ACTIVE", "USER"),
                        ("INVITED", "USER"),
                        ("INVITED", "ADMIN"),
                    )
                )
            )
            if seat is not None:
                roster[(sid, uid)] = seat
    count = draw(st.integers(0, 24))
    memos = []
    for i in range(1, count + 1):
        memos.append(
            {
                "id": i,
                "creator_id": draw(st.sampled_from((*users, GHOST))),
                "visibility": draw(st.sampled_from(VISIBILITY)),
                "state": draw(st.sampled_from(MEMO_STATES)),
                "space_id": draw(
                    st.sampled_from((None, None, *SPACE_IDS, *SPACE_IDS, DANGLING_SPACE))
                ),
                "tree": draw(st.sampled_from(TREES)),
                "parent_id": draw(st.sampled_from((None, *range(1, i)))) if i > 1 else None,
            }
        )
    groups: dict[int, int] = {}
    if spaces:
        for gid in draw(st.lists(st.sampled_from(GROUP_IDS), max_size=3, unique=True)):
            groups[gid] = draw(st.sampled_from(spaces))
    group_members = frozenset((gid, uid) for gid in groups for uid in users if draw(st.booleans()))
    grants: list[tuple[int, int | None, int | None, str, int]] = []
    if spaces:
        principals = [("u", uid) for uid in users] + [("g", gid) for gid in groups]
        for _ in range(draw(st.integers(0, 10))):
            kind, pid = draw(st.sampled_from(principals))
            grants.append(
                (
                    draw(st.sampled_from(spaces)),  # a group's grant may name another space
                    pid if kind == "u" else None,
                    pid if kind == "g" else None,
                    draw(st.sampled_from(GRANT_PATHS)),
                    draw(st.sampled_from((1, 2, 3))),
                )
            )
    return World(
        users,
        spaces,
        roster,
        tuple(memos),
        tuple(key_list),
        groups,
        group_members,
        tuple(grants),
    )


def callers(world: World) -> list[Caller | None]:
    out: list[Caller | None] = [None]
    for uid in (*world.users, GHOST):
        out.append(
            Caller(user_id=uid, username=f"u{uid}", role="USER", credential=Credential.SESSION)
        )
    for n, (uid, restriction) in enumerate(world.keys):
        out.append(
            Caller(
                user_id=uid,
                username=f"u{uid}",
                role="USER",
                credential=Credential.PAT,
                pat_id=n + 1,
                restriction=restriction,
            )
        )
    return out


def model_member(world: World, user_id: int) -> dict[int, list[Grant]]:
    """Member grants per space: direct and group grants, while ACTIVE in an existing space."""
    active = {
        sid
        for (sid, uid), (state, _) in world.roster.items()
        if uid == user_id and state == "ACTIVE" and sid in world.spaces
    }
    mine = {gid for gid, uid in world.group_members if uid == user_id}
    out: dict[int, list[Grant]] = {}
    for sid, uid, gid, path, level in world.grants:
        if sid not in active:
            continue
        if uid == user_id or (gid in mine and world.groups.get(gid) == sid):
            out.setdefault(sid, []).append(Grant(path, level))
    return out


def model_scope(world: World, caller: Caller | None) -> SpaceScope:
    """The caller's scope, straight from the world (no SQL): member grants, clamped by a key."""
    if caller is None:
        return SpaceScope()
    member = model_member(world, caller.user_id)
    rows: set[tuple[int, str, int]] = set()
    if caller.restriction is None:
        for sid, grants in member.items():
            rows |= {(sid, g.path, g.level) for g in grants}
        return SpaceScope(frozenset(rows))
    ceilings = key_ceilings(caller.restriction)
    for sid, grants in member.items():
        ceiling = [Grant(c.path, c.level) for c in ceilings if c.space_uid == f"s{sid}"]
        rows |= {(sid, g.path, g.level) for g in clamp(grants, ceiling)}
    return SpaceScope(frozenset(rows))


PROBES = (
    *sorted({t for t in TREES if t is not None} | set(GRANT_PATHS) | set(CEILING_PATHS)),
    "share.a.b",
    "home.1.x.y",
)


def same_levels(a: SpaceScope, b: SpaceScope) -> bool:
    """Equal as level functions (rows may differ, e.g. redundant ones)."""
    return all(
        a.level_at(sid, p) == b.level_at(sid, p)
        for sid in (*SPACE_IDS, DANGLING_SPACE)
        for p in PROBES
    )


def facts(world: World, m: dict[str, Any]) -> MemoFacts:
    return MemoFacts(
        creator_id=m["creator_id"],
        creator_state=world.users.get(m["creator_id"]),
        visibility=m["visibility"],
        state=m["state"],
        space_id=m["space_id"],
        tree=m["tree"],
    )


def spec_reads(world: World, m: dict[str, Any], caller: Caller | None, mode: AccessMode) -> bool:
    """The read rule as the contract states it, computed from the world's rows.

    Placement and visibility are independent (decision 0030): SPACE by tree
    grant; PRIVATE, PROTECTED and PUBLIC by visibility, placed or not; a key
    reaches unplaced memos by its personal reach and placed ones only where
    its clamped level is READ or more.
    """
    if world.users.get(m["creator_id"]) not in ("NORMAL", "ARCHIVED"):
        return False
    mine = caller is not None and caller.user_id == m["creator_id"]
    if m["state"] not in ("NORMAL", "ARCHIVED") or (m["state"] == "ARCHIVED" and not mine):
        return False
    placed, tree = m["space_id"] is not None, m["tree"]
    level = 0
    if caller is not None and placed and tree is not None:
        level = model_scope(world, caller).level_at(m["space_id"], tree)
    vis = m["visibility"]
    if vis == "SPACE":
        return placed and tree is not None and level >= 1
    if vis not in ("PRIVATE", "PROTECTED", "PUBLIC") or (placed and tree is None):
        return False
    if caller is not None and caller.restriction is not None:
        if placed and level < 1:
            return False
        personal = Restriction.parse(caller.restriction).personal.value
        if not placed and (personal == "NONE" or (personal == "OWN" and not mine)):
            return False
    if vis == "PRIVATE":
        return mine
    return caller is not None or (vis == "PUBLIC" and mode is AccessMode.PUBLIC)


def holder(caller: Caller) -> Caller:
    return Caller(caller.user_id, caller.username, caller.role, Credential.SESSION)


async def _write(conn: Any, world: World) -> None:
    for table in (
        space_grant,
        space_group_member,
        space_group,
        memo,
        space_member,
        space,
        user_account,
    ):
        await conn.execute(table.delete())
    if world.users:
        await conn.execute(
            user_account.insert(),
            [
                {
                    "id": uid,
                    "username": f"u{uid}",
                    "role": "USER",
                    "state": state,
                    "password_hash": "x",
                    "created_ts": 0,
                    "updated_ts": 0,
                }
                for uid, state in world.users.items()
            ],
        )
    if world.spaces:
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
                for sid in world.spaces
            ],
        )
    if world.roster:
        await conn.execute(
            space_member.insert(),
            [
                {
                    "space_id": sid,
                    "user_id": uid,
                    "state": state,
                    "role": role,
                    "created_ts": 0,
                    "updated_ts": 0,
                }
                for (sid, uid), (state, role) in world.roster.items()
            ],
        )
    if world.groups:
        await conn.execute(
            space_group.insert(),
            [
                {"id": gid, "space_id": sid, "title": "g", "created_ts": 0}
                for gid, sid in world.groups.items()
            ],
        )
    if world.group_members:
        await conn.execute(
            space_group_member.insert(),
            [{"group_id": gid, "user_id": uid} for gid, uid in sorted(world.group_members)],
        )
    if world.grants:
        await conn.execute(
            space_grant.insert(),
            [
                {
                    "space_id": sid,
                    "user_id": uid,
                    "group_id": gid,
                    "path": path,
                    "level": level,
                    "created_by": 1,
                    "created_ts": 0,
                }
                for sid, uid, gid, path, level in world.grants
            ],
        )
    if world.memos:
        await conn.execute(
            memo.insert(),
            [
                {
                    **m,
                    "uid": f"m{m['id']}",
                    "content": "",
                    "created_ts": m["id"],
                    "updated_ts": m["id"],
                    "origin": {"kind": "session"},
                }
                for m in world.memos
            ],
        )


def _tricky() -> World:
    """Conjunctions random worlds reach only rarely, pinned as an explicit example.

    A ceiling at ``share`` against a memo at ``shared`` (a string prefix that
    is not a label prefix), ``a_b`` against ``aXb`` (``_`` is a LIKE
    wildcard), a dangling space id, a SPACE memo without a path, a personal
    memo that names a space, an unknown visibility, a missing creator, an
    archived memo of a member and of a non-member, an INVITED seat.
    """
    memos = []
    combos = [
        (1, "SPACE", "NORMAL", 1, "shared"),
        (1, "SPACE", "NORMAL", 1, "share.a.b"),
        (2, "SPACE", "NORMAL", 1, "aXb"),
        (2, "SPACE", "NORMAL", 1, "a_b"),
        (2, "SPACE", "NORMAL", 1, "aXb.c"),
        (2, "SPACE", "NORMAL", 1, "SHARE.a"),
        (2, "SPACE", "ARCHIVED", 1, "share"),
        (1, "SPACE", "ARCHIVED", 1, "share"),
        (1, "SPACE", "NORMAL", 1, None),
        (1, "SPACE", "NORMAL", None, "share"),
        (1, "SPACE", "NORMAL", DANGLING_SPACE, "share"),
        (1, "SPACE", "NORMAL", 2, "share"),
        (1, "PUBLIC", "NORMAL", 1, None),
        (1, "PUBLIC", "NORMAL", None, None),
        # Placed memos of a personal visibility (decision 0030).
        (1, "PUBLIC", "NORMAL", 1, "share"),
        (2, "PUBLIC", "NORMAL", 1, "home.2"),
        (2, "PROTECTED", "NORMAL", 1, "share.a"),
        (2, "PRIVATE", "NORMAL", 1, "share"),
        (1, "PRIVATE", "NORMAL", 1, "home.1"),
        (1, "PUBLIC", "NORMAL", 2, "share"),
        (2, "PROTECTED", "NORMAL", DANGLING_SPACE, "share"),
        (1, "PRIVATE", "ARCHIVED", 1, "share"),
        (2, "PROTECTED", "NORMAL", None, None),
        (2, "PRIVATE", "NORMAL", None, None),
        (1, "FRIENDS", "NORMAL", None, None),
        (GHOST, "SPACE", "NORMAL", 1, "share"),
        (GHOST, "PUBLIC", "NORMAL", None, None),
        (3, "PUBLIC", "NORMAL", None, None),
        (1, "PRIVATE", "DELETED", None, None),
        # The trash (app.memos.trash): denied to everyone, the creator included.
        (1, "PRIVATE", "TRASHED", None, None),
        (1, "PUBLIC", "TRASHED", None, None),
        (1, "SPACE", "TRASHED", 1, "share"),
    ]
    for i, (creator, vis, state, sid, tree) in enumerate(combos, start=1):
        memos.append(
            {
                "id": i,
                "creator_id": creator,
                "visibility": vis,
                "state": state,
                "space_id": sid,
                "tree": tree,
                "parent_id": 1 if i % 4 == 0 else None,
            }
        )
    keys = (
        (
            1,
            {
                "scope": "READ",
                "personal": "NONE",
                "spaces": [
                    {
                        "space": "spaces/s1",
                        "trees": [
                            {"path": "share", "level": "READ"},
                            {"path": "a_b", "level": "WRITE"},
                        ],
                    }
                ],
            },
        ),
        (2, {"scope": "WRITE", "personal": "OWN", "spaces": [{"space": "spaces/s1", "trees": []}]}),
        (2, {"scope": "READ", "personal": "AUDIENCE", "spaces": [{"space": "spaces/s2"}]}),
        (1, {"scope": "READ", "personal": "AUDIENCE", "spaces": [{"space": "s1"}, ["x"]]}),
    )
    return World(
        users={1: "NORMAL", 2: "NORMAL", 3: "ARCHIVED"},
        spaces=(1, 2),
        roster={
            (1, 1): ("ACTIVE", "ADMIN"),
            (1, 2): ("ACTIVE", "USER"),
            (2, 1): ("ACTIVE", "ADMIN"),
            (2, 2): ("INVITED", "USER"),
        },
        memos=tuple(memos),
        keys=keys,
        groups={1: 1, 2: 2},
        group_members=frozenset({(1, 2), (2, 2), (2, 1)}),
        grants=(
            (1, 1, None, "", 2),  # user 1: WRITE at the root of s1
            (1, None, 1, "share", 2),  # group 1 (user 2): WRITE at share
            (1, None, 1, "a_b", 1),
            (1, 2, None, "home.2", 3),
            (2, 1, None, "home.1", 3),
            (2, None, 1, "", 3),  # group 1 belongs to s1: counts for nobody in s2
            (2, None, 2, "share", 1),  # group 2 of s2: user 2 only INVITED there
        ),
    )


# AGREEMENT_EXAMPLES=<n> for a deeper search than CI's (bench and release runs).
@settings(
    max_examples=int(os.environ.get("AGREEMENT_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(world=worlds())
@example(world=_tricky())
async def test_predicate_and_point_read_agree(database_url: str, world: World) -> None:
    engine = create_engine(database_url)
    try:
        async with engine.begin() as conn:
            await _write(conn, world)
        async with engine.connect() as conn:
            for caller in callers(world):
                scope = model_scope(world, caller)
                assert same_levels(await load_scope(conn, caller), scope), caller
                for mode in AccessMode:
                    found = await conn.execute(
                        sa.select(memo.c.id).where(audience_predicate(caller, mode))
                    )
                    expected = {
                        m["id"]
                        for m in world.memos
                        if can_read(facts(world, m), caller, mode, scope)
                    }
                    assert set(found.scalars().all()) == expected, (caller, mode)
                    spec = {m["id"] for m in world.memos if spec_reads(world, m, caller, mode)}
                    assert expected == spec, (caller, mode)
                    if caller is not None and caller.restriction is not None:
                        session = holder(caller)
                        wide = model_scope(world, session)
                        for m in world.memos:
                            if m["id"] not in expected:
                                continue
                            assert can_read(facts(world, m), session, mode, wide), (caller, m)
                            if m["space_id"] is not None:
                                assert scope.level_at(m["space_id"], m["tree"]) >= 1, (caller, m)
                    await _pages_agree(conn, world, caller, mode, scope)
    finally:
        await engine.dispose()


async def _pages_agree(
    conn: Any, world: World, caller: Caller | None, mode: AccessMode, scope: SpaceScope
) -> None:
    """Paging the list (small pages, both directions) yields exactly the readable memos.

    For a restricted key this goes through the merged per-space walks of
    ``app.access.reach``; paging checks that no part is cut short or repeated.
    """
    for state in ("NORMAL", "ARCHIVED"):
        expected = [
            m["id"]
            for m in sorted(world.memos, key=lambda m: m["id"], reverse=True)
            if m["parent_id"] is None
            and m["state"] == state
            and can_read(facts(world, m), caller, mode, scope)
            and (state == "NORMAL" or (caller is not None and m["creator_id"] == caller.user_id))
        ]
        for order, ids in (("create_time desc", expected), ("create_time asc", expected[::-1])):
            seen: list[int] = []
            token: str | None = None
            for _ in range(len(world.memos) + 1):
                query = ListQuery(
                    caller=caller,
                    mode=mode,
                    state=state,
                    order_by=order,
                    page_size=2,
                    page_token=token,
                )
                rows, token = await list_memos(conn, query, "secret")
                seen.extend(r.id for r in rows)
                if not token:
                    break
            assert seen == ids, (caller, mode, state, order)


def test_the_model_is_not_vacuous() -> None:
    """A member reads its space's memo; a former member, a key without it and anonymous do not."""
    world = World(
        {1: "NORMAL", 2: "NORMAL"},
        (1,),
        {(1, 1): ("ACTIVE", "USER")},
        (),
        grants=((1, 1, None, "", 2), (1, 2, None, "", 3)),
    )
    m = {"creator_id": 2, "visibility": "SPACE", "state": "NORMAL", "space_id": 1, "tree": "share"}
    member = Caller(1, "u1", "USER", Credential.SESSION)
    stranger = Caller(2, "u2", "USER", Credential.SESSION)
    key = Caller(
        1,
        "u1",
        "USER",
        Credential.PAT,
        pat_id=1,
        restriction={
            "scope": "READ",
            "personal": "NONE",
            "spaces": [{"space": "spaces/s1", "trees": [{"path": "share.a", "level": "READ"}]}],
        },
    )
    f = facts(world, m)
    assert can_read(f, member, AccessMode.PRIVATE, model_scope(world, member))
    assert not can_read(f, stranger, AccessMode.PUBLIC, model_scope(world, stranger))
    assert not can_read(f, key, AccessMode.PRIVATE, model_scope(world, key))
    assert not can_read(f, None, AccessMode.PUBLIC, model_scope(world, None))
    assert can_read(
        facts(world, {**m, "tree": "share.a.b"}), key, AccessMode.PRIVATE, model_scope(world, key)
    )


def test_placed_memos_are_read_by_visibility() -> None:
    """Decision 0030, pinned: a placed memo is read by its visibility; a key only inside its ceiling.

    Each line fails on the rule before 0030 (a personal visibility naming a
    space denied everyone) or on a rule that let personal reach stand in for
    a space declaration.
    """
    world = World(
        {1: "NORMAL", 2: "NORMAL", 3: "NORMAL"},
        (1,),
        {(1, 1): ("ACTIVE", "ADMIN"), (1, 2): ("ACTIVE", "USER")},
        (),
        grants=((1, 1, None, "", 3), (1, 2, None, "", 3)),
    )
    alice, bob, carol = (Caller(i, f"u{i}", "USER", Credential.SESSION) for i in (1, 2, 3))

    def key(personal: str, spaces: list[Any]) -> Caller:
        restriction = {"scope": "READ", "personal": personal, "spaces": spaces}
        return Caller(2, "u2", "USER", Credential.PAT, pat_id=1, restriction=restriction)

    def reads(vis: str, who: Caller | None, mode: AccessMode = AccessMode.PRIVATE) -> bool:
        m = {"creator_id": 1, "visibility": vis, "state": "NORMAL", "space_id": 1, "tree": "share"}
        got = can_read(facts(world, m), who, mode, model_scope(world, who))
        assert got == spec_reads(world, m, who, mode), (vis, who, mode)
        return got

    # PRIVATE placed: the creator only, not a member who owns the whole tree.
    assert reads("PRIVATE", alice) and not reads("PRIVATE", bob)
    # PROTECTED placed: any signed-in user, a non-member included; not anonymous.
    assert reads("PROTECTED", carol) and not reads("PROTECTED", None, AccessMode.PUBLIC)
    # PUBLIC placed: anonymous only on a PUBLIC instance.
    assert reads("PUBLIC", None, AccessMode.PUBLIC) and not reads("PUBLIC", None)
    # Keys: personal AUDIENCE does not reach a placed memo in an undeclared space...
    assert not reads("PUBLIC", key("AUDIENCE", []))
    assert not reads("PROTECTED", key("AUDIENCE", [{"space": "spaces/s2"}]))
    # ...nor one outside its tree ceiling; inside it, personal NONE does not matter.
    narrow = [{"space": "spaces/s1", "trees": [{"path": "home.2", "level": "READ"}]}]
    assert not reads("PUBLIC", key("AUDIENCE", narrow))
    assert reads("PUBLIC", key("NONE", [{"space": "spaces/s1"}]))
    # ...and never beyond its holder: another member's placed PRIVATE memo stays hidden.
    assert not reads("PRIVATE", key("AUDIENCE", [{"space": "spaces/s1"}]))
