"""The User resource at the edge."""

from __future__ import annotations

from typing import Any

import msgspec

from app.api.bounds import Description, Enum, Name, Password, Title, Url
from app.api.structs import In, Out, rfc3339
from app.users.rows import UserRow


class User(Out):
    name: str
    username: str
    role: str
    state: str
    display_name: str  # Memos 0.25+
    nickname: str  # the pre-0.25 name of displayName, kept for older clients
    email: str
    description: str
    avatar_url: str
    create_time: str
    update_time: str


class UserIn(In):
    username: Name | msgspec.UnsetType = msgspec.UNSET
    password: Password | msgspec.UnsetType = msgspec.UNSET
    # Required with a new password: a password change proves the current one.
    current_password: Password | msgspec.UnsetType = msgspec.UNSET
    role: Enum | msgspec.UnsetType = msgspec.UNSET
    state: Enum | msgspec.UnsetType = msgspec.UNSET
    email: Title | msgspec.UnsetType = msgspec.UNSET
    nickname: Title | msgspec.UnsetType = msgspec.UNSET
    display_name: Title | msgspec.UnsetType = msgspec.UNSET  # wins over nickname
    description: Description | msgspec.UnsetType = msgspec.UNSET
    avatar_url: Url | msgspec.UnsetType = msgspec.UNSET
    name: Any = msgspec.UNSET  # output-only, ignored
    create_time: Any = msgspec.UNSET  # output-only, ignored
    update_time: Any = msgspec.UNSET  # output-only, ignored

    def __post_init__(self) -> None:
        super().__post_init__()
        # Memos 0.25 renamed nickname to displayName; both name the one column.
        if not isinstance(self.display_name, msgspec.UnsetType):
            self.nickname = self.display_name


class ListUsersResponse(Out):
    users: list[User]
    next_page_token: str = ""


def user_out(row: UserRow, *, private: bool) -> User:
    """``private``: the caller is this user or an admin, and may see the email."""
    return User(
        name=f"users/{row.username}",
        username=row.username,
        role=row.role,
        state=row.state,
        display_name=row.nickname,
        nickname=row.nickname,
        email=row.email if private else "",
        description=row.description,
        avatar_url=row.avatar_url,
        create_time=rfc3339(row.created_ts),
        update_time=rfc3339(row.updated_ts),
    )


class UserStats(Out):
    name: str
    memo_display_timestamps: list[str]  # Memos before 0.26; the same as memoCreatedTimestamps
    memo_created_timestamps: list[str]
    memo_updated_timestamps: list[str]
    memo_type_stats: dict[str, int]
    tag_count: dict[str, int]
    pinned_memos: list[str]
    total_memo_count: int


class ListAllUserStatsResponse(Out):
    stats: list[UserStats]
