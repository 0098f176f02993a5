"""Personal access tokens as the API reads and writes them (the secret appears once)."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from app.api.bounds import Timestamp, Title
from app.api.structs import In, Out


class PersonalAccessToken(Out):
    name: str
    description: str
    created_at: str  # Memos 0.31
    create_time: str  # Daybook's earlier name, kept
    token_hint: str
    expires_at: str | msgspec.UnsetType = msgspec.UNSET
    last_used_at: str | msgspec.UnsetType = msgspec.UNSET
    restriction: dict[str, Any] | msgspec.UnsetType = msgspec.UNSET


class CreateTokenRequest(In):
    description: Title = ""
    expire_time: Timestamp | msgspec.UnsetType = msgspec.UNSET
    expires_at: Timestamp | msgspec.UnsetType = msgspec.UNSET
    # Its lists are bounded by the validator (app.tokens.restriction).
    restriction: (
        Annotated[dict[str, Any], msgspec.Meta(max_length=8)] | msgspec.UnsetType | None
    ) = msgspec.UNSET
    # Memos 0.31: days from now; 0 (or absent) means the token never expires.
    expires_in_days: Annotated[int, msgspec.Meta(ge=0, le=36500)] | msgspec.UnsetType = (
        msgspec.UNSET
    )
    parent: Any = msgspec.UNSET  # the path names the user


class CreateTokenResponse(Out):
    personal_access_token: PersonalAccessToken
    token: str


class ListTokensResponse(Out):
    personal_access_tokens: list[PersonalAccessToken]
    next_page_token: str = ""  # one page: a user's tokens are few
