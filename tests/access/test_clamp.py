"""The clamp identity ``level_key(x) = min(level(M, x), level(K, x))`` and its classic cases."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from app.access.clamp import (
    FULL_CEILING,
    NONE,
    OWNER,
    READ,
    WRITE,
    Grant,
    clamp,
    covers,
    level_at,
    normalise,
)

# Few labels on purpose: random paths then share lineages often, and the
# interesting cases (ancestor/descendant, siblings, equal paths) all occur.
labels = st.sampled_from(["share", "home", "a", "b", "a_b", "a-b", "x1"])
paths = st.lists(labels, max_size=4).map(".".join)
grants = st.lists(st.builds(Grant, paths, st.integers(READ, OWNER)), max_size=6)


@settings(max_examples=500, deadline=None)
@given(member=grants, ceiling=grants, probes=st.lists(paths, min_size=1, max_size=8))
def test_clamp_identity(member: list[Grant], ceiling: list[Grant], probes: list[str]) -> None:
    clamped = clamp(member, ceiling)
    for x in probes + [g.path for g in member + ceiling]:
        assert level_at(clamped, x) == min(level_at(member, x), level_at(ceiling, x))


@settings(max_examples=300, deadline=None)
@given(g=grants, probes=st.lists(paths, min_size=1, max_size=8))
def test_normalise_preserves_levels_and_drops_redundancy(g: list[Grant], probes: list[str]) -> None:
    n = normalise(g)
    for x in probes + [r.path for r in g]:
        assert level_at(n, x) == level_at(g, x)
    for r in n:
        assert not any(o != r and covers(o.path, r.path) and o.level >= r.level for o in n)


def test_member_narrower_than_key() -> None:
    member = [Grant("share.projects.alpha", WRITE)]
    assert clamp(member, FULL_CEILING) == [Grant("share.projects.alpha", WRITE)]


def test_key_narrower_than_member() -> None:
    member = [Grant("share", OWNER)]
    key = [Grant("share.projects.alpha", READ)]
    assert clamp(member, key) == [Grant("share.projects.alpha", READ)]


def test_disjoint_lineages_give_nothing() -> None:
    assert clamp([Grant("home.7", OWNER)], [Grant("share", OWNER)]) == []


def test_over_grant_is_clamped_down() -> None:
    assert clamp([Grant("share", READ)], [Grant("share", OWNER)]) == [Grant("share", READ)]


def test_two_groups_on_one_path_take_the_max() -> None:
    member = [Grant("share", READ), Grant("share", WRITE)]
    assert clamp(member, FULL_CEILING) == [Grant("share", WRITE)]


def test_grantless_declaration_is_no_ceiling() -> None:
    member = [Grant("share", WRITE), Grant("home.3", OWNER)]
    assert clamp(member, FULL_CEILING) == sorted(member)


def test_undeclared_space_gives_nothing() -> None:
    assert clamp([Grant("", OWNER)], []) == []


def test_label_prefix_is_not_an_ancestor() -> None:
    assert not covers("a", "a_b") and not covers("a", "a-b") and not covers("a", "ab")
    assert level_at([Grant("a", OWNER)], "a_b") == NONE
