"""``TRASHED`` is denied at the root of the read rule, in both renderings.

Not a per-route check: :func:`can_read` and :func:`audience_predicate` admit
only NORMAL (and ARCHIVED for the creator), so a trashed memo is hidden on
every path that asks the read rule, including paths written later. Pinned
for every visibility and every kind of caller, the creator and its keys
included, under both access modes. The SQL rendering is pinned on real rows
by the agreement test (tests/access/test_agreement.py, TRASHED rows in its
worlds) and end to end by tests/api/test_trash.py.
"""

from __future__ import annotations

import itertools

from app.access.audience import MEMO_STATES, AccessMode, MemoFacts, can_read
from app.access.caller import Caller, Credential
from app.access.scope import SpaceScope
from app.memos.trash import TRASHED

CREATOR = Caller(1, "alice", "ADMIN", Credential.SESSION)
CALLERS = (
    None,
    CREATOR,
    Caller(1, "alice", "ADMIN", Credential.PAT, pat_id=1, restriction={"personal": "OWN"}),
    Caller(1, "alice", "ADMIN", Credential.PAT, pat_id=2, restriction={"personal": "AUDIENCE"}),
    Caller(2, "bob", "USER", Credential.ACCESS_TOKEN),
)
# A scope that reads everything in space 1: only the state can deny.
EVERYTHING = SpaceScope({1: ((("", 3),))})  # type: ignore[arg-type]


def test_trashed_is_not_a_readable_state() -> None:
    assert TRASHED not in MEMO_STATES


def test_can_read_denies_a_trashed_memo_to_everyone() -> None:
    for caller, mode, vis in itertools.product(
        CALLERS, AccessMode, ("PRIVATE", "PROTECTED", "PUBLIC", "SPACE")
    ):
        space = (1, "share") if vis == "SPACE" else (None, None)
        live = MemoFacts(1, "NORMAL", vis, "NORMAL", *space)
        trashed = MemoFacts(1, "NORMAL", vis, TRASHED, *space)
        assert not can_read(trashed, caller, mode, EVERYTHING), (caller, mode, vis)
        if caller == CREATOR and vis != "SPACE":
            assert can_read(live, caller, mode, EVERYTHING)  # the control
