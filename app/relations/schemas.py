"""Request and response bodies of the relation endpoints (Memos' shape)."""

from __future__ import annotations

from typing import Annotated

import msgspec

from app.api.bounds import Enum, Name
from app.api.structs import In, Out
from app.memos.schemas import Relation

MAX_RELATIONS = 1000  # per memo, per call (app.relations.service checks it too)


class MemoRefIn(In):
    name: Name = ""


class RelationIn(In):
    related_memo: MemoRefIn | None = None
    type: Enum = "REFERENCE"
    memo: MemoRefIn | None = None  # output-shaped; ignored (the path names the memo)


class SetMemoRelationsRequest(In):
    relations: Annotated[list[RelationIn], msgspec.Meta(max_length=MAX_RELATIONS)] = msgspec.field(
        default_factory=list
    )


class ListMemoRelationsResponse(Out):
    relations: list[Relation]
    next_page_token: str = ""
    total_size: int = 0
