"""The history audience (decision 0021) is built on the read rule and never exceeds it.

``version_readable`` is checked against ``can_read`` over random facts,
callers and scopes; ``can_read`` is in turn held to the SQL predicate by
``test_agreement.py``, so the history rule stays in step with both.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from app.access.audience import AccessMode, MemoFacts, can_read
from app.access.caller import Caller, Credential
from app.access.history import version_readable
from app.access.scope import OWNER, READ, WRITE, SpaceScope
from app.access.writes import VISIBILITY_RANK

AUTHOR, READER = 1, 2
visibilities = st.sampled_from(("PRIVATE", "PROTECTED", "PUBLIC", "SPACE", "SPACE", "FRIENDS"))
trees = st.sampled_from((None, "share", "share.a", "home.1"))


@st.composite
def facts(draw: Any) -> MemoFacts:
    visibility = draw(visibilities)
    placed = visibility == "SPACE" or (draw(st.booleans()) and draw(st.booleans()))
    return MemoFacts(
        creator_id=AUTHOR,
        creator_state=draw(st.sampled_from(("NORMAL", "NORMAL", "ARCHIVED", None))),
        visibility=visibility,
        state=draw(st.sampled_from(("NORMAL", "NORMAL", "ARCHIVED"))),
        space_id=draw(st.sampled_from((1, 2))) if placed else None,
        tree=draw(trees) if placed else None,
    )


@st.composite
def callers(draw: Any) -> Caller | None:
    who = draw(st.sampled_from((None, AUTHOR, READER)))
    if who is None:
        return None
    restriction: dict[str, Any] | None = None
    if draw(st.booleans()):
        restriction = {
            "scope": "READ",
            "personal": draw(st.sampled_from(("NONE", "OWN", "AUDIENCE"))),
            "spaces": [],
        }
    credential = Credential.PAT if restriction else Credential.SESSION
    return Caller(who, "u", "USER", credential, restriction=restriction)


scopes = st.frozensets(
    st.tuples(
        st.sampled_from((1, 2)),
        st.sampled_from(("", "share", "home.1")),
        st.sampled_from((READ, WRITE, OWNER)),
    ),
    max_size=3,
).map(SpaceScope)


@settings(max_examples=600, deadline=None)
@given(
    now=facts(),
    then=facts(),
    caller=callers(),
    mode=st.sampled_from(tuple(AccessMode)),
    scope=scopes,
)
def test_version_rule_never_exceeds_the_read_rule(
    now: MemoFacts, then: MemoFacts, caller: Caller | None, mode: AccessMode, scope: SpaceScope
) -> None:
    shown = version_readable(now, then, caller, mode, scope)
    then = replace(then, creator_state=now.creator_state)  # one memo, one creator
    # The newest version is read exactly by the memo's audience.
    assert version_readable(now, now, caller, mode, scope) == can_read(now, caller, mode, scope)
    if shown:
        assert can_read(now, caller, mode, scope)
    is_author = caller is not None and caller.user_id == AUTHOR
    if is_author and caller is not None and caller.restriction is None:
        assert shown == can_read(now, caller, mode, scope)
        return
    if shown:
        assert can_read(then, caller, mode, scope)  # the version as it stood is readable too
        if not is_author:  # ... and it was at least as visible as the memo is now
            assert VISIBILITY_RANK[then.visibility] >= VISIBILITY_RANK[now.visibility]


def test_private_draft_of_a_protected_memo_is_the_authors() -> None:
    now = MemoFacts(AUTHOR, "NORMAL", "PROTECTED", "NORMAL")
    draft = MemoFacts(AUTHOR, "NORMAL", "PRIVATE", "NORMAL")
    reader = Caller(READER, "r", "USER", Credential.SESSION)
    author = Caller(AUTHOR, "a", "USER", Credential.SESSION)
    assert not version_readable(now, draft, reader, AccessMode.PRIVATE)
    assert version_readable(now, draft, author, AccessMode.PRIVATE)
    assert version_readable(now, now, reader, AccessMode.PRIVATE)
    public = MemoFacts(AUTHOR, "NORMAL", "PUBLIC", "NORMAL")
    assert version_readable(now, public, reader, AccessMode.PRIVATE)  # narrowed since
