"""MemoViewService's Structs: a saved view as the API reads and writes it."""

from __future__ import annotations

from typing import Any

import msgspec

from app.api.bounds import FilterText, Title
from app.api.structs import In, Out


class MemoView(Out):
    name: str
    title: str
    filter: str
    create_time: str
    update_time: str


class MemoViewIn(In):
    title: Title | msgspec.UnsetType = msgspec.UNSET
    filter: FilterText | msgspec.UnsetType = msgspec.UNSET
    name: Any = msgspec.UNSET  # output-only, ignored


class ListMemoViewsResponse(Out):
    memo_views: list[MemoView]
    views: list[MemoView]  # the key before Memos' naming; Daybook's web client reads it


class ListShortcutsResponse(Out):
    """Memos 0.30's name for the same list (``ShortcutService``)."""

    shortcuts: list[MemoView]
