"""What an import does with each record: pure decisions, and the plan's counts.

Step 3 of the format's import semantics, keyed on the uid:

- no memo has the uid: create it with that uid (``INSERT``);
- a memo with the uid exists and the importer created it: the conflict
  policy decides, ``SKIP`` (default), ``REPLACE`` (update content and
  metadata) or ``DUPLICATE`` (create under a fresh uid);
- someone else holds the uid: create under a *derived* uid (``RENAME``).

The derived uid is a function of the archive uid and the importer
(:func:`derived_uid`), not a random one, so that a second import of the same
archive finds the renamed copy and treats it as the importer's own: importing
twice equals importing once, renamed memos included (Memos' own importer
would create a second copy). ``DUPLICATE`` is the one policy that is not
idempotent, by definition.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from enum import StrEnum

from app.api.structs import In, Out

MAX_DERIVATIONS = 4
_UID_TAIL = re.compile(r"-+\Z")

__all__ = [
    "MAX_DERIVATIONS",
    "Action",
    "Holder",
    "ImportPlan",
    "ImportRequest",
    "Policy",
    "Tally",
    "WarningOut",
    "candidates",
    "decide",
    "derived_uid",
]


class Policy(StrEnum):
    SKIP = "SKIP"
    REPLACE = "REPLACE"
    DUPLICATE = "DUPLICATE"


class Action(StrEnum):
    INSERT = "INSERT"
    RENAME = "RENAME"
    SKIP = "SKIP"
    REPLACE = "REPLACE"
    DUPLICATE = "DUPLICATE"


@dataclass(frozen=True, slots=True)
class Holder:
    """The memo that already holds a candidate uid, as the decision needs it."""

    memo_id: int
    creator_id: int


def derived_uid(uid: str, user_id: int, attempt: int) -> str:
    """A uid for ``uid`` held by another account, stable per (uid, importer, attempt).

    Fits the uid grammar (at most 36 characters, no leading or trailing
    ``-``): a prefix of the original and 10 hex digits of a SHA-256.
    """
    tag = hashlib.sha256(f"daybook-import:{user_id}:{attempt}:{uid}".encode()).hexdigest()[:10]
    head = _UID_TAIL.sub("", uid[:25])
    return f"{head}-{tag}" if head else tag


def candidates(uid: str, user_id: int) -> list[str]:
    """The uids an archive record may end up under, in the order they are tried."""
    return [uid] + [derived_uid(uid, user_id, i) for i in range(MAX_DERIVATIONS)]


def decide(
    uid: str, holders: dict[str, Holder], importer_id: int, policy: Policy
) -> tuple[Action, str, Holder | None] | None:
    """The action, the uid it targets, and the importer's own memo there (if any).

    None when every candidate uid is held by someone else (reported as a
    problem: the record cannot be placed).
    """
    for i, candidate in enumerate(candidates(uid, importer_id)):
        holder = holders.get(candidate)
        if holder is None:
            return (Action.INSERT if i == 0 else Action.RENAME), candidate, None
        if holder.creator_id == importer_id:
            if policy is Policy.SKIP:
                return Action.SKIP, candidate, holder
            if policy is Policy.REPLACE:
                return Action.REPLACE, candidate, holder
            return Action.DUPLICATE, candidate, holder
    return None


# --- the plan and the report, as the API answers them --------------------------------


class ImportRequest(In):
    conflict_policy: Policy = Policy.SKIP
    validate_only: bool = False


class WarningOut(Out):
    memo: str  # the archive uid ("" for the archive as a whole)
    message: str


class GeneratorOut(Out):
    name: str
    version: str


class ImportPlan(Out):
    """What an import did, or (``validateOnly``) would do.

    ``new``/``existing``/``renamed`` say what the archive's uids meet on this
    instance; ``inserted``/``replaced``/``skipped``/``duplicated`` what the
    chosen policy makes of them (``inserted`` counts renamed memos too).
    """

    validate_only: bool
    conflict_policy: str
    export_time: str
    exporter: str
    generator: GeneratorOut
    memo_count: int
    attachment_count: int
    new: int
    existing: int
    renamed: int
    inserted: int
    replaced: int
    skipped: int
    duplicated: int
    attachments_stored: int
    attachments_reused: int
    warnings: list[WarningOut]
    warning_count: int
    problems: list[str]


@dataclass
class Tally:
    """Counts accumulated while walking the records."""

    new: int = 0
    existing: int = 0
    renamed: int = 0
    inserted: int = 0
    replaced: int = 0
    skipped: int = 0
    duplicated: int = 0
    attachments_stored: int = 0
    attachments_reused: int = 0

    def count(self, action: Action) -> None:
        if action is Action.INSERT:
            self.new += 1
            self.inserted += 1
        elif action is Action.RENAME:
            self.renamed += 1
            self.inserted += 1
        else:
            self.existing += 1
            if action is Action.SKIP:
                self.skipped += 1
            elif action is Action.REPLACE:
                self.replaced += 1
            else:
                self.duplicated += 1
