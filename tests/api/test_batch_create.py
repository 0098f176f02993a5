"""``POST /api/v1/memos:batchCreate``: statuses, all-or-nothing, and no existence oracle."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from app.db.engine import create_engine
from app.db.schema import memo, memo_event
from app.memos.batch import MAX_BATCH
from tests.conftest import Actor
from tests.related.helpers import restricted_key
from tests.spaces import conftest as spaces
from tests.spaces.conftest import Team

MODES = ("ERROR", "REPLACE", "IGNORE")
carol, team = spaces.carol, spaces.team  # the space fixtures, reused here


async def batch(
    actor: Actor, memos: list[dict[str, Any]], on_conflict: str | None = None, **kw: Any
) -> Any:
    body: dict[str, Any] = {"memos": memos}
    if on_conflict is not None:
        body["onConflict"] = on_conflict
    return await actor.post("/api/v1/memos:batchCreate", json=body, **kw)


async def named(actor: Actor, uid: str, content: str, **fields: Any) -> dict[str, Any]:
    r = await actor.post(f"/api/v1/memos?memoId={uid}", json={"content": content, **fields})
    assert r.status_code == 200, r.text
    return dict(r.json())


async def memo_rows(database_url: str) -> dict[str, tuple[Any, ...]]:
    """Every memo row (uid → all columns) and its event count, read behind the API's back."""
    engine = create_engine(database_url)
    async with engine.connect() as conn:
        rows = (await conn.execute(sa.select(memo))).all()
        events = dict(
            (
                await conn.execute(
                    sa.select(memo_event.c.memo_id, sa.func.count()).group_by(memo_event.c.memo_id)
                )
            ).all()
        )
    await engine.dispose()
    return {r.uid: (*r, events.get(r.id, 0)) for r in rows}


async def test_statuses_in_input_order(alice: Actor) -> None:
    await named(alice, "a-1", "old a")
    await named(alice, "b-1", "old b")
    r = await batch(
        alice,
        [
            {"content": "new", "memoId": "n-1"},
            {"content": "replaced #t", "memoId": "a-1", "visibility": "PROTECTED"},
            {"content": "no id"},
            {"content": "by name", "name": "memos/b-1", "pinned": True},
        ],
        "REPLACE",
    )
    assert r.status_code == 200, r.text
    results = r.json()["results"]
    assert [x["status"] for x in results] == ["INSERTED", "UPDATED", "INSERTED", "UPDATED"]
    assert [x["name"] for x in results[:2]] + [results[3]["name"]] == [
        "memos/n-1",
        "memos/a-1",
        "memos/b-1",
    ]
    assert results[2]["name"].startswith("memos/")
    a = (await alice.get("/api/v1/memos/a-1")).json()
    assert (a["content"], a["visibility"], a["tags"]) == ("replaced #t", "PROTECTED", ["t"])
    b = (await alice.get("/api/v1/memos/b-1")).json()
    assert (b["content"], b["pinned"]) == ("by name", True)

    r = await batch(
        alice,
        [{"content": "ignored", "memoId": "a-1"}, {"content": "x", "memoId": "n-2"}],
        "IGNORE",
    )
    assert [x["status"] for x in r.json()["results"]] == ["SKIPPED", "INSERTED"]
    assert (await alice.get("/api/v1/memos/a-1")).json()["content"] == "replaced #t"


async def test_replace_makes_the_memo_match_the_input(alice: Actor) -> None:
    """Fields the input leaves out take their create defaults; an import re-run converges."""
    await named(alice, "r-1", "x", visibility="PUBLIC", pinned=True, state="ARCHIVED")
    before = (await alice.get("/api/v1/memos/r-1")).json()
    r = await batch(alice, [{"memoId": "r-1", "content": "y"}], "REPLACE")
    assert r.json()["results"] == [{"name": "memos/r-1", "status": "UPDATED"}]
    after = (await alice.get("/api/v1/memos/r-1")).json()
    assert (after["content"], after["visibility"], after["pinned"], after["state"]) == (
        "y",
        "PRIVATE",
        False,
        "NORMAL",
    )
    assert after["createTime"] == before["createTime"]  # kept unless the input sets it
    again = await batch(alice, [{"memoId": "r-1", "content": "y"}], "REPLACE")
    assert again.json()["results"][0]["status"] == "UPDATED"
    assert (await alice.get("/api/v1/memos/r-1")).json()["etag"] == after["etag"]  # no-op


async def test_error_mode_conflict_writes_nothing(alice: Actor, database_url: str) -> None:
    await named(alice, "e-1", "exists")
    before = await memo_rows(database_url)
    r = await batch(alice, [{"content": "n", "memoId": "n-1"}, {"content": "y", "memoId": "e-1"}])
    assert r.status_code == 409 and r.json()["code"] == 6
    assert "memos[1]" in r.json()["message"]
    assert await memo_rows(database_url) == before


@pytest.mark.parametrize(
    "bad",
    [
        {"content": "x" * (8 * 1024 + 1)},
        {"content": "x", "visibility": "SECRET"},
        {"content": "x", "state": "GONE"},
        {"content": "x", "memoId": "-bad-"},
        {"content": "x", "memoId": "m-0"},  # repeats item 0
        {"content": "x", "memoId": "a", "name": "memos/b"},
        {"content": "x", "createTime": "yesterday"},
        {"content": "x", "visibility": "SPACE"},
    ],
)
async def test_invalid_item_7_of_10_writes_nothing(
    alice: Actor, database_url: str, bad: dict[str, Any]
) -> None:
    items = [{"content": f"ok {i}", "memoId": f"m-{i}"} for i in range(10)]
    items[7] = bad
    r = await batch(alice, items)
    assert r.status_code == 400, r.text
    assert r.json()["message"].startswith("memos[7]")
    assert await memo_rows(database_url) == {}


async def test_read_key_is_refused_and_writes_nothing(alice: Actor, database_url: str) -> None:
    key = await restricted_key(alice, scope="READ", personal="AUDIENCE")
    for mode in MODES:
        r = await batch(alice, [{"content": "x", "memoId": "k-1"}], mode, headers=key)
        assert r.status_code == 403, r.text
    assert await memo_rows(database_url) == {}


async def test_batch_limits(alice: Actor, database_url: str) -> None:
    too_many = [{"content": "x"} for _ in range(MAX_BATCH + 1)]
    r = await batch(alice, too_many)
    assert r.status_code == 400 and r.json()["code"] == 3
    assert (await batch(alice, [])).status_code == 400
    assert (await batch(alice, [{"content": "x"}], "MERGE")).status_code == 400
    assert await memo_rows(database_url) == {}


async def test_anonymous_is_refused(alice: Actor, client: Any) -> None:
    r = await client.post("/api/v1/memos:batchCreate", json={"memos": [{"content": "x"}]})
    assert r.status_code == 401


async def test_hidden_uid_is_indistinguishable_and_untouched(
    alice: Actor, bob: Actor, database_url: str
) -> None:
    """Bob learns nothing from alice's PRIVATE memo id that he would not learn from her
    PROTECTED one (which he can see but not write), and neither memo changes.

    The id being taken is observable in any case (a single create answers 409), so
    the contract is: the hidden and the visible-but-unwritable cases answer alike.
    """
    await named(alice, "hidden-1", "secret")
    await named(alice, "shown-1", "visible", visibility="PROTECTED")
    assert (await bob.get("/api/v1/memos/hidden-1")).status_code == 404
    assert (await bob.get("/api/v1/memos/shown-1")).status_code == 200
    before = await memo_rows(database_url)
    for mode in MODES:
        answers = []
        for uid in ("hidden-1", "shown-1"):
            r = await batch(
                bob,
                [{"content": "bob's", "memoId": "bob-1"}, {"content": "overwrite", "memoId": uid}],
                mode,
            )
            answers.append(
                (r.status_code, r.json()["code"], r.json()["message"].replace(uid, "ID"))
            )
        assert answers[0] == answers[1], (mode, answers)
        assert answers[0][:2] == (409, 6)
        assert "secret" not in answers[0][2] and "visible" not in answers[0][2]
    assert await memo_rows(database_url) == before  # nothing of bob's either: all or nothing


async def test_hidden_uid_does_not_change_validation_errors(alice: Actor, bob: Actor) -> None:
    """Validation runs before the lookup: a refused input fails the same way for any id."""
    await named(alice, "hidden-2", "secret")
    key = await restricted_key(bob, scope="READ", personal="AUDIENCE")
    for uid in ("hidden-2", "free-2"):
        r = await batch(bob, [{"content": "x", "memoId": uid}], "REPLACE", headers=key)
        assert r.status_code == 403
        r = await batch(bob, [{"content": "x", "memoId": uid, "visibility": "NOPE"}], "REPLACE")
        assert r.status_code == 400 and uid not in r.json()["message"]


async def test_other_users_comment_id_is_unavailable(alice: Actor, bob: Actor) -> None:
    parent = await alice.memo("parent", visibility="PROTECTED")
    r = await bob.post(f"/api/v1/{parent['name']}/comments?memoId=c-1", json={"content": "c"})
    assert r.status_code == 200, r.text
    r = await batch(bob, [{"content": "x", "memoId": "c-1"}], "IGNORE")
    assert r.status_code == 409 and "unavailable" in r.json()["message"]


async def test_space_placement_is_checked_per_item(
    alice: Actor, bob: Actor, carol: Actor, team: Team, database_url: str
) -> None:
    items = [{"content": "here", "space": team.name, "tree": "share", "memoId": "s-1"}]
    r = await batch(bob, items)
    assert r.status_code == 200 and r.json()["results"][0]["status"] == "INSERTED"
    assert (await alice.get("/api/v1/memos/s-1")).json()["space"] == team.name
    r = await batch(carol, [{"content": "ok", "memoId": "c-9"}, {**items[0], "memoId": "s-2"}])
    assert r.status_code == 404 and r.json()["message"].startswith("memos[1]")
    r = await batch(bob, [{"content": "x", "space": team.name, "memoId": "s-3"}])
    assert r.status_code == 400  # the path is never implied
    assert set(await memo_rows(database_url)) == {"s-1"}


async def test_route_is_not_a_memo_named_batchcreate(alice: Actor) -> None:
    r = await alice.get("/api/v1/openapi.json")
    paths = r.json()["paths"]
    assert "post" in paths["/api/v1/memos:batchCreate"]
    assert "get" in paths["/api/v1/memos/{memo}/history"]
