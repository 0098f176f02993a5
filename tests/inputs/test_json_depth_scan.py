"""The raw-body depth scan (``app.api.json_depth``): exact on well-formed JSON."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.api.json_depth import _CHUNK as CHUNK
from app.api.json_depth import json_depth, too_deep


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ("", 0),
        ("1", 0),
        ('"[[["', 0),
        ("[]", 1),
        ('[[], {"a": [1]}]', 3),
        (r'["\"[", "\\", "]]]]"]', 1),
        (r'{"a": "\\\"{{{"}', 1),
        ("[" * 5000, 5000),
        ('"unterminated [[[', 0),
    ],
)
def test_json_depth(text: str, depth: int) -> None:
    assert json_depth(text.encode(), limit=10**9) == depth


def test_json_depth_stops_past_the_limit() -> None:
    assert json_depth(b"[" * 10_000_000, limit=64) > 64
    assert too_deep(b"[" * 65) and not too_deep(b"[" * 64 + b"]" * 64)


def test_chunk_boundaries_carry_strings_and_escapes() -> None:
    """Strings, escapes and depth that straddle the scanner's 1 MiB chunks."""
    for pad in range(0, 6):
        filler = b" " * (CHUNK - 3 - pad)
        body = b"[" + filler + b'"\\\\\\"[[[[ ' + b"[" * 70 + b'"'
        # the string opened before the boundary swallows the 70 brackets
        assert json_depth(body, limit=10**9) == 1, pad
        body = b"[" + filler + b'"\\\\" ' + b"[" * 70  # the string is one escaped backslash
        assert json_depth(body, limit=10**9) == 71, pad


def test_too_deep_matches_a_recursive_count_on_random_json() -> None:
    import random

    rng = random.Random(7)
    for _ in range(300):
        value = _random_json(rng, rng.randint(0, 80))
        text = json.dumps(value)
        assert json_depth(text.encode(), limit=10**9) == _depth(value), text[:200]
        assert too_deep(text.encode()) == (_depth(value) > 64)


def _random_json(rng: Any, depth: int) -> Any:
    if depth == 0:
        return rng.choice([1, "s", '"[{\\', None, True, "]]}}", '\\"'])
    inner = _random_json(rng, depth - 1)
    return [inner, "x[", 2] if rng.random() < 0.5 else {"k{": inner, 'q\\"': "]"}


def _depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    return 0
