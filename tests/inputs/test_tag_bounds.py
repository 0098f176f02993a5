"""Derived tags are bounded in length, depth and count (issue 13 item 14).

An 8 KiB ``#a/a/.../a`` memo derived 16.8 M characters of ancestors (every
response that carried it was 16.8 MB) and on PostgreSQL a tag over 256
characters was a 500. The bounds are a documented truncation, not a refusal
(docs/decisions/0017-input-bounds.md): the memo saves, and an occurrence past
a bound is text rather than a tag, so notes imported from Memos always save.
"""

from __future__ import annotations

import pytest

from app.memos.markdown import MAX_TAG_DEPTH, MAX_TAG_LENGTH, MAX_TAGS, derive
from app.memos.safe_html import render_html
from tests.conftest import Actor


async def test_deep_tag_run_is_bounded(alice: Actor) -> None:
    content = "#" + "/".join(["a"] * 4095)  # 8,190 bytes
    m = await alice.memo(content)
    assert m["tags"] == []  # too long to be a tag: text
    assert len((await alice.get(f"/api/v1/{m['name']}")).content) < 3 * len(content)


async def test_long_tag_is_text_not_a_500(alice: Actor) -> None:
    long_tag = "x" * 300
    m = await alice.memo(f"#{long_tag} and #ok")
    assert m["tags"] == ["ok"]
    r = await alice.get("/api/v1/memos", params={"filter": '"ok" in tags'})
    assert [x["name"] for x in r.json()["memos"]] == [m["name"]]


async def test_tags_at_the_bounds_are_kept(alice: Actor) -> None:
    longest = "t" * MAX_TAG_LENGTH
    deepest = "/".join(f"l{i}" for i in range(MAX_TAG_DEPTH))
    m = await alice.memo(f"#{longest} #{deepest}")
    assert longest in m["tags"] and deepest in m["tags"]
    assert len(m["tags"]) == 1 + MAX_TAG_DEPTH
    too_deep = deepest + "/extra"
    m = await alice.memo(f"#{too_deep} #{'u' * (MAX_TAG_LENGTH + 1)}")
    assert m["tags"] == []


async def test_many_ordinary_tags_still_save(alice: Actor) -> None:
    """A real memo with many ordinary tags (Memos compatibility) keeps them all."""
    tags = [f"project/p{i}" for i in range(100)]
    m = await alice.memo(" ".join(f"#{t}" for t in tags))
    assert m["tags"] == ["project", *tags]


async def test_tag_count_is_bounded_in_order_of_appearance(alice: Actor) -> None:
    r = await alice.patch(
        "/api/v1/instance/settings/ACCESS", json={"contentLengthLimit": 64 * 1024}
    )
    assert r.status_code == 200, r.text
    content = " ".join(f"#t{i}" for i in range(5000))
    m = await alice.memo(content)
    assert m["tags"] == [f"t{i}" for i in range(MAX_TAGS)]
    r = await alice.get("/api/v1/memos", params={"filter": f"size(tags) == {MAX_TAGS}"})
    assert [x["name"] for x in r.json()["memos"]] == [m["name"]]


@pytest.mark.parametrize(
    ("content", "tags"),
    [
        ("#a/b/c", ("a", "a/b", "a/b/c")),
        ("#a//b/", ("a", "a/b")),
        ("#" + "x" * MAX_TAG_LENGTH, ("x" * MAX_TAG_LENGTH,)),
        ("#" + "x" * (MAX_TAG_LENGTH + 1), ()),
        ("#" + "a/" * MAX_TAG_DEPTH, tuple("/".join(["a"] * i) for i in range(1, 17))),
        ("#" + "a/" * (MAX_TAG_DEPTH + 1) + "a", ()),
    ],
)
def test_derive_bounds(content: str, tags: tuple[str, ...]) -> None:
    assert derive(content).tags == tags


def test_rendering_agrees_with_derivation() -> None:
    """What the web client shows as a tag is exactly what is stored as one."""
    html = render_html(f"#ok #{'x' * (MAX_TAG_LENGTH + 1)}")
    assert html.count('class="tag"') == 1 and 'data-tag="ok"' in html
