"""The write rule's table of cases (``app.access.writes.write_denial``), pure.

One row per case: who writes (creator or not, session or key), the level
the caller's loaded scope gives at the source and the destination, where the
memo is and where the write puts it, and whether the rule allows it. The
scope stands for a key's full ceiling already intersected with its holder's
live grants (``load_scope``), so a key row differs from a session row only by
its restriction's scope and personal reach.
"""

from __future__ import annotations

from typing import Any

import pytest

from app.access.caller import Caller, Credential
from app.access.scope import OWNER, READ, WRITE, SpaceScope
from app.access.writes import (
    READ_ONLY,
    Spot,
    can_comment,
    can_write_memo,
    may_unlink,
    widens,
    write_denial,
)

ME, OTHER = 1, 2
S, T = 10, 20  # two spaces


def session(user_id: int = ME) -> Caller:
    return Caller(user_id, "u", "USER", Credential.SESSION)


def key(scope: str = "WRITE", personal: str = "AUDIENCE", user_id: int = ME) -> Caller:
    restriction: dict[str, Any] = {"scope": scope, "personal": personal, "spaces": []}
    return Caller(user_id, "u", "USER", Credential.PAT, pat_id=5, restriction=restriction)


def scope(*rows: tuple[int, str, int]) -> SpaceScope:
    return SpaceScope(frozenset(rows))


PRIVATE, PROTECTED, PUBLIC = Spot("PRIVATE"), Spot("PROTECTED"), Spot("PUBLIC")
SHARE = Spot("SPACE", S, "share")
SHARE_A = Spot("SPACE", S, "share.a")
HOME = Spot("SPACE", S, "home.1")
OTHER_SPACE = Spot("SPACE", T, "share")
P_PRIVATE, P_PROTECTED, P_PUBLIC = (Spot(v, S, "share") for v in ("PRIVATE", "PROTECTED", "PUBLIC"))

W_SHARE = scope((S, "share", WRITE))
O_SHARE = scope((S, "share", OWNER))
R_SHARE = scope((S, "share", READ))
O_SHARE_W_T = scope((S, "share", OWNER), (T, "share", WRITE))
W_SUBTREE = scope((S, "share.a", WRITE))  # e.g. a key confined to one subtree

# (id, caller, creator, before, after, scope, allowed)
CASES: list[tuple[str, Caller, int, Spot | None, Spot | None, SpaceScope, bool]] = [
    # --- create ---------------------------------------------------------------
    ("create personal, session", session(), ME, None, PUBLIC, SpaceScope(), True),
    ("create personal, key AUDIENCE", key(), ME, None, PRIVATE, SpaceScope(), True),
    ("create personal, key OWN", key(personal="OWN"), ME, None, PUBLIC, SpaceScope(), True),
    ("13.4 create personal, key NONE", key(personal="NONE"), ME, None, PUBLIC, W_SHARE, False),
    ("create personal, READ key", key("READ"), ME, None, PRIVATE, SpaceScope(), False),
    ("create in space with WRITE", session(), ME, None, SHARE, W_SHARE, True),
    ("create below a WRITE grant", session(), ME, None, SHARE_A, W_SHARE, True),
    ("create in space with READ only", session(), ME, None, SHARE, R_SHARE, False),
    ("create outside the subtree", key(personal="NONE"), ME, None, SHARE, W_SUBTREE, False),
    ("create inside the subtree", key(personal="NONE"), ME, None, SHARE_A, W_SUBTREE, True),
    ("create in space, READ key", key("READ"), ME, None, SHARE, W_SHARE, False),
    ("create SPACE without path", session(), ME, None, Spot("SPACE", S), W_SHARE, False),
    ("create SPACE without space", session(), ME, None, Spot("SPACE"), W_SHARE, False),
    ("create unknown visibility", session(), ME, None, Spot("FRIENDS"), W_SHARE, False),
    # --- edit (in place) ------------------------------------------------------
    ("edit own personal", session(), ME, PRIVATE, None, SpaceScope(), True),
    ("edit another's personal", session(), OTHER, PUBLIC, None, O_SHARE, False),
    ("edit own personal, key NONE", key(personal="NONE"), ME, PRIVATE, None, SpaceScope(), False),
    ("edit own personal, key OWN", key(personal="OWN"), ME, PRIVATE, None, SpaceScope(), True),
    ("edit own space memo with WRITE", session(), ME, SHARE, None, W_SHARE, True),
    ("edit another's space memo with WRITE", session(), OTHER, SHARE, None, W_SHARE, False),
    ("edit another's space memo as OWNER", session(), OTHER, SHARE, None, O_SHARE, True),
    ("edit own space memo with READ", session(), ME, SHARE, None, R_SHARE, False),
    ("edit own space memo, READ key", key("READ"), ME, SHARE, None, O_SHARE, False),
    ("edit space memo outside key subtree", key(), ME, SHARE, None, W_SUBTREE, False),
    ("edit unknown visibility", session(), ME, Spot("FRIENDS"), None, O_SHARE, False),
    ("edit SPACE without path", session(), ME, Spot("SPACE", S), None, O_SHARE, False),
    # --- visibility changes in place ------------------------------------------
    ("creator widens PRIVATE to PUBLIC", session(), ME, PRIVATE, PUBLIC, SpaceScope(), True),
    ("creator narrows PUBLIC to PRIVATE", session(), ME, PUBLIC, PRIVATE, SpaceScope(), True),
    # --- moves ----------------------------------------------------------------
    ("creator moves to a WRITE path", session(), ME, SHARE, SHARE_A, W_SHARE, True),
    ("OWNER moves another's memo inside", session(), OTHER, SHARE, SHARE_A, O_SHARE, True),
    ("OWNER moves another's memo to T", session(), OTHER, SHARE, OTHER_SPACE, O_SHARE_W_T, True),
    ("move to a space without WRITE", session(), ME, SHARE, OTHER_SPACE, W_SHARE, False),
    ("13.3 OWNER makes another's PROTECTED", session(), OTHER, SHARE, PROTECTED, O_SHARE, False),
    ("13.3 OWNER makes another's PUBLIC", session(), OTHER, SHARE, PUBLIC, O_SHARE, False),
    ("13.3 OWNER makes another's PRIVATE", session(), OTHER, SHARE, PRIVATE, O_SHARE, False),
    ("creator takes own memo out", session(), ME, SHARE, PROTECTED, W_SHARE, True),
    ("creator with READ cannot take it out", session(), ME, SHARE, PRIVATE, R_SHARE, False),
    ("13.4 key NONE takes own memo out", key(personal="NONE"), ME, SHARE, PRIVATE, O_SHARE, False),
    ("key OWN takes own memo out", key(personal="OWN"), ME, SHARE, PRIVATE, W_SHARE, True),
    ("creator moves personal into space", session(), ME, PRIVATE, SHARE, W_SHARE, True),
    ("personal into space, key NONE", key(personal="NONE"), ME, PRIVATE, SHARE, W_SHARE, False),
    ("move out of the key's subtree", key(), ME, SHARE_A, SHARE, W_SUBTREE, False),
    ("move a home memo to share", session(), ME, HOME, SHARE, scope((S, "", WRITE)), True),
    # --- placed memos of a personal visibility (decision 0030) ----------------
    ("create placed PUBLIC with WRITE", session(), ME, None, P_PUBLIC, W_SHARE, True),
    ("create placed PRIVATE, READ only", session(), ME, None, P_PRIVATE, R_SHARE, False),
    ("create placed PRIVATE, key NONE", key(personal="NONE"), ME, None, P_PRIVATE, W_SHARE, True),
    ("create placed PUBLIC, key NONE", key(personal="NONE"), ME, None, P_PUBLIC, W_SHARE, False),
    ("create placed PUBLIC, key OWN", key(personal="OWN"), ME, None, P_PUBLIC, W_SHARE, True),
    ("edit another's placed PUBLIC as OWNER", session(), OTHER, P_PUBLIC, None, O_SHARE, True),
    ("edit another's placed PUBLIC, WRITE", session(), OTHER, P_PUBLIC, None, W_SHARE, False),
    ("edit own placed PUBLIC, key NONE", key(personal="NONE"), ME, P_PUBLIC, None, O_SHARE, False),
    ("key NONE widens SPACE to PUBLIC", key(personal="NONE"), ME, SHARE, P_PUBLIC, W_SHARE, False),
    ("creator widens SPACE to PUBLIC", session(), ME, SHARE, P_PUBLIC, W_SHARE, True),
    ("OWNER widens SPACE to PROTECTED", session(), OTHER, SHARE, P_PROTECTED, O_SHARE, False),
    ("OWNER narrows placed PUBLIC", session(), OTHER, P_PUBLIC, P_PRIVATE, O_SHARE, True),
    ("OWNER narrows SPACE to PRIVATE", session(), OTHER, SHARE, P_PRIVATE, O_SHARE, True),
    ("creator places own PUBLIC", session(), ME, PUBLIC, P_PUBLIC, W_SHARE, True),
    ("OWNER takes placed PUBLIC out", session(), OTHER, P_PUBLIC, PUBLIC, O_SHARE, False),
    ("placed PUBLIC without a path", session(), ME, None, Spot("PUBLIC", S), O_SHARE, False),
]


@pytest.mark.parametrize(
    ("caller", "creator", "before", "after", "grants", "allowed"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_write_rule_table(
    caller: Caller,
    creator: int,
    before: Spot | None,
    after: Spot | None,
    grants: SpaceScope,
    allowed: bool,
) -> None:
    reason = write_denial(caller, creator, before, after, grants)
    assert (reason is None) is allowed, reason


def test_read_only_key_says_so() -> None:
    assert write_denial(key("READ"), ME, PRIVATE, None) == READ_ONLY


def test_malformed_restriction_fails_closed() -> None:
    odd = Caller(ME, "u", "USER", Credential.PAT, restriction={"scope": "WRITE", "personal": 7})
    assert write_denial(odd, ME, None, PRIVATE) is not None
    nothing = Caller(ME, "u", "USER", Credential.PAT, restriction={"scope": "write"})
    assert write_denial(nothing, ME, None, PRIVATE) == READ_ONLY


def test_only_the_creator_widens_in_a_space_memo_it_owns() -> None:
    """A placed memo whose visibility widens in place: the creator may, an OWNER may not."""
    placed_private = Spot("PRIVATE", S, "share")
    placed_public = Spot("PUBLIC", S, "share")
    assert write_denial(session(), ME, placed_private, placed_public, O_SHARE) is None
    reason = write_denial(session(), OTHER, placed_private, placed_public, O_SHARE)
    assert reason is not None and "only its creator can widen" in reason
    assert write_denial(session(), OTHER, placed_public, placed_private, O_SHARE) is None


def test_widening_order() -> None:
    order = ["PRIVATE", "SPACE", "PROTECTED", "PUBLIC"]
    for i, a in enumerate(order):
        for j, b in enumerate(order):
            assert widens(a, b) is (j > i)
    assert widens("PRIVATE", "FRIENDS") and widens("FRIENDS", "PRIVATE")


def test_unlink_only_what_the_writer_can_see() -> None:
    assert may_unlink(session(OTHER), ME, target_readable=True)
    assert not may_unlink(session(OTHER), ME, target_readable=False)
    assert may_unlink(session(ME), ME, target_readable=False)


def test_comment_is_a_create_at_the_parents_place() -> None:
    assert can_comment(session(), "SPACE", S, "share", W_SHARE)
    assert not can_comment(session(), "SPACE", S, "share", R_SHARE)
    assert can_comment(session(), "PUBLIC", None, None, SpaceScope())
    assert not can_comment(key(personal="NONE"), "PUBLIC", None, None, SpaceScope())
    assert not can_comment(key("READ"), "SPACE", S, "share", W_SHARE)


def test_source_wrapper_matches_the_rule() -> None:
    for _, caller, creator, before, _, grants, _ in CASES:
        if before is None:
            continue
        spot = before
        assert can_write_memo(
            caller, creator, spot.visibility, spot.space_id, spot.tree, grants
        ) is (write_denial(caller, creator, before, None, grants) is None)
