"""``Restriction.parse``: one parse, fail closed, hashable (issue 14, item 1)."""

from __future__ import annotations

from typing import Any

import pytest

from app.access.caller import Caller, Credential
from app.access.clamp import Grant
from app.access.restriction import KeyScope, PersonalReach, Restriction
from app.access.scope import key_ceilings
from app.access.vocab import Level

GOOD = {
    "scope": "WRITE",
    "personal": "OWN",
    "spaces": [
        {"space": "spaces/a", "admin": True, "trees": []},
        {"space": "spaces/b", "trees": [{"path": "share.x", "level": "READ"}]},
    ],
}


def test_a_stored_restriction_round_trips() -> None:
    r = Restriction.parse(GOOD)
    assert (r.scope, r.personal) == (KeyScope.WRITE, PersonalReach.OWN)
    assert r.may_write() and r.declared_uids() == {"a", "b"}
    assert r.space_ceiling("a") == [Grant("", Level.OWNER)]
    assert r.space_ceiling("b") == [Grant("share.x", Level.READ)]
    assert r.space_ceiling("c") == []
    assert r.keeps_admin("a") and not r.keeps_admin("b")
    assert Restriction.parse(r.to_json()) == r
    assert r.to_json()["spaces"][0] == {"space": "spaces/a", "admin": True, "trees": []}


@pytest.mark.parametrize(
    ("raw", "may_write", "personal", "uids"),
    [
        (None, False, "NONE", set()),
        ([], False, "NONE", set()),
        ("WRITE", False, "NONE", set()),
        ({"scope": "write", "personal": "own"}, False, "NONE", set()),
        ({"scope": ["WRITE"], "personal": {}}, False, "NONE", set()),
        ({"spaces": {"space": "spaces/a"}}, False, "NONE", set()),
        ({"spaces": [{"space": "a"}, {"space": "spaces/"}, 7, {"space": 3}]}, False, "NONE", set()),
        ({"spaces": [{"space": "spaces/a", "trees": "share"}]}, False, "NONE", set()),
        # Every tree row malformed: the declaration reaches nothing and is dropped.
        (
            {"spaces": [{"space": "spaces/a", "trees": [{"path": "x\n", "level": "READ"}]}]},
            False,
            "NONE",
            set(),
        ),
        (
            {"spaces": [{"space": "spaces/a", "trees": [{"path": "x", "level": ["READ"]}]}]},
            False,
            "NONE",
            set(),
        ),
        ({"scope": "WRITE", "personal": "AUDIENCE"}, True, "AUDIENCE", set()),
    ],
)
def test_malformed_parts_reach_nothing(
    raw: Any, may_write: bool, personal: str, uids: set[str]
) -> None:
    r = Restriction.parse(raw)
    assert r.may_write() is may_write
    assert r.personal == personal
    assert r.declared_uids() == uids
    assert {c.space_uid for c in key_ceilings(r)} == uids


def test_admin_counts_only_when_exactly_true() -> None:
    for flag in ("true", 1, None, [True]):
        r = Restriction.parse({"spaces": [{"space": "spaces/a", "admin": flag}]})
        assert r.declared_uids() == {"a"} and not r.keeps_admin("a")


def test_caller_parses_once_and_is_hashable() -> None:
    caller = Caller(1, "u", "USER", Credential.PAT, restriction=dict(GOOD))
    assert isinstance(caller.restriction, Restriction)
    assert caller.restriction == Restriction.parse(GOOD)
    assert hash(caller.restriction) == hash(Restriction.parse(GOOD))
    assert Caller(1, "u", "USER", Credential.SESSION).restriction is None
