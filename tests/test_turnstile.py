"""The write gate's lock (``app.db.transactions.Turnstile``, decision 0043).

The property that matters under load: writers queued behind a turn run one
after another within one pass of the event loop when their turns do not
wait on anything, instead of one per pass behind every other request's
callback (``asyncio.Lock``). And it must stay a lock: one holder, arrival
order, no barging, a cancelled or timed-out waiter leaves no one stuck.
"""

from __future__ import annotations

import asyncio
import functools

import pytest

from app.db.transactions import Turnstile


class Ticker:
    """Counts passes of the event loop: one callback re-queued per pass."""

    def __init__(self) -> None:
        self.passes = 0
        self._stop = False

    def _tick(self) -> None:
        if not self._stop:
            self.passes += 1
            asyncio.get_running_loop().call_soon(self._tick)

    def start(self) -> None:
        asyncio.get_running_loop().call_soon(self._tick)

    def stop(self) -> None:
        self._stop = True


async def _queue_writers(
    lock: Turnstile | asyncio.Lock, n: int, order: list[int], ticker: Ticker
) -> list[int]:
    """n writers queue behind a held lock; each records the pass it ran its turn in."""
    passes: list[int] = []

    async def writer(i: int) -> None:
        await lock.acquire()
        try:
            order.append(i)
            passes.append(ticker.passes)  # a turn with no await inside: one callback
        finally:
            lock.release()

    await lock.acquire()
    tasks = [asyncio.create_task(writer(i)) for i in range(n)]
    for _ in range(3):
        await asyncio.sleep(0)  # every writer is waiting now
    ticker.start()
    lock.release()
    await asyncio.gather(*tasks)
    ticker.stop()
    return passes


async def test_waiters_take_their_turns_in_one_pass_in_arrival_order() -> None:
    order: list[int] = []
    ticker = Ticker()
    passes = await _queue_writers(Turnstile(), 20, order, ticker)
    assert order == list(range(20))
    assert max(passes) - min(passes) <= 1, passes


async def test_asyncio_lock_takes_a_pass_per_waiter() -> None:
    """The baseline the turnstile replaces: one waiter per loop pass."""
    order: list[int] = []
    ticker = Ticker()
    passes = await _queue_writers(asyncio.Lock(), 20, order, ticker)
    assert order == list(range(20))
    assert max(passes) - min(passes) >= 19


async def test_a_turn_that_waits_keeps_the_others_out_and_their_order() -> None:
    lock = Turnstile()
    inside = 0
    most = 0
    order: list[int] = []

    async def writer(i: int) -> None:
        nonlocal inside, most
        await lock.acquire()
        try:
            inside += 1
            most = max(most, inside)
            order.append(i)
            await asyncio.sleep(0.001 if i % 2 else 0)  # some turns wait on I/O
            inside -= 1
        finally:
            lock.release()

    await asyncio.gather(*(writer(i) for i in range(30)))
    assert most == 1
    assert order == list(range(30))


async def _named_writer(lock: Turnstile, order: list[str], name: str) -> None:
    """A turn with no await inside: take, record ``name``, release."""
    await lock.acquire()
    order.append(name)
    lock.release()


async def test_a_newcomer_does_not_barge_past_woken_waiters() -> None:
    lock = Turnstile()
    order: list[str] = []
    writer = functools.partial(_named_writer, lock, order)

    await lock.acquire()
    queued = [asyncio.create_task(writer(f"w{i}")) for i in range(3)]
    await asyncio.sleep(0)
    lock.release()  # w0..w2 woken, none has run yet
    late = asyncio.create_task(writer("late"))
    await asyncio.gather(*queued, late)
    assert order == ["w0", "w1", "w2", "late"]


async def test_a_cancelled_waiter_passes_its_place_on() -> None:
    lock = Turnstile()
    order: list[str] = []
    writer = functools.partial(_named_writer, lock, order)

    await lock.acquire()
    first = asyncio.create_task(writer("first"))
    second = asyncio.create_task(writer("second"))
    await asyncio.sleep(0)
    lock.release()  # first is woken, then cancelled before it runs
    first.cancel()
    await asyncio.wait_for(second, 1)
    assert order == ["second"]
    assert not lock.locked() and lock.waiting == 0


async def test_a_waiter_that_times_out_leaves_the_lock_working() -> None:
    lock = Turnstile()
    await lock.acquire()
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(lock.acquire(), 0.02)
    assert lock.waiting == 0
    lock.release()
    await asyncio.wait_for(lock.acquire(), 1)
    assert lock.locked()


async def test_release_of_an_unheld_turnstile_is_a_bug() -> None:
    with pytest.raises(RuntimeError):
        Turnstile().release()
