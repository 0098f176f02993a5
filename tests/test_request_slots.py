"""Request slots (``app.db.slots``, decision 0044): a bound, writes first, nothing leaked."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from app.db.slots import SLOTS, RequestSlots
from app.db.transactions import TxKind
from app.errors import Unauthenticated, Unavailable
from app.server import create_app
from app.settings import Settings
from tests.conftest import sign_up


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_never_more_than_the_slots_at_once() -> None:
    slots = RequestSlots(3)
    inside = most = 0

    async def request(kind: TxKind) -> None:
        nonlocal inside, most
        async with slots.slot(kind):
            inside += 1
            most = max(most, inside)
            await asyncio.sleep(0.001)
            inside -= 1

    await asyncio.gather(*(request(TxKind.READ if i % 3 else TxKind.WRITE) for i in range(40)))
    assert most == 3
    assert slots.waiting == 0 and slots._busy == 0


async def test_a_free_slot_goes_to_the_oldest_write_before_any_read() -> None:
    slots = RequestSlots(1)
    order: list[str] = []
    await slots.acquire(TxKind.READ)  # the one slot is taken

    async def request(name: str, kind: TxKind) -> None:
        async with slots.slot(kind):
            order.append(name)

    tasks = []
    for name, kind in [
        ("r1", TxKind.READ),
        ("r2", TxKind.READ),
        ("w1", TxKind.WRITE),
        ("r3", TxKind.READ),
        ("w2", TxKind.WRITE),
    ]:
        tasks.append(asyncio.create_task(request(name, kind)))
        await _settle()  # arrival order as listed
    slots.release()
    await asyncio.gather(*tasks)
    assert order == ["w1", "w2", "r1", "r2", "r3"]


async def test_a_newcomer_does_not_take_a_slot_someone_waits_for() -> None:
    slots = RequestSlots(1)
    await slots.acquire(TxKind.READ)
    waiter = asyncio.create_task(slots.acquire(TxKind.READ))
    await _settle()
    slots.release()  # handed to the waiter, which has not run yet
    newcomer = asyncio.create_task(slots.acquire(TxKind.WRITE))
    await _settle()
    assert waiter.done() and not newcomer.done()
    slots.release()
    await asyncio.wait_for(newcomer, 1)
    slots.release()
    assert slots._busy == 0


async def test_a_client_that_leaves_while_waiting_leaks_nothing() -> None:
    slots = RequestSlots(1)
    await slots.acquire(TxKind.READ)
    gone = asyncio.create_task(slots.acquire(TxKind.WRITE))
    await _settle()
    gone.cancel()
    with pytest.raises(asyncio.CancelledError):
        await gone
    assert slots.waiting == 0
    slots.release()
    assert slots._busy == 0
    await asyncio.wait_for(slots.acquire(TxKind.READ), 1)  # the slot is free, not lost


async def test_a_slot_handed_to_a_client_that_left_is_passed_on() -> None:
    slots = RequestSlots(1)
    await slots.acquire(TxKind.READ)
    gone = asyncio.create_task(slots.acquire(TxKind.WRITE))
    behind = asyncio.create_task(slots.acquire(TxKind.READ))
    await _settle()
    slots.release()  # handed to `gone`...
    gone.cancel()  # ...which is cancelled before it runs
    with pytest.raises(asyncio.CancelledError):
        await gone
    await asyncio.wait_for(behind, 1)  # passed on, not lost
    slots.release()
    assert slots._busy == 0


async def test_a_request_that_waits_past_the_budget_gets_503_and_leaks_nothing() -> None:
    from app.db.slots import ServerBusy

    slots = RequestSlots(1, wait=0.02)
    await slots.acquire(TxKind.READ)
    with pytest.raises(ServerBusy) as caught:
        await slots.acquire(TxKind.WRITE)
    assert caught.value.status == 503 and caught.value.retry_after == 1
    assert slots.waiting == 0
    slots.release()
    assert slots._busy == 0


async def test_a_dependency_failing_after_the_connection_gives_the_slot_back(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The access settings are read after ``provide_request_context`` has taken its
    slot and opened its transaction, before it yields: when the read raises (a
    database outage), the provider's own exit stack gives the slot and the
    connection back, at once and without the garbage collector. (A dependency
    failing after it yielded: the test below.)"""
    app = create_app(settings)
    failures = 0

    async def outage(*_: Any) -> Any:
        nonlocal failures
        failures += 1
        raise Unavailable("the database is unreachable")

    gc.disable()  # nothing may depend on the collector
    try:
        async with AsyncTestClient(app=app) as c:
            await c.get("/healthz")
            monkeypatch.setattr("app.deps.load_access", outage)
            for _ in range(SLOTS + 4):  # anonymous: the caller's statement did not read them
                r = await c.get("/api/v1/memos")
                assert r.status_code == 503, r.text
                assert app.state.slots._busy == 0 and app.state.slots.waiting == 0
            assert app.state.engine.pool.checkedout() == 0
            monkeypatch.undo()
            r = await c.get("/api/v1/memos")  # the instance's own answer, not the outage
            assert r.status_code == 401, r.text
            assert "sign in" in r.json()["message"]
    finally:
        gc.enable()
    assert failures == SLOTS + 4


def _all_given_back(app: Any) -> None:
    assert app.state.slots._busy == 0 and app.state.slots.waiting == 0
    assert app.state.engine.pool.checkedout() == 0


async def test_a_dependency_failing_after_the_context_yielded_gives_the_slot_back(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``space_ctx`` is resolved after ``ctx`` has yielded. When it raises,
    Litestar never resumes the context's generator (its cleanup group is
    entered only once every dependency is resolved): ``close_abandoned_db``
    must give the slot, the connection and a write's turn back when the
    request ends, not the cyclic garbage collector."""
    app = create_app(settings)

    def refuse(*_: Any) -> Any:
        raise Unauthenticated("refused by the test")

    gc.disable()  # nothing may depend on the collector
    try:
        async with AsyncTestClient(app=app) as c:
            alice = await sign_up(c, "alice")
            monkeypatch.setattr("app.spaces.routes.SpaceContext", refuse)
            for _ in range(SLOTS + 2):
                r = await alice.get("/api/v1/spaces")
                assert r.status_code == 401 and "refused by the test" in r.text, r.text
                _all_given_back(app)
                r = await alice.post("/api/v1/spaces", json={"title": "x"})
                assert r.status_code == 401, r.text
                _all_given_back(app)
            monkeypatch.undo()
            r = await alice.post("/api/v1/memos", json={"content": "after"})  # the turn is free
            assert r.status_code == 200, r.text
    finally:
        gc.enable()


async def test_a_request_failing_after_its_context_leaks_nothing(settings: Settings) -> None:
    """A bad parameter (validated after ``ctx``), an error in a read handler, a
    write refused after its first statement, an anonymous write: each gives its
    slot, connection and write turn back through the context's own cleanup."""
    app = create_app(settings)
    gc.disable()
    try:
        async with AsyncTestClient(app=app) as c:
            alice = await sign_up(c, "alice")
            await alice.post("/api/v1/memos", json={"content": "x"}, params={"memoId": "dup"})
            for _ in range(SLOTS + 2):
                r = await c.get("/api/v1/memos", params={"pageSize": "x"})
                assert r.status_code == 400, r.text
                _all_given_back(app)
                r = await alice.get("/api/v1/memos", params={"filter": "((("})
                assert r.status_code == 400, r.text
                _all_given_back(app)
                r = await alice.post(
                    "/api/v1/memos", json={"content": "x"}, params={"memoId": "a" * 100}
                )
                assert r.status_code == 400, r.text
                _all_given_back(app)
                r = await alice.post(
                    "/api/v1/memos", json={"content": "x"}, params={"memoId": "dup"}
                )
                assert r.status_code == 409, r.text
                _all_given_back(app)
                r = await c.post(
                    "/api/v1/auth/signin",
                    json={"passwordCredentials": {"username": "alice", "password": "wrong"}},
                )
                assert r.status_code == 401, r.text
                _all_given_back(app)
            r = await alice.post("/api/v1/memos", json={"content": "after"})
            assert r.status_code == 200, r.text
    finally:
        gc.enable()
