"""Every rejection is a FilterError with a message and the 0-based offset of the culprit."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.filter import (
    MAX_DEPTH,
    MAX_LENGTH,
    FilterError,
    compile_attachment_filter,
    compile_memo_filter,
    validate_memo_filter,
)

CASES = [
    # (filter, offset, message fragment)
    ("", 0, "empty filter"),
    ("   \n ", 0, "empty filter"),
    ("foo == 1", 0, "unknown identifier 'foo'"),
    ("pinned && foo", 10, "unknown identifier 'foo'"),
    ("1", 0, "must be a boolean"),
    ("content", 0, "must be a boolean"),
    ('tag == "x"', 4, "tag only supports"),
    ('visibility > "A"', 11, "visibility does not support '>'"),
    ("pinned in [true]", 7, "pinned does not support 'in'"),
    ('pinned.contains("x")', 7, "not a text field"),
    ('visibility.contains("x")', 11, "not a text field"),
    ("content.contains(content)", 17, "must be a string literal"),
    ('content.matches("(")', 16, "invalid regular expression"),
    ('content.matches("a{2,1}")', 16, "invalid regular expression"),
    ('content.matches("\\\\bword")', 16, "unsupported regex escape"),
    ('content.matches("(?P<n>a)")', 16, "unsupported regex group"),
    ('content.matches("a{300}")', 16, "above 255"),
    ('content.matches("^*")', 16, "cannot follow an anchor"),
    ('tags.exists(t, t.matches("a"))', 17, "unsupported comprehension predicate"),
    ('tags.exists(t, t != "a")', 17, "unsupported comprehension predicate"),
    ('tags.all(t, t == "a" && t == "b")', 14, "unsupported comprehension predicate"),
    ("tags.exists(t, pinned)", 15, "unsupported comprehension predicate"),
    ('created_ts.getHours("UTC") == 1', 20, "no timezone argument"),
    ('created_ts > now - duration("1 day")', 28, "invalid duration"),
    ('created_ts > now - duration("")', 28, "invalid duration"),
    ('created_ts > timestamp("2024-13-01T00:00:00Z")', 23, "invalid timestamp"),
    ('created_ts > timestamp("2024-01-01")', 23, "invalid timestamp"),
    ("creator_id == 1 / 0", 16, "division by zero"),
    ("creator_id == 1 % 0", 16, "modulo by zero"),
    ("creator_id == 99999999999999999999", 14, "int64"),
    ("creator_id == 9223372036854775807 + 1", 34, "int64"),
    ("pinned ? true : false", 0, "conditional operator"),
    ('space == "x"', 9, "spaces/{id}"),
    ('space == "spaces/a/b"', 9, "spaces/{id}"),
    ('space == "spaces/x\\n"', 9, "spaces/{id}"),
    ('creator == "alice"', 11, "users/{username}"),
    ("creator_id > 3", 11, "creator_id does not support '>'"),
    ("visibility == ", 13, "unexpected end"),
    ("pinned && || pinned", 10, "syntax error"),
    ('"unterminated', 0, "syntax error"),
    ("pinned = true", 7, "syntax error"),
    ("1.5 > 1", 0, "floating-point"),
    ("1u == 1u", 0, "unsigned"),
    ("{1: 2}", 0, "maps are not supported"),
    ("has(pinned)", 0, "has() is not supported"),
    ("unknown_fn(1)", 0, "unknown function 'unknown_fn'"),
    ('content.lower() == "a"', 8, "unknown function 'lower'"),
    ('tags[0] == "a"', 0, "indexing is not supported"),
    ("size(pinned) > 1", 5, "size() is not supported"),
    ("created_ts + created_ts > now", 11, "not supported between"),
    ("size(tags) + 1 > 2", 11, "arithmetic on fields"),
    ('"\\ud800" == content', 0, "surrogate"),
    ('content == "a\\x00"', 11, "NUL"),
    ("now.getFullYear() == 2025", 4, "only supported on a timestamp field"),
]


@pytest.mark.parametrize(("text", "offset", "fragment"), CASES)
def test_rejection(text: str, offset: int, fragment: str) -> None:
    with pytest.raises(FilterError) as info:
        compile_memo_filter(text, now=0, dialect_name="sqlite")
    assert fragment in info.value.message
    assert info.value.offset == offset, info.value
    assert str(info.value) == f"{info.value.message} at offset {offset}"
    with pytest.raises(FilterError):
        validate_memo_filter(text)


def test_too_long_is_rejected_before_parsing() -> None:
    text = "pinned || " * 500 + "pinned"
    assert len(text) > MAX_LENGTH
    with pytest.raises(FilterError, match="too long"):
        validate_memo_filter(text)


def test_too_deep_is_rejected_before_parsing() -> None:
    deep = "(" * (MAX_DEPTH + 1) + "pinned" + ")" * (MAX_DEPTH + 1)
    with pytest.raises(FilterError, match="nested too deeply") as info:
        validate_memo_filter(deep)
    assert info.value.offset == MAX_DEPTH
    not_deep = "(" * MAX_DEPTH + "pinned" + ")" * MAX_DEPTH
    validate_memo_filter(not_deep)
    with pytest.raises(FilterError, match="nested too deeply"):
        validate_memo_filter("!" * 100 + "pinned")
    # brackets inside string literals do not count
    validate_memo_filter('content.contains("' + "(" * 200 + '")')


def test_long_flat_chains_do_not_recurse() -> None:
    validate_memo_filter(" && ".join(["pinned"] * 400))
    validate_memo_filter(" || ".join(['"a" in tags'] * 250))


def test_attachment_errors() -> None:
    with pytest.raises(FilterError, match="unknown identifier 'content'"):
        compile_attachment_filter('content.contains("a")', now=0, dialect_name="sqlite")
    with pytest.raises(FilterError, match="memos/"):
        compile_attachment_filter('memo_id == "memos/"', now=0, dialect_name="postgresql")
    with pytest.raises(FilterError, match="does not support '<'"):
        compile_attachment_filter('mime_type < "a"', now=0, dialect_name="postgresql")


_TOKENS = [
    "content",
    "tags",
    "tag",
    "pinned",
    "created_ts",
    "now",
    "now()",
    "(",
    ")",
    "[",
    "]",
    "!",
    "-",
    "&&",
    "||",
    "==",
    "<",
    "in",
    ".",
    ",",
    "contains",
    "exists",
    "t",
    '"x"',
    "'y'",
    "1",
    "0",
    "/",
    "%",
    "?",
    ":",
    "size(",
    "timestamp(",
    "duration(",
    '"1h"',
    "null",
    "true",
    "99999999999999999999",
    "{",
    "}",
    "sets",
    "matches",
    "\\",
    '"("',
    "getHours(",
]


@settings(max_examples=1500, deadline=None, database=None)
@given(
    st.one_of(st.text(max_size=60), st.lists(st.sampled_from(_TOKENS), max_size=25).map(" ".join))
)
def test_fuzz_only_filter_errors(text: str) -> None:
    """Random and token-soup input compiles or raises FilterError, nothing else."""
    for target in (compile_memo_filter, compile_attachment_filter):
        for dialect in ("sqlite", "postgresql"):
            try:
                target(text, now=1_700_000_000, dialect_name=dialect)
            except FilterError as exc:
                assert 0 <= exc.offset <= max(len(text), MAX_LENGTH)
