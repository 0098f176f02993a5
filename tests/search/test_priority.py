"""The embedding thread's CPU priority (``app.search.priority``, decision 0055).

The scheduling policy is per thread on Linux, so each case runs on a thread
of its own and reads the policy of that thread while the block runs.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

import pytest

from app.search import priority

pytestmark = pytest.mark.skipif(
    not hasattr(os, "SCHED_IDLE"), reason="per-thread SCHED_IDLE is Linux's"
)


def _on_thread(fn: Callable[[], Any]) -> Any:
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(fn()))
    thread.start()
    thread.join(30)
    return out[0]


def _nice() -> int:
    with open(f"/proc/self/task/{threading.get_native_id()}/stat") as f:
        stat = f.read()
    return int(stat.rsplit(")", 1)[1].split()[16])


def test_a_request_thread_is_never_changed() -> None:
    def run() -> tuple[int, int, int]:
        with priority.native_at_idle():
            inside = os.sched_getscheduler(0)
        return inside, os.sched_getscheduler(0), _nice()

    assert _on_thread(run) == (os.SCHED_OTHER, os.SCHED_OTHER, 0)


def test_the_embedding_thread_is_idle_only_inside_the_block() -> None:
    def run() -> tuple[int, int, int, int]:
        priority.make_background()
        before = os.sched_getscheduler(0)
        with priority.native_at_idle():
            inside = os.sched_getscheduler(0)
        return before, inside, os.sched_getscheduler(0), _nice()

    before, inside, after, nice = _on_thread(run)
    assert (before, inside, after) == (os.SCHED_OTHER, os.SCHED_IDLE, os.SCHED_OTHER)
    assert nice == priority.NICE  # back to the ordinary policy at the same niceness


def test_the_policy_is_restored_when_the_call_fails() -> None:
    def run() -> int:
        priority.make_background()
        with pytest.raises(RuntimeError), priority.native_at_idle():
            raise RuntimeError("the model failed")
        return os.sched_getscheduler(0)

    assert _on_thread(run) == os.SCHED_OTHER


class Clock:
    """``priority``'s clocks, moved by the test: wall time and the thread's CPU time."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.cpu = 0.0

    def monotonic(self) -> float:
        return self.now

    def perf_counter(self) -> float:
        return self.now

    def thread_time(self) -> float:
        return self.cpu


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(priority, "time", fake)
    return fake


def _run(clock: Clock, wall: float, cpu: float) -> int:
    """One model run that took ``wall`` seconds and got ``cpu`` of them; its policy."""
    with priority.native_at_idle():
        policy = os.sched_getscheduler(0)
        clock.now += wall
        clock.cpu += cpu
    return policy


def test_a_starved_run_holds_the_thread_at_nice_until_the_hold_ends(clock: Clock) -> None:
    """A run that got less than STARVED_SHARE of a core means the machine is full:
    the runs of the next HOLD_SECONDS stay at the ordinary policy."""

    def run() -> list[int]:
        priority.make_background()
        seen = [_run(clock, 1.0, 0.9)]  # got its core
        seen.append(_run(clock, 1.0, 0.1))  # starved: 10 % of a core
        clock.now += priority.HOLD_SECONDS - 1
        seen.append(_run(clock, 0.5, 0.5))  # held
        clock.now += 1
        seen.append(_run(clock, 1.0, 0.9))  # the hold is over
        return seen

    assert _on_thread(run) == [os.SCHED_IDLE, os.SCHED_IDLE, os.SCHED_OTHER, os.SCHED_IDLE]


def test_starved_runs_in_a_row_double_the_hold_and_a_good_run_resets_it(clock: Clock) -> None:
    hold = priority.HOLD_SECONDS

    def run() -> list[int]:
        priority.make_background()
        seen = []
        seen.append(_run(clock, 1.0, 0.0))  # starved: held for `hold`
        clock.now += hold
        seen.append(_run(clock, 1.0, 0.0))  # starved again: held for 2 * hold
        clock.now += 2 * hold - 1
        seen.append(_run(clock, 0.1, 0.1))  # still held
        clock.now += 1
        seen.append(_run(clock, 1.0, 0.5))  # not starved: the hold is back to `hold`
        seen.append(_run(clock, 1.0, 0.0))  # starved: held for `hold` only
        clock.now += hold
        seen.append(_run(clock, 1.0, 1.0))
        return seen

    assert _on_thread(run) == [
        os.SCHED_IDLE,
        os.SCHED_IDLE,
        os.SCHED_OTHER,
        os.SCHED_IDLE,
        os.SCHED_IDLE,
        os.SCHED_IDLE,
    ]


def test_the_hold_never_exceeds_its_maximum(clock: Clock) -> None:
    def run() -> int:
        priority.make_background()
        for _ in range(20):  # starved every time it tries
            _run(clock, 1.0, 0.0)
            clock.now += priority.MAX_HOLD_SECONDS
        return _run(clock, 1.0, 1.0)

    assert _on_thread(run) == os.SCHED_IDLE


def test_the_embedding_worker_thread_is_marked() -> None:
    """``run_low`` runs the worker's batches on a thread made by ``make_background``."""
    import asyncio

    from app.search.worker import run_low

    def probe() -> tuple[int, int]:
        with priority.native_at_idle():
            inside = os.sched_getscheduler(0)
        return inside, _nice()

    async def main() -> tuple[int, int]:
        # The thread outlives tests: clear a hold an earlier test's starved run left.
        await run_low(setattr, priority._local, "hold_until", 0.0)
        return await run_low(probe)

    assert asyncio.run(main()) == (os.SCHED_IDLE, priority.NICE)
