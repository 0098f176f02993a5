"""The user row as the user and space modules read it: a typed shape for ``Row[Any]``.

See ``app/memos/rows.py`` for why a read-only Protocol rather than a
dataclass: a ``Row`` from ``select(user_account)`` satisfies it structurally,
so nothing is converted at run time while the bodies are type-checked.
``tests/api/test_memo_rows.py`` also checks this one against its table.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["UserRow"]


class UserRow(Protocol):
    """The columns of ``user_account`` (see ``app.db.schema``), read-only."""

    @property
    def id(self) -> int: ...
    @property
    def username(self) -> str: ...
    @property
    def role(self) -> str: ...
    @property
    def state(self) -> str: ...
    @property
    def nickname(self) -> str: ...
    @property
    def email(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def avatar_url(self) -> str: ...
    @property
    def password_hash(self) -> str: ...
    @property
    def created_ts(self) -> int: ...
    @property
    def updated_ts(self) -> int: ...
