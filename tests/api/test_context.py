"""The provided request context and the read-only-key guard (``app.api.context``).

The guard is a plain function, so it is tested as one: a READ key is refused,
a WRITE key, a session and an anonymous request (left to ``requires_user``)
pass. ``tests/grants/test_read_key.py`` drives every write endpoint with a
READ key end to end.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from app.access.caller import Caller, Credential
from app.access.restriction import Restriction
from app.api.context import writable_key
from app.errors import PermissionDenied


def _conn(user: Caller | None) -> Any:
    return SimpleNamespace(scope={"user": user})


def _key(scope: str) -> Caller:
    return Caller(
        user_id=7,
        username="agent",
        role="USER",
        credential=Credential.PAT,
        pat_id=3,
        restriction=Restriction.parse({"scope": scope, "personal": "OWN"}),
    )


def test_read_key_refused_on_mutating_route() -> None:
    with pytest.raises(PermissionDenied, match="read-only"):
        writable_key(_conn(_key("READ")), None)  # type: ignore[arg-type]


def test_malformed_scope_is_read_only() -> None:
    with pytest.raises(PermissionDenied):
        writable_key(_conn(_key("ADMIN")), None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "user",
    [
        None,
        Caller(user_id=1, username="alice", role="USER", credential=Credential.SESSION),
    ],
    ids=["anonymous", "session"],
)
def test_writers_and_anonymous_pass(user: Caller | None) -> None:
    writable_key(_conn(user), None)  # type: ignore[arg-type]
    writable_key(_conn(_key("WRITE")), None)  # type: ignore[arg-type]
