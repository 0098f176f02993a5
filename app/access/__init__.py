"""Who may read and write a memo: the one place that decides.

The read rule (``../shared/brief/access.md`` section 3) has two renderings
that must agree row for row:

- :func:`app.access.audience.audience_predicate` — one SQL boolean
  expression ANDed into every list, count and join *before* ORDER BY and
  LIMIT, so nothing hidden is returned, counted or paged over;
- :func:`app.access.audience.can_read` — a pure function of the same facts,
  for point reads.

Both start from "deny" and add allowing branches; an unknown visibility, a
missing or deactivated creator, or an unknown caller matches no branch. For
SPACE memos both consult the caller's space scope
(:func:`app.access.scope.space_scope`: ``(space, path, level)`` rows of its
ACTIVE memberships, clamped by a restricted key's declared spaces): the
predicate as a subquery, the point read as a loaded
:class:`~app.access.scope.SpaceScope`. A key's ceiling only ever removes rows. The
write rule (:mod:`app.access.writes`) is likewise a pure decision over the
caller and the memo's stored facts. Instance ADMIN is structural and grants
no read or write of anyone's memos.
"""

from app.access.audience import AccessMode, MemoFacts, audience_predicate, can_read
from app.access.caller import Caller, Credential
from app.access.scope import SpaceScope, load_scope, space_scope

__all__ = [
    "AccessMode",
    "Caller",
    "Credential",
    "MemoFacts",
    "SpaceScope",
    "audience_predicate",
    "can_read",
    "load_scope",
    "space_scope",
]
