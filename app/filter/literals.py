"""Decoding literal text: strings, integers, Go-style durations, RFC 3339 timestamps.

Every decoder raises ``ValueError`` with a short reason; the lowering step
turns that into a ``FilterError`` carrying the literal's offset. Limits follow
CEL: integers are int64, timestamps span years 0001-9999 and durations about
+-10,000 years, so nothing derived from them can overflow SQLite's int64.
"""

from __future__ import annotations

import calendar
import re
from decimal import Decimal, InvalidOperation

from celpy.evaluation import celstr
from lark import Token

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
NANOS = 1_000_000_000
# CEL's timestamp range: 0001-01-01T00:00:00Z .. 9999-12-31T23:59:59.999999999Z
TS_MIN_NS = -62_135_596_800 * NANOS
TS_MAX_NS = 253_402_300_800 * NANOS - 1
# CEL's duration range: +-315,576,000,000 seconds
DUR_MAX_NS = 315_576_000_000 * NANOS


def decode_string(token: Token) -> str:
    """Decode a CEL string literal; reject NUL and lone surrogates (not storable as text)."""
    value = str(celstr(token))
    if "\x00" in value:
        raise ValueError("NUL characters are not allowed in strings")
    if any(0xD800 <= ord(ch) <= 0xDFFF for ch in value):
        raise ValueError("lone surrogate code points are not allowed in strings")
    return value


def check_int64(value: int) -> int:
    """Return ``value`` if it fits in int64, as both CEL and the databases require."""
    if not INT64_MIN <= value <= INT64_MAX:
        raise ValueError("integer out of int64 range")
    return value


def decode_int(token: Token) -> int:
    text = token.value
    negative = text.startswith("-")
    body = text[1:] if negative else text
    value = int(body, 16) if body[:2].lower() == "0x" else int(body, 10)
    return check_int64(-value if negative else value)


_DURATION_UNITS = {
    "h": 3600 * NANOS,
    "m": 60 * NANOS,
    "s": NANOS,
    "ms": 1_000_000,
    "us": 1_000,
    "\u00b5s": 1_000,
    "ns": 1,
}
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(h|ms|us|\u00b5s|ns|m|s)")


def parse_duration(text: str) -> int:
    """Parse a Go-style duration ("1h30m", "1.5s", "-90m", "0") into nanoseconds."""
    if len(text) > 100:
        raise ValueError("duration too long")
    sign = 1
    rest = text
    if rest[:1] in "+-" and rest:
        sign = -1 if rest[0] == "-" else 1
        rest = rest[1:]
    if rest == "0":
        return 0
    if not rest:
        raise ValueError("empty duration")
    total = Decimal(0)
    pos = 0
    while pos < len(rest):
        match = _DURATION_PART.match(rest, pos)
        if match is None:
            raise ValueError("expected a number followed by h, m, s, ms, us or ns")
        try:
            total += Decimal(match.group(1)) * _DURATION_UNITS[match.group(2)]
        except InvalidOperation as exc:
            raise ValueError("bad number in duration") from exc
        pos = match.end()
    nanos = sign * int(total)
    if abs(nanos) > DUR_MAX_NS:
        raise ValueError("duration out of range")
    return nanos


_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?"
    r"(?:([Zz])|([+-])(\d{2}):(\d{2}))"
)


def parse_timestamp(text: str) -> int:
    """Parse an RFC 3339 timestamp (offset required) into epoch nanoseconds."""
    match = _RFC3339.fullmatch(text)
    if match is None:
        raise ValueError("expected an RFC 3339 timestamp such as 2024-01-31T12:00:00Z")
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    if year < 1 or not 1 <= month <= 12:
        raise ValueError("date out of range")
    if not 1 <= day <= calendar.monthrange(year, month)[1]:
        raise ValueError("day out of range")
    if hour > 23 or minute > 59 or second > 59:
        raise ValueError("time field out of range")
    fraction = int((match.group(7) or "").ljust(9, "0"))
    offset_s = 0
    if match.group(9):
        oh, om = int(match.group(10)), int(match.group(11))
        if oh > 23 or om > 59:
            raise ValueError("UTC offset out of range")
        offset_s = (oh * 3600 + om * 60) * (1 if match.group(9) == "+" else -1)
    seconds = calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0)) - offset_s
    nanos = seconds * NANOS + fraction
    if not TS_MIN_NS <= nanos <= TS_MAX_NS:
        raise ValueError("timestamp out of range (years 0001-9999)")
    return nanos


def epoch_seconds_to_ns(seconds: int) -> int:
    """``timestamp(<int>)``: epoch seconds, within CEL's timestamp range."""
    nanos = seconds * NANOS
    if not TS_MIN_NS <= nanos <= TS_MAX_NS:
        raise ValueError("timestamp out of range (years 0001-9999)")
    return nanos
