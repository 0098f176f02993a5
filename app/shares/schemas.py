"""The MemoShare resource and its request body."""

from __future__ import annotations

import msgspec

from app.api.bounds import Timestamp
from app.api.structs import In, Out


class MemoShare(Out):
    name: str  # memos/{uid}/shares/{token}
    memo: str
    token: str
    create_time: str
    expire_time: str | msgspec.UnsetType = msgspec.UNSET


class MemoShareIn(In):
    expire_time: Timestamp | None = None


class CreateMemoShareRequest(In):
    expire_time: Timestamp | None = None
    memo_share: MemoShareIn | None = None  # also accept the wrapped form


class ListMemoSharesResponse(Out):
    memo_shares: list[MemoShare]
