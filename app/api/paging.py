"""Opaque, signed keyset page tokens.

A token carries the sort key of the last row served plus a fingerprint of
the query (order, filter, state, caller), HMAC-signed with the instance
secret. A tampered token, or one minted for another caller or another query,
is a 400, never someone else's page.

Every keyset list fetches ``LIMIT size + 1``: the extra row only says that a
next page exists. ``trim_page`` drops it and mints the token from the last
row kept; ``decode_int_key`` reads an all-integer position back (the shape
every list but the memo list uses), so the trim-and-token block and its
check are written once.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from app.errors import InvalidArgument

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "MAX_PAGE_SIZE",
    "Page",
    "decode_int_key",
    "decode_token",
    "encode_token",
    "fingerprint",
    "page_size",
    "trim_page",
]

T = TypeVar("T")

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 1000


def page_size(value: int | None) -> int:
    if value is None or value <= 0:
        return DEFAULT_PAGE_SIZE
    return min(value, MAX_PAGE_SIZE)


def fingerprint(*parts: Any) -> str:
    raw = json.dumps(parts, separators=(",", ":"), sort_keys=True, default=str)
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


def encode_token(secret: str, query: str, key: list[Any]) -> str:
    payload = json.dumps({"q": query, "k": key}, separators=(",", ":")).encode()
    mac = hmac.new(secret.encode(), payload, hashlib.sha256).digest()[:16]
    return base64.urlsafe_b64encode(mac + payload).decode().rstrip("=")


def decode_token(secret: str, query: str, token: str) -> list[Any]:
    """The keyset position in ``token``; 400 unless it is ours and for this query."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except (ValueError, TypeError):
        raise InvalidArgument("pageToken: malformed page token") from None
    mac, payload = raw[:16], raw[16:]
    expected = hmac.new(secret.encode(), payload, hashlib.sha256).digest()[:16]
    if len(mac) != 16 or not hmac.compare_digest(mac, expected):
        raise InvalidArgument("pageToken: invalid page token")
    data = json.loads(payload)
    if data.get("q") != query:
        raise InvalidArgument("pageToken: the page token belongs to a different query")
    key = data.get("k")
    if not isinstance(key, list):
        raise InvalidArgument("pageToken: invalid page token")
    return key


def decode_int_key(secret: str, query: str, token: str, arity: int) -> list[int]:
    """A keyset position of ``arity`` integers (ids, timestamps); 400 for any other shape."""
    values = decode_token(secret, query, token)
    if len(values) != arity or not all(type(v) is int for v in values):
        raise InvalidArgument("pageToken: invalid page token")
    return values


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    """The rows of one page and the token for the next ("" on the last page)."""

    rows: list[T]
    next_token: str


def trim_page(
    rows: Sequence[T], size: int, key_of: Callable[[T], list[Any]], *, secret: str, query: str
) -> Page[T]:
    """Cut a ``LIMIT size + 1`` fetch to ``size`` rows; the token resumes after the last kept."""
    if len(rows) <= size:
        return Page(list(rows), "")
    kept = list(rows[:size])
    return Page(kept, encode_token(secret, query, key_of(kept[-1])))
