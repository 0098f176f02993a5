"""The Memo resource at the edge (Memos 0.30 JSON shape plus Daybook's fields)."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from app.api.bounds import Content, Enum, Name, PathText, Placeholder, Timestamp
from app.api.structs import In, Out


class MemoProperty(Out):
    has_link: bool = False
    has_task_list: bool = False
    has_code: bool = False
    has_incomplete_tasks: bool = False
    title: str = ""


class Location(Out):
    placeholder: str = ""
    latitude: float = 0.0
    longitude: float = 0.0


class LocationIn(In):
    placeholder: Placeholder = ""
    latitude: float = 0.0
    longitude: float = 0.0


class Reaction(Out):
    name: str
    creator: str
    content_id: str
    reaction_type: str
    create_time: str


class AttachmentRef(Out):
    name: str
    filename: str
    type: str
    size: str
    create_time: str
    external_link: str = ""
    memo: str | msgspec.UnsetType = msgspec.UNSET


class RelatedMemo(Out):
    name: str
    snippet: str = ""


class Relation(Out):
    memo: RelatedMemo
    related_memo: RelatedMemo
    type: str


class Origin(Out):
    kind: str
    token: str | msgspec.UnsetType = msgspec.UNSET  # personalAccessTokens name
    description: str | msgspec.UnsetType = msgspec.UNSET


class Memo(Out):
    name: str
    state: str
    creator: str
    create_time: str
    update_time: str
    display_time: str
    content: str
    visibility: str
    tags: Annotated[
        list[str],
        msgspec.Meta(
            description=(
                "Derived from #tag occurrences outside code and links, ancestors included, "
                "in order of first appearance; at most 256, each at most 128 characters and "
                "16 levels (a longer or deeper occurrence is text, not a tag)."
            )
        ),
    ]
    pinned: bool
    attachments: list[AttachmentRef]
    relations: list[Relation]
    reactions: list[Reaction]
    property: MemoProperty
    snippet: str
    origin: Origin
    etag: str
    parent: str | msgspec.UnsetType = msgspec.UNSET
    location: Location | msgspec.UnsetType = msgspec.UNSET
    space: str | msgspec.UnsetType = msgspec.UNSET
    tree: str | msgspec.UnsetType = msgspec.UNSET
    # Only with ?view=html (the web client's opt-in): safe HTML, see safe_html.py.
    content_html: str | msgspec.UnsetType = msgspec.UNSET


class MemoRefIn(In):
    name: Name = ""


class MemoRelationIn(In):
    """A relation in a memo body (Memos' ``MemoRelation``); ``memo`` is the memo itself."""

    related_memo: MemoRefIn | None = None
    type: Enum = "REFERENCE"
    memo: MemoRefIn | None = None


MAX_BOUND = 1000  # attachments or relations bound by one create or update


class MemoIn(In):
    """Create and update body. Output-only fields sent back are ignored."""

    content: Content | msgspec.UnsetType = msgspec.UNSET
    visibility: Enum | msgspec.UnsetType = msgspec.UNSET
    state: Enum | msgspec.UnsetType = msgspec.UNSET
    pinned: bool | msgspec.UnsetType = msgspec.UNSET
    create_time: Timestamp | msgspec.UnsetType = msgspec.UNSET
    update_time: Timestamp | msgspec.UnsetType = msgspec.UNSET
    display_time: Timestamp | msgspec.UnsetType = msgspec.UNSET
    location: LocationIn | msgspec.UnsetType | None = msgspec.UNSET
    space: Name | msgspec.UnsetType = msgspec.UNSET
    tree: PathText | msgspec.UnsetType = msgspec.UNSET
    # Bound after the memo is written, in the same transaction (app.memos.bindings).
    attachments: (
        Annotated[list[MemoRefIn], msgspec.Meta(max_length=MAX_BOUND)] | msgspec.UnsetType
    ) = msgspec.UNSET
    relations: (
        Annotated[list[MemoRelationIn], msgspec.Meta(max_length=MAX_BOUND)] | msgspec.UnsetType
    ) = msgspec.UNSET
    # Output-only fields: accepted and ignored (Memos clients send them back).
    name: Any = msgspec.UNSET
    creator: Any = msgspec.UNSET

    def __post_init__(self) -> None:
        super().__post_init__()
        # Protobuf's zero values: VISIBILITY_UNSPECIFIED is PRIVATE (SPACE when a
        # space is named, as an omitted visibility is), STATE_UNSPECIFIED NORMAL.
        if self.visibility in ("VISIBILITY_UNSPECIFIED", ""):
            self.visibility = "SPACE" if isinstance(self.space, str) and self.space else "PRIVATE"
        if self.state in ("STATE_UNSPECIFIED", ""):
            self.state = "NORMAL"


class ListMemosResponse(Out):
    memos: list[Memo]
    next_page_token: str = ""
    total_size: int | msgspec.UnsetType = msgspec.UNSET
