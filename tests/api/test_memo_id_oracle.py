"""Issue 13 item 20 (decision 0023): a chosen memo id held by a memo the caller
cannot read answers one generic 409, and probing ids that way is throttled."""

from __future__ import annotations

from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from tests.conftest import Actor


@pytest.fixture(autouse=True)
def frozen_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Back-off is in seconds: a frozen clock keeps the outcomes exact on a slow machine."""
    monkeypatch.setattr("time.time", lambda: 1_900_000_000.5)


async def create(actor: Actor, uid: str, content: str = "mine") -> Any:
    return await actor.post(f"/api/v1/memos?memoId={uid}", json={"content": content})


async def test_a_hidden_holder_is_unavailable_not_described(alice: Actor, bob: Actor) -> None:
    assert (await create(alice, "layoffs-2027", "secret plan")).status_code == 200
    assert (await alice.memo("x")) and (
        await alice.post(
            "/api/v1/memos?memoId=team-lunch", json={"content": "menu", "visibility": "PROTECTED"}
        )
    ).status_code == 200
    hidden = await create(bob, "layoffs-2027")
    assert hidden.status_code == 409 and hidden.json()["code"] == 6
    assert hidden.json()["message"] == "memo id 'layoffs-2027' is unavailable"
    # A holder bob can read anyway may be named as such; it tells him nothing new.
    shown = await create(bob, "team-lunch")
    assert shown.status_code == 409 and "already exists" in shown.json()["message"]
    # Comments with a chosen id follow the same rule.
    parent = await alice.memo("parent", visibility="PROTECTED")
    r = await bob.post(
        f"/api/v1/{parent['name']}/comments?commentId=layoffs-2027", json={"content": "c"}
    )
    assert r.status_code == 409 and r.json()["message"] == hidden.json()["message"]
    assert (await alice.get("/api/v1/memos/layoffs-2027")).json()["content"] == "secret plan"


async def test_probing_chosen_ids_is_throttled_per_user(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor
) -> None:
    for i in range(3):
        assert (await create(alice, f"secret-{i}")).status_code == 200
    codes = [(await create(bob, f"secret-{i % 3}")).status_code for i in range(20)]
    assert codes == [409] * 20
    # Now any chosen id waits, taken or free, so the answer carries no bit...
    for uid in ("secret-0", "free-id-1"):
        r = await create(bob, uid)
        assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1, r.text
    r = await bob.post(
        "/api/v1/memos:batchCreate",
        json={"memos": [{"content": "x", "memoId": "free-id-2"}], "onConflict": "IGNORE"},
    )
    assert r.status_code == 429
    # ...while generated ids, and other users, are unaffected.
    assert (await bob.post("/api/v1/memos", json={"content": "fine"})).status_code == 200
    assert (await create(alice, "free-id-3")).status_code == 200


async def test_batch_unavailable_answers_count_too(alice: Actor, bob: Actor) -> None:
    assert (await create(alice, "hidden-b")).status_code == 200
    for _ in range(20):
        r = await bob.post(
            "/api/v1/memos:batchCreate",
            json={"memos": [{"content": "x", "memoId": "hidden-b"}], "onConflict": "IGNORE"},
        )
        assert r.status_code == 409 and "unavailable" in r.json()["message"]
    assert (await create(bob, "free-id-4")).status_code == 429
