"""Tag rename, merge and delete across one's own memos (docs/decisions/0034)."""

from __future__ import annotations

from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from app.memos import tag_ops
from app.memos.tag_ops import normal_tag, rewrite_content
from tests.api.test_audience import restricted_key
from tests.conftest import Actor

RENAME = "/api/v1/memos/-/tags:rename"
DELETE = "/api/v1/memos/-/tags:delete"


@pytest.mark.parametrize(
    ("content", "new", "expected"),
    [
        ("a #work b", "job", "a #job b"),
        ("#work/p1 and #work/ and #workshop", "job", "#job/p1 and #job/ and #workshop"),
        (
            "x #work\n```\n#work in code\n```\n`#work` #work",
            "job",
            "x #job\n```\n#work in code\n```\n`#work` #job",
        ),
        ("a#work #worker /#work", "job", "a#work #worker /#work"),
        ("shipped #work today, #work/p1.", None, "shipped work today, work/p1."),
        ("``#work `` #work", None, "``#work `` work"),
        ("~~~\n#work\n", "job", "~~~\n#work\n"),  # unclosed fence: code to the end
    ],
)
def test_rewrite_content_touches_only_tags(content: str, new: str | None, expected: str) -> None:
    assert rewrite_content(content, "work", new) == expected


def test_normal_tag() -> None:
    assert normal_tag(" #a//b ", "t") == "a/b"
    for bad in ("", "#", "a b", "#a#b", 3, None, "x" * 200):
        with pytest.raises(Exception) as err:
            normal_tag(bad, "oldTag")
        assert "oldTag" in str(err.value)


async def _content(actor: Actor, name: str) -> str:
    r = await actor.get(f"/api/v1/{name}")
    assert r.status_code == 200, r.text
    return str(r.json()["content"])


async def test_rename_merge_delete_own_memos_only(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor, dialect: str
) -> None:
    one = await alice.memo("one #work and #work/p1", visibility="PUBLIC")
    two = await alice.memo("two #job already")
    code = await alice.memo("`#work` only in code")
    theirs = await bob.memo("bob #work", visibility="PUBLIC")

    r = await alice.post(RENAME, json={"oldTag": "work", "newTag": "job"})  # a merge into #job
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["memos"] == [one["name"]] and body["changed"] == 1
    assert body["remaining"] == 0
    assert await _content(alice, one["name"]) == "one #job and #job/p1"
    assert await _content(alice, code["name"]) == "`#work` only in code"
    assert await _content(bob, theirs["name"]) == "bob #work"  # another user's memo untouched
    got = (await alice.get(f"/api/v1/{one['name']}")).json()
    assert set(got["tags"]) == {"job", "job/p1"}
    history = (await alice.get(f"/api/v1/{one['name']}/history")).json()["versions"]
    assert [v["content"] for v in history[:2]] == ["one #job and #job/p1", "one #work and #work/p1"]
    tags = (await alice.get('/api/v1/memos?filter="job" in tags')).json()["memos"]
    assert {m["name"] for m in tags} == {one["name"], two["name"]}

    r = await alice.post(DELETE, json={"tag": "#job"})
    assert r.status_code == 200, r.text
    assert r.json()["changed"] == 2
    assert await _content(alice, one["name"]) == "one job and job/p1"
    assert await _content(alice, two["name"]) == "two job already"
    assert (await alice.get('/api/v1/memos?filter="job" in tags')).json()["memos"] == []

    # Bob renaming #work touches only his memo.
    r = await bob.post(RENAME, json={"oldTag": "work", "newTag": "w2"})
    assert r.json()["changed"] == 1
    assert await _content(alice, code["name"]) == "`#work` only in code"


async def test_bad_input_and_read_only_key(
    client: AsyncTestClient[Any], alice: Actor, dialect: str
) -> None:
    m = await alice.memo("#a #a/b")
    for body, field in (
        ({"oldTag": "a"}, "newTag"),
        ({"oldTag": "a b", "newTag": "c"}, "oldTag"),
        ({"oldTag": "a", "newTag": "a/b"}, "newTag"),
        ({"oldTag": "a", "newTag": "a"}, "newTag"),
    ):
        r = await alice.post(RENAME, json=body)
        assert r.status_code == 400 and field in r.text, (body, r.text)
    assert (await alice.post(DELETE, json={})).status_code == 400
    key = await restricted_key(alice, scope="READ", personal="OWN")
    r = await client.post(RENAME, json={"oldTag": "a", "newTag": "z"}, headers=key)
    assert r.status_code == 403
    r = await client.post(DELETE, json={"tag": "nothing"}, headers=key)
    assert r.status_code == 403
    assert await _content(alice, m["name"]) == "#a #a/b"
    assert (await client.post(RENAME, json={"oldTag": "a", "newTag": "z"})).status_code == 401


async def test_bounded_per_call(
    client: AsyncTestClient[Any], alice: Actor, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tag_ops, "MAX_MEMOS", 2)
    for i in range(3):
        await alice.memo(f"m{i} #t")
    first = (await alice.post(RENAME, json={"oldTag": "t", "newTag": "u"})).json()
    assert (first["changed"], first["remaining"]) == (2, 1)
    second = (await alice.post(RENAME, json={"oldTag": "t", "newTag": "u"})).json()
    assert (second["changed"], second["remaining"]) == (1, 0)
