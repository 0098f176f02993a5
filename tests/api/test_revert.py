"""History diff and revert (app.memos.revert), under the read and write rules."""

from __future__ import annotations

from typing import Any

from tests.conftest import Actor
from tests.related.helpers import restricted_key
from tests.spaces.conftest import create_space, join, space_memo


async def _three_versions(alice: Actor) -> dict[str, Any]:
    m = await alice.memo("first line\nsecond line\n", visibility="PRIVATE")
    r = await alice.patch(
        f"/api/v1/{m['name']}?updateMask=content", json={"content": "first line\nchanged line\n"}
    )
    assert r.status_code == 200, r.text
    r = await alice.patch(
        f"/api/v1/{m['name']}?updateMask=visibility,pinned",
        json={"visibility": "PROTECTED", "pinned": True},
    )
    assert r.status_code == 200, r.text
    return m


async def test_diff_between_any_two_versions(alice: Actor) -> None:
    m = await _three_versions(alice)
    r = await alice.get(f"/api/v1/{m['name']}/history:diff?from=1&to=3")
    assert r.status_code == 200, r.text
    d = r.json()
    assert d["name"] == m["name"] and d["fromVersion"] == 1 and d["toVersion"] == 3
    uid = m["name"].split("/")[1]
    assert d["contentDiff"].startswith(f"--- memos/{uid}@1\n+++ memos/{uid}@3\n")
    assert "-second line\n" in d["contentDiff"] and "+changed line\n" in d["contentDiff"]
    fields = {c["field"]: (c["from"], c["to"]) for c in d["changedFields"]}
    assert fields["visibility"] == ("PRIVATE", "PROTECTED")
    assert fields["pinned"] == ("false", "true")
    assert "state" not in fields
    # `to` defaults to the newest version; the reverse diff swaps the sides.
    assert (await alice.get(f"/api/v1/{m['name']}/history:diff?from=1")).json() == d
    back = (await alice.get(f"/api/v1/{m['name']}/history:diff?from=3&to=1")).json()
    assert "+second line\n" in back["contentDiff"]
    same = (await alice.get(f"/api/v1/{m['name']}/history:diff?from=2&to=2")).json()
    assert same["contentDiff"] == "" and same["changedFields"] == []
    # Bad and missing versions: 400 and 404, never 500.
    for query, status in (
        ("from=9", 404),
        ("from=1&to=9", 404),
        ("from=0", 400),
        ("", 400),
        ("from=x", 400),
    ):
        r = await alice.get(f"/api/v1/{m['name']}/history:diff?{query}")
        assert r.status_code == status, (query, r.text)


async def test_revert_is_a_new_version_and_obeys_the_write_rule(alice: Actor, bob: Actor) -> None:
    m = await _three_versions(alice)
    # bob can read the PROTECTED memo (so its versions written while PROTECTED)
    # but not write it; v1 was written while PRIVATE: the author's only (0021).
    assert (await bob.get(f"/api/v1/{m['name']}/history:diff?from=3")).status_code == 200
    assert (await bob.get(f"/api/v1/{m['name']}/history:diff?from=1")).status_code == 404
    r = await bob.post(f"/api/v1/{m['name']}:revert", json={"version": 3})
    assert r.status_code == 403, r.text
    # The history says who may revert (the write rule), so a client need not guess.
    assert (await alice.get(f"/api/v1/{m['name']}/history")).json()["canEdit"] is True
    assert (await bob.get(f"/api/v1/{m['name']}/history")).json()["canEdit"] is False
    key = await restricted_key(alice, scope="READ", personal="AUDIENCE")
    r = await alice.client.get(f"/api/v1/{m['name']}/history", headers=key)
    assert r.status_code == 200 and r.json()["canEdit"] is False, r.text
    r = await alice.client.post(f"/api/v1/{m['name']}:revert", headers=key, json={"version": 1})
    assert r.status_code == 403, r.text
    r = await alice.post(
        f"/api/v1/{m['name']}:revert", json={"version": 1}, headers={"If-Match": '"1-1"'}
    )
    assert r.status_code == 412, r.text
    for body in ({}, {"version": 0}, {"version": "1"}):
        r = await alice.post(f"/api/v1/{m['name']}:revert", json=body)
        assert r.status_code == 400, (body, r.text)
    assert (await alice.post(f"/api/v1/{m['name']}:revert", json={"version": 7})).status_code == 404
    current = (await alice.get(f"/api/v1/{m['name']}")).json()
    assert current["content"] == "first line\nchanged line\n"  # nothing above changed it

    r = await alice.post(f"/api/v1/{m['name']}:revert", json={"version": 1})
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["content"] == "first line\nsecond line\n"
    assert out["visibility"] == "PRIVATE" and out["pinned"] is False
    assert r.headers["ETag"] == out["etag"] != current["etag"]
    versions = (await alice.get(f"/api/v1/{m['name']}/history")).json()["versions"]
    assert [v["version"] for v in versions] == [4, 3, 2, 1]
    assert versions[0]["kind"] == "REVERT"
    assert versions[0]["content"] == versions[3]["content"]
    # Now PRIVATE again: bob loses the history with the memo.
    assert (await bob.get(f"/api/v1/{m['name']}/history:diff?from=1")).status_code == 404
    # A revert to what is already current writes nothing.
    r = await alice.post(f"/api/v1/{m['name']}:revert", json={"version": 4})
    assert r.status_code == 200 and r.json()["etag"] == out["etag"]


async def test_revert_cannot_do_what_a_patch_could_not(alice: Actor) -> None:
    m = await alice.memo("was public", visibility="PUBLIC")
    await alice.patch(
        f"/api/v1/{m['name']}?updateMask=content,visibility",
        json={"content": "now private", "visibility": "PRIVATE"},
    )
    r = await alice.patch(
        "/api/v1/instance/settings/ACCESS", json={"disallowPublicVisibility": True}
    )
    assert r.status_code == 200, r.text
    r = await alice.post(f"/api/v1/{m['name']}:revert", json={"version": 1})
    assert r.status_code == 403, r.text
    assert (await alice.get(f"/api/v1/{m['name']}")).json()["content"] == "now private"


async def test_a_trashed_memo_has_no_diff_and_no_revert(alice: Actor) -> None:
    m = await _three_versions(alice)
    assert (await alice.delete(f"/api/v1/{m['name']}")).status_code == 200
    assert (await alice.get(f"/api/v1/{m['name']}/history:diff?from=1")).status_code == 404
    r = await alice.post(f"/api/v1/{m['name']}:revert", json={"version": 1})
    assert r.status_code == 404


async def test_a_space_owner_may_revert_a_members_memo_a_writer_may_not(
    alice: Actor, bob: Actor
) -> None:
    """The write rule, not authorship: OWNER at the path reverts anyone's memo there;
    WRITE there reverts only one's own (decision 0020)."""
    team = (await create_space(alice, "Revert team"))["name"]
    await join(alice, team, bob)  # alice ADMIN: OWNER at share; bob: WRITE at share
    mine = (await space_memo(bob, team, content="bob v1", visibility="SPACE")).json()
    r = await bob.patch(f"/api/v1/{mine['name']}?updateMask=content", json={"content": "bob v2"})
    assert r.status_code == 200, r.text
    assert (await alice.get(f"/api/v1/{mine['name']}/history")).json()["canEdit"] is True
    r = await alice.post(f"/api/v1/{mine['name']}:revert", json={"version": 1})
    assert r.status_code == 200 and r.json()["content"] == "bob v1", r.text

    hers = (await space_memo(alice, team, content="alice v1", visibility="SPACE")).json()
    r = await alice.patch(f"/api/v1/{hers['name']}?updateMask=content", json={"content": "v2"})
    assert r.status_code == 200, r.text
    history = (await bob.get(f"/api/v1/{hers['name']}/history")).json()
    assert history["canEdit"] is False and len(history["versions"]) == 2
    r = await bob.post(f"/api/v1/{hers['name']}:revert", json={"version": 1})
    assert r.status_code == 403, r.text
    assert (await alice.get(f"/api/v1/{hers['name']}")).json()["content"] == "v2"
