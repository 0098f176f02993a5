"""Memos rows as Daybook needs them, parsed from whichever schema the database has."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MemosAttachment",
    "MemosMember",
    "MemosMemo",
    "MemosReaction",
    "MemosSpace",
    "MemosUser",
    "json_object",
]


def json_object(value: Any) -> dict[str, Any]:
    """A JSON column (TEXT on SQLite, JSONB or TEXT on PostgreSQL) as a dict; {} if unusable."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str | bytes) and value:
        try:
            parsed = json.loads(value)
        except ValueError:
            return {}
        return parsed if isinstance(parsed, dict) else {}
    return {}


@dataclass(frozen=True, slots=True)
class MemosUser:
    id: int
    username: str
    role: str  # HOST | ADMIN | USER
    row_status: str
    email: str
    nickname: str
    password_hash: str
    avatar_url: str
    description: str
    created_ts: int
    updated_ts: int


@dataclass(frozen=True, slots=True)
class MemosMemo:
    id: int
    uid: str
    creator_id: int
    created_ts: int
    updated_ts: int
    row_status: str
    content: str
    visibility: str
    pinned: bool
    payload: dict[str, Any]
    space_id: int | None
    parent_id: int | None  # from the COMMENT relation

    @property
    def location(self) -> dict[str, Any] | None:
        loc = self.payload.get("location")
        return loc if isinstance(loc, dict) else None


@dataclass(frozen=True, slots=True)
class MemosReaction:
    id: int
    created_ts: int
    creator_id: int
    memo_id: int | None
    reaction_type: str


@dataclass(frozen=True, slots=True)
class MemosAttachment:
    id: int
    uid: str
    creator_id: int
    created_ts: int
    filename: str
    blob: bytes | None
    type: str
    size: int
    memo_id: int | None
    storage_type: str
    reference: str


@dataclass(frozen=True, slots=True)
class MemosSpace:
    id: int
    uid: str
    title: str
    description: str


@dataclass(frozen=True, slots=True)
class MemosMember:
    space_id: int
    user_id: int
    role: str
    status: str
