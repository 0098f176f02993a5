"""Request and response bodies of the relation endpoints (Memos' shape)."""

from __future__ import annotations

import msgspec

from app.api.structs import In, Out
from app.memos.schemas import Relation


class MemoRefIn(In):
    name: str = ""


class RelationIn(In):
    related_memo: MemoRefIn | None = None
    type: str = "REFERENCE"
    memo: MemoRefIn | None = None  # output-shaped; ignored (the path names the memo)


class SetMemoRelationsRequest(In):
    relations: list[RelationIn] = msgspec.field(default_factory=list)


class ListMemoRelationsResponse(Out):
    relations: list[Relation]
    next_page_token: str = ""
    total_size: int = 0
