"""Base classes and helpers for the JSON shapes at the edge.

Output follows Memos' conventions: lowerCamelCase, enums as strings,
RFC 3339 UTC timestamps, scalars and empty lists always present, absent
sub-objects omitted (``UNSET``), never ``null``. Input ignores unknown
fields, as Memos' gateway does.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from functools import lru_cache

import msgspec

from app.errors import InvalidArgument

# Identifiers are checked with ``fullmatch``, and the patterns end in ``\Z`` as
# well, so that a caller using ``match`` still cannot accept "abc\n" (``$``
# matches before a trailing newline).
UID_RE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,34}[a-zA-Z0-9])?\Z")
USERNAME_RE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9_.-]{0,30}[a-zA-Z0-9])?\Z")


class Out(msgspec.Struct, rename="camel", omit_defaults=False):
    """Base of response bodies."""


class In(msgspec.Struct, rename="camel", forbid_unknown_fields=False):
    """Base of request bodies.

    NUL characters are refused in every string: PostgreSQL cannot store them
    in text, and a body that one dialect accepts and the other fails on
    would be a 500 on PostgreSQL only.
    """

    def __post_init__(self) -> None:
        for field in self.__struct_fields__:
            if _has_nul(getattr(self, field)):
                raise ValueError(f"{field}: NUL characters are not allowed")


def _has_nul(value: object) -> bool:
    """Whether any string in ``value`` holds a NUL; iterative, so no depth can exhaust the stack."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return False


@lru_cache(maxsize=65536)
def rfc3339(ts: int) -> str:
    """Epoch seconds as RFC 3339 UTC (memoised: a page formats ~150 of them)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def parse_time(value: str, field: str) -> int:
    """RFC 3339 to epoch seconds; a clear 400 naming the field otherwise."""
    text = value.strip()
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise InvalidArgument(f"{field}: {value!r} is not an RFC 3339 timestamp") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    ts = int(parsed.timestamp())
    if not 0 <= ts < 2**41:
        raise InvalidArgument(f"{field}: {value!r} is out of range")
    return ts


def resource_id(name: str, collection: str, *, field: str = "name") -> str:
    """``memos/abc`` or ``abc`` → ``abc`` for the given collection."""
    prefix = collection + "/"
    value = name[len(prefix) :] if name.startswith(prefix) else name
    if "/" in value or not value or any(ord(c) < 0x20 for c in value):
        raise InvalidArgument(f"{field}: {name!r} is not a {collection} name")
    return value


def valid_uid(uid: str, field: str = "memoId") -> str:
    if not UID_RE.fullmatch(uid):
        raise InvalidArgument(
            f"{field}: {uid!r} is not a valid id (1-36 letters, digits or '-', "
            "not starting or ending with '-')"
        )
    return uid
