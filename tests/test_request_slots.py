"""Request slots (``app.db.slots``, decision 0044): a bound, writes first, nothing leaked."""

from __future__ import annotations

import asyncio

import pytest

from app.db.slots import RequestSlots
from app.db.transactions import TxKind


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
