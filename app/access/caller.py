"""The authenticated caller, as resolved from its credential alone."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from app.access.restriction import Restriction


class Credential(StrEnum):
    SESSION = "session"  # browser cookie (mutations need the CSRF header)
    ACCESS_TOKEN = "access_token"  # noqa: S105 (a kind, not a secret) bearer token from sign-in: same row as the session
    PAT = "pat"  # personal access token


@dataclass(frozen=True, slots=True)
class Caller:
    """A signed-in, active user and the credential it presented.

    Anonymous requests have no Caller (``None``): there is no "anonymous
    user" object that a branch could accidentally match.
    """

    user_id: int
    username: str
    role: str  # ADMIN | USER (structural only)
    credential: Credential
    session_id: int | None = None
    pat_id: int | None = None
    pat_description: str = ""
    restriction: Restriction | None = None

    def __post_init__(self) -> None:
        # The one place a stored restriction is parsed (fail closed): the
        # credential resolver hands over the stored JSON, decisions read this.
        if self.restriction is not None and not isinstance(self.restriction, Restriction):
            object.__setattr__(self, "restriction", Restriction.parse(self.restriction))

    @property
    def is_admin(self) -> bool:
        return self.role == "ADMIN"

    @property
    def is_restricted(self) -> bool:
        return self.restriction is not None

    def origin(self) -> dict[str, Any]:
        """The read-only record of which credential wrote a memo."""
        if self.credential is Credential.PAT:
            return {"kind": "pat", "id": self.pat_id, "description": self.pat_description}
        return {"kind": self.credential.value}


def restriction_key(caller: Caller | None) -> Restriction | None:
    """A restricted credential's restriction, None otherwise.

    What the caller can read depends only on its user id and this (a frozen,
    hashable value), so the access expressions built from it are memoised
    under ``(user_id, restriction)``.
    """
    if caller is None:
        return None
    return caller.restriction


def key_caller(user_id: int, restriction: Restriction) -> Caller:
    """The restricted caller that a memoised builder stands for (from ``restriction_key``)."""
    return Caller(user_id, "", "USER", Credential.PAT, restriction=restriction)


def reader_of(user_id: int | None, restriction: Restriction | None) -> Caller | None:
    """The reader a memoised statement stands for, from ``(user id, restriction_key)``:
    all the read rule looks at (``audience_predicate`` is keyed on these two)."""
    if user_id is None:
        return None
    if restriction is not None:
        return key_caller(user_id, restriction)
    return Caller(user_id, "", "USER", Credential.SESSION)
