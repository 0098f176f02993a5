"""Relations: set only by a writer, only to readable memos; shown only when both ends are readable."""

from __future__ import annotations

from typing import Any

from litestar.testing import AsyncTestClient

from tests.conftest import Actor
from tests.related.helpers import make_public


def refs(*names: str, kind: str = "REFERENCE") -> dict[str, Any]:
    return {"relations": [{"relatedMemo": {"name": n}, "type": kind} for n in names]}


async def test_set_and_list_references(alice: Actor, bob: Actor) -> None:
    a = await alice.memo("a", visibility="PROTECTED")
    b = await alice.memo("b", visibility="PROTECTED")
    c = await bob.memo("c", visibility="PUBLIC")
    r = await alice.patch(f"/api/v1/{a['name']}/relations", json=refs(b["name"], c["name"]))
    assert r.status_code == 200, r.text
    got = {(x["memo"]["name"], x["relatedMemo"]["name"]) for x in r.json()["relations"]}
    assert got == {(a["name"], b["name"]), (a["name"], c["name"])}
    # Replacing the set.
    r = await alice.patch(f"/api/v1/{a['name']}/relations", json=refs(c["name"]))
    assert [x["relatedMemo"]["name"] for x in r.json()["relations"]] == [c["name"]]
    # Both directions are listed: c sees the incoming reference.
    listed = (await bob.get(f"/api/v1/{c['name']}/relations")).json()["relations"]
    assert [x["memo"]["name"] for x in listed] == [a["name"]]
    assert listed[0]["relatedMemo"]["snippet"] == "c"
    # The memo resource carries the same relations.
    assert (await alice.get(f"/api/v1/{a['name']}")).json()["relations"] == r.json()["relations"]


async def test_set_relations_refusals(alice: Actor, bob: Actor) -> None:
    a = await alice.memo("a", visibility="PROTECTED")
    hidden = await bob.memo("bob private", visibility="PRIVATE")
    other = await bob.memo("bob team", visibility="PROTECTED")
    r = await alice.patch(f"/api/v1/{a['name']}/relations", json=refs(hidden["name"]))
    assert r.status_code == 404 and hidden["name"].split("/")[1] in r.json()["message"]
    assert "bob private" not in r.text
    assert (
        await alice.patch(f"/api/v1/{a['name']}/relations", json=refs(a["name"]))
    ).status_code == 400
    r = await alice.patch(
        f"/api/v1/{a['name']}/relations", json=refs(other["name"], kind="COMMENT")
    )
    assert r.status_code == 400
    # Only a writer of the memo may set its relations.
    r = await bob.patch(f"/api/v1/{a['name']}/relations", json=refs(other["name"]))
    assert r.status_code == 403
    r = await alice.patch(f"/api/v1/{a['name']}/relations", json=refs("memos/no-such-memo"))
    assert r.status_code == 404
    assert (await alice.get(f"/api/v1/{a['name']}/relations")).json()["relations"] == []


async def test_relations_of_unreadable_memo_are_404(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor
) -> None:
    hidden = await alice.memo("x", visibility="PRIVATE")
    assert (await bob.get(f"/api/v1/{hidden['name']}/relations")).status_code == 404
    await make_public(alice)
    assert (await client.get(f"/api/v1/{hidden['name']}/relations")).status_code == 404
    pub = await alice.memo("pub", visibility="PUBLIC")
    team = await alice.memo("team", visibility="PROTECTED")
    await alice.patch(f"/api/v1/{pub['name']}/relations", json=refs(team["name"]))
    anon = await client.get(f"/api/v1/{pub['name']}/relations")
    assert anon.status_code == 200 and anon.json()["relations"] == []
    assert len((await bob.get(f"/api/v1/{pub['name']}/relations")).json()["relations"]) == 1
