"""The space rows as the space modules read them: typed shapes for ``Row[Any]``.

As in ``app/memos/rows.py``: a ``sqlalchemy.engine.Row`` answers any
attribute as ``Any``, so ``row: Any`` let a misspelt column through
``mypy --strict``. Each Protocol here is read-only and mirrors one table of
``app.db.schema``; a ``Row`` satisfies it structurally, so nothing is
converted at run time. ``tests/api/test_memo_rows.py`` fails when a
Protocol and its table drift apart.
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["GrantRow", "GroupRow", "MemberSpaceRow", "SeatRow", "SpaceRow"]


class SpaceRow(Protocol):
    """The columns of ``space``."""

    @property
    def id(self) -> int: ...
    @property
    def uid(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def creator_id(self) -> int: ...
    @property
    def default_member_grants(self) -> Any: ...  # JSON: a list of {path, level}
    @property
    def created_ts(self) -> int: ...
    @property
    def updated_ts(self) -> int: ...


class MemberSpaceRow(SpaceRow, Protocol):
    """A space with the caller's seat, as :func:`app.spaces.service.member_space` loads it."""

    @property
    def my_role(self) -> str: ...
    @property
    def my_state(self) -> str: ...


class SeatRow(Protocol):
    """The columns of ``space_member`` (one seat on a roster)."""

    @property
    def space_id(self) -> int: ...
    @property
    def user_id(self) -> int: ...
    @property
    def role(self) -> str: ...
    @property
    def state(self) -> str: ...
    @property
    def invited_by(self) -> int | None: ...
    @property
    def created_ts(self) -> int: ...
    @property
    def updated_ts(self) -> int: ...


class GroupRow(Protocol):
    """The columns of ``space_group``."""

    @property
    def id(self) -> int: ...
    @property
    def space_id(self) -> int: ...
    @property
    def title(self) -> str: ...
    @property
    def created_ts(self) -> int: ...


class GrantRow(Protocol):
    """The columns of ``space_grant`` (exactly one of user_id, group_id is set)."""

    @property
    def id(self) -> int: ...
    @property
    def space_id(self) -> int: ...
    @property
    def user_id(self) -> int | None: ...
    @property
    def group_id(self) -> int | None: ...
    @property
    def path(self) -> str: ...
    @property
    def level(self) -> int: ...
    @property
    def created_by(self) -> int: ...
    @property
    def created_ts(self) -> int: ...
