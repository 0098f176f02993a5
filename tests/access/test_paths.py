"""Tree path parsing and rendering (``access.md`` section 4), pure."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.access.paths import covers, parse_tree_path, render_tree_path
from app.errors import InvalidArgument


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("", ""),
        ("share", "share"),
        ("share.projects", "share.projects"),
        ("share/projects/alpha", "share.projects.alpha"),
        ("~", "home.7"),
        ("~.notes", "home.7.notes"),
        ("~/notes/x", "home.7.notes.x"),
        ("A-b_9", "A-b_9"),
        ("x" * 64, "x" * 64),
        (".".join(["a"] * 32), ".".join(["a"] * 32)),
    ],
)
def test_parse_accepts(raw: str, canonical: str) -> None:
    assert parse_tree_path(raw, 7) == canonical


@pytest.mark.parametrize(
    "raw",
    [
        ".",
        "a.",
        ".a",
        "a..b",
        "a//b",
        "/a",
        "x" * 65,
        ".".join(["a"] * 33),
        "a.~",
        "~~",
        "a b",
        "é",
        "a.*",
        "~" + ".a" * 31,
        "a%b",
        "a\nb",
    ],
)
def test_parse_refuses(raw: str) -> None:
    with pytest.raises(InvalidArgument):
        parse_tree_path(raw, 7)


def test_render_relative_to_the_viewer() -> None:
    assert render_tree_path("home.7", 7) == "~"
    assert render_tree_path("home.7.notes", 7) == "~.notes"
    assert render_tree_path("home.7.notes", 8) == "home.7.notes"
    assert render_tree_path("home.70", 7) == "home.70"
    assert render_tree_path("share", 7) == "share"
    assert render_tree_path("home.7", None) == "home.7"


def test_covers_is_by_label_not_by_prefix() -> None:
    assert covers("", "anything.at.all") and covers("", "")
    assert covers("share", "share") and covers("share", "share.x")
    assert not covers("share", "shared") and not covers("share.x", "share")
    assert not covers("a_b", "aXb")


labels = st.from_regex(r"[A-Za-z0-9_-]{1,8}", fullmatch=True)


@given(st.lists(labels, max_size=6), st.integers(1, 10**6))
def test_round_trip(parts: list[str], viewer: int) -> None:
    path = ".".join(parts)
    assert parse_tree_path(path, viewer) == path
    assert parse_tree_path("/".join(parts), viewer) == path
    assert parse_tree_path(render_tree_path(path, viewer), viewer) == path
    assert parse_tree_path(
        render_tree_path(f"home.{viewer}.{path}".rstrip("."), viewer), viewer
    ) == (f"home.{viewer}.{path}".rstrip("."))
