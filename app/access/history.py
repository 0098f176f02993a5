"""Who may read a past version of a memo (``docs/decisions/0021-history-audience.md``).

A memo's history is readable only where the memo is readable now
(:func:`app.access.audience.can_read`), and each version in it is a
separate decision: a version written while the memo was *less visible*
than it is now is its author's only. Otherwise making a draft PROTECTED
would publish every PRIVATE draft before it, and moving a note from a home
path to ``share`` would show the whole space what was written at home.

"Less visible" is decided twice, and a version is shown to anyone but the
author only when both say it is not:

- by the visibility order PRIVATE < SPACE < PROTECTED < PUBLIC: a version
  whose visibility ranks below the memo's current one is the author's;
- by the version's own facts: the caller must be able to read the memo *as
  it stood at that version* (its visibility, state, space and path), with
  its scope now. This catches what the order cannot see: a SPACE memo moved
  from a path the caller cannot read, an archived stretch (archived memos
  are their creator's).

The author (the memo's creator) reads every version of a memo it can read;
through a restricted key, only the versions that lay inside the key's
ceiling (a key never reaches what lies outside it, past or present).
Pure: the caller's scope is loaded once per listing.
"""

from __future__ import annotations

from dataclasses import replace

from app.access.audience import AccessMode, MemoFacts, can_read
from app.access.caller import Caller
from app.access.scope import EMPTY_SCOPE, SpaceScope
from app.access.writes import VISIBILITY_RANK

__all__ = ["version_readable"]


def version_readable(
    now: MemoFacts,
    then: MemoFacts,
    caller: Caller | None,
    mode: AccessMode,
    scope: SpaceScope = EMPTY_SCOPE,
) -> bool:
    """Whether ``caller`` may read the version whose facts were ``then`` of the memo ``now``.

    ``then`` carries the version's visibility, state, space and path; its
    creator is the memo's (a memo never changes creator).
    """
    if not can_read(now, caller, mode, scope):
        return False
    then = replace(then, creator_id=now.creator_id, creator_state=now.creator_state)
    if caller is not None and caller.user_id == now.creator_id:
        # The author reads its whole history; through a restricted key, only
        # the versions that lay inside the key's ceiling.
        return caller.restriction is None or can_read(then, caller, mode, scope)
    was, is_ = VISIBILITY_RANK.get(then.visibility), VISIBILITY_RANK.get(now.visibility)
    if was is None or is_ is None or was < is_:
        return False
    return can_read(then, caller, mode, scope)
