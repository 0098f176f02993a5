"""Saved views: CEL filters validated on save, private to their owner."""

from __future__ import annotations

from tests.conftest import Actor


async def test_view_lifecycle_and_use(alice: Actor) -> None:
    r = await alice.post(
        "/api/v1/users/alice/views", json={"title": "Work", "filter": '"work" in tags'}
    )
    assert r.status_code == 200, r.text
    view = r.json()
    assert view["name"].startswith("users/alice/views/") and view["filter"] == '"work" in tags'
    work = await alice.memo("ship #work")
    await alice.memo("rest #home")
    listed = (await alice.get(f"/api/v1/memos?filter={view['filter']}")).json()["memos"]
    assert [m["name"] for m in listed] == [work["name"]]
    r = await alice.patch(f"/api/v1/{view['name']}", json={"title": "Job"})
    assert (
        r.status_code == 200 and r.json()["title"] == "Job" and r.json()["filter"] == view["filter"]
    )
    assert [v["title"] for v in (await alice.get("/api/v1/users/alice/views")).json()["views"]] == [
        "Job"
    ]
    assert (await alice.delete(f"/api/v1/{view['name']}")).status_code == 200
    assert (await alice.get("/api/v1/users/alice/views")).json()["views"] == []


async def test_invalid_filter_refused_on_save_with_offset(alice: Actor) -> None:
    r = await alice.post("/api/v1/users/alice/views", json={"title": "Bad", "filter": 'tag == "x"'})
    assert r.status_code == 400
    message = r.json()["message"]
    assert message.startswith("filter:") and "offset" in message
    r = await alice.post("/api/v1/users/alice/views", json={"title": "x", "filter": "pinned"})
    view = r.json()
    r = await alice.patch(f"/api/v1/{view['name']}", json={"filter": "pinned +"})
    assert r.status_code == 400
    assert (await alice.get("/api/v1/users/alice/views")).json()["views"][0]["filter"] == "pinned"


async def test_views_are_private(alice: Actor, bob: Actor) -> None:
    view = (
        await alice.post("/api/v1/users/alice/views", json={"title": "t", "filter": "pinned"})
    ).json()
    assert (await bob.get("/api/v1/users/alice/views")).status_code == 404
    assert (await bob.patch(f"/api/v1/{view['name']}", json={"title": "mine"})).status_code == 404
    assert (await bob.delete(f"/api/v1/{view['name']}")).status_code == 404
    # bob's own id space does not reach alice's row either
    assert (
        await bob.delete(f"/api/v1/users/bob/views/{view['name'].rsplit('/', 1)[1]}")
    ).status_code == 404
    assert len((await alice.get("/api/v1/users/alice/views")).json()["views"]) == 1
