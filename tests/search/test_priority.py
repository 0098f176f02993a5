"""The embedding thread's CPU priority (``app.search.priority``, decision 0055).

The scheduling policy is per thread on Linux, so each case runs on a thread
of its own and reads the policy of that thread while the block runs.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from app.search import priority

pytestmark = pytest.mark.skipif(
    not hasattr(os, "SCHED_IDLE"), reason="per-thread SCHED_IDLE is Linux's"
)


BASE_NICE = os.getpriority(os.PRIO_PROCESS, 0)  # CI may run the tests under `nice`


@pytest.fixture(autouse=True)
def fresh_state(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test probes the round trip anew and has its own embedding thread's state."""
    monkeypatch.setattr(priority, "_usable", None)
    monkeypatch.setattr(priority, "_bg", priority._Background())


def _on_thread(fn: Callable[[], Any]) -> Any:
    """``fn()`` on a new thread (the policy is per thread); its result or its exception."""
    out: list[Any] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            out.append(fn())
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join(30)
    if errors:
        raise errors[0]
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

    assert _on_thread(run) == (os.SCHED_OTHER, os.SCHED_OTHER, BASE_NICE)


def test_the_embedding_thread_is_idle_only_inside_the_block() -> None:
    def run() -> tuple[int, int, int, int]:
        priority.make_background()
        before = os.sched_getscheduler(0)
        with priority.native_at_idle():
            inside = os.sched_getscheduler(0)
        return before, inside, os.sched_getscheduler(0), _nice()

    before, inside, after, nice = _on_thread(run)
    assert (before, inside, after) == (os.SCHED_OTHER, os.SCHED_IDLE, os.SCHED_OTHER)
    assert nice == BASE_NICE + priority.NICE  # back to the ordinary policy, same niceness


def test_the_policy_is_restored_when_the_call_fails() -> None:
    def run() -> int:
        priority.make_background()
        with pytest.raises(RuntimeError), priority.native_at_idle():
            raise RuntimeError("the model failed")
        return os.sched_getscheduler(0)

    assert _on_thread(run) == os.SCHED_OTHER


class Clock:
    """``priority``'s clocks, moved by the test: wall time, and the time the thread
    waited for a core (its ``run_delay``)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.delay = 0.0

    def monotonic(self) -> float:
        return self.now

    def perf_counter(self) -> float:
        return self.now

    def thread_time(self) -> float:
        return 0.0

    def run_delay(self) -> float:
        return self.delay


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(priority, "time", fake)
    monkeypatch.setattr(priority, "_run_delay", fake.run_delay)
    return fake


def _run(clock: Clock, wall: float, waited: float) -> int:
    """One model run that took ``wall`` seconds, ``waited`` of them for a core; its policy."""
    with priority.native_at_idle():
        policy = os.sched_getscheduler(0)
        clock.now += wall
        clock.delay += waited
    return policy


def test_a_starved_run_holds_the_thread_at_nice_until_the_hold_ends(clock: Clock) -> None:
    """A run that waited for a core most of its time means the machine is full:
    the runs of the next HOLD_SECONDS stay at the ordinary policy."""

    def run() -> list[int]:
        priority.make_background()
        seen = [_run(clock, 1.0, 0.1)]  # got its core
        seen.append(_run(clock, 1.0, 0.9))  # starved: ran 10 % of its time
        clock.now += priority.HOLD_SECONDS - 1
        seen.append(_run(clock, 0.5, 0.0))  # held
        clock.now += 1
        seen.append(_run(clock, 1.0, 0.1))  # the hold is over
        return seen

    assert _on_thread(run) == [os.SCHED_IDLE, os.SCHED_IDLE, os.SCHED_OTHER, os.SCHED_IDLE]


def test_waiting_for_the_gil_is_not_starvation(clock: Clock) -> None:
    """A run whose wall time is mostly the wait for the GIL after the model returned
    (the event loop busy, the machine not) did not wait for a core: no hold."""

    def run() -> list[int]:
        priority.make_background()
        return [_run(clock, 1.0, 0.0), _run(clock, 1.0, 0.0)]

    assert _on_thread(run) == [os.SCHED_IDLE, os.SCHED_IDLE]


def test_starved_runs_in_a_row_double_the_hold_and_a_good_run_resets_it(clock: Clock) -> None:
    hold = priority.HOLD_SECONDS

    def run() -> list[int]:
        priority.make_background()
        seen = []
        seen.append(_run(clock, 1.0, 1.0))  # starved: held for `hold`
        clock.now += hold
        seen.append(_run(clock, 1.0, 1.0))  # starved again: held for 2 * hold
        clock.now += 2 * hold - 1
        seen.append(_run(clock, 0.1, 0.0))  # still held
        clock.now += 1
        seen.append(_run(clock, 1.0, 0.5))  # not starved: the hold is back to `hold`
        seen.append(_run(clock, 1.0, 1.0))  # starved: held for `hold` only
        clock.now += hold
        seen.append(_run(clock, 1.0, 0.0))
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
            _run(clock, 1.0, 1.0)
            clock.now += priority.MAX_HOLD_SECONDS
        return _run(clock, 1.0, 0.0)

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

    assert asyncio.run(main()) == (os.SCHED_IDLE, BASE_NICE + priority.NICE)


def test_a_starved_run_is_moved_to_nice_while_it_runs() -> None:
    """``rescue`` (``run_low``'s watchdog) moves the embedding thread off SCHED_IDLE
    from another thread, mid-run, and starts the hold."""
    inside, moved = threading.Event(), threading.Event()

    def run() -> tuple[int, int, bool]:
        priority.make_background()
        with priority.native_at_idle():
            before = os.sched_getscheduler(0)
            inside.set()
            moved.wait(10)
            after = os.sched_getscheduler(0)
        return before, after, priority._bg.hold_until > time.monotonic()

    result: list[Any] = []
    thread = threading.Thread(target=lambda: result.append(run()))
    thread.start()
    assert inside.wait(10)
    priority.rescue()
    moved.set()
    thread.join(10)
    assert result == [(os.SCHED_IDLE, os.SCHED_OTHER, True)]


def test_no_way_back_means_never_idle(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where leaving SCHED_IDLE is refused (no CAP_SYS_NICE, RLIMIT_NICE 0), the
    thread must never enter it: it would be stranded there."""
    real = os.sched_setscheduler

    def refusing(tid: int, policy: int, param: Any) -> None:
        if policy == os.SCHED_OTHER and os.sched_getscheduler(tid) == os.SCHED_IDLE:
            raise PermissionError(1, "Operation not permitted")
        real(tid, policy, param)

    monkeypatch.setattr(priority.os, "sched_setscheduler", refusing)

    def run() -> tuple[int, int]:
        priority.make_background()
        with priority.native_at_idle():
            inside = os.sched_getscheduler(0)
        return inside, os.sched_getscheduler(0)

    assert _on_thread(run) == (os.SCHED_OTHER, os.SCHED_OTHER)
    assert priority.idle_policy_usable() is False


def test_a_refused_return_disables_the_idle_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Should leaving SCHED_IDLE fail after the probe allowed it, no later run enters it."""
    monkeypatch.setattr(priority, "_usable", True)
    real = os.sched_setscheduler
    refuse = [True]

    def refusing_once(tid: int, policy: int, param: Any) -> None:
        if policy == os.SCHED_OTHER and refuse[0]:
            refuse[0] = False
            raise PermissionError(1, "Operation not permitted")
        real(tid, policy, param)

    monkeypatch.setattr(priority.os, "sched_setscheduler", refusing_once)

    def run() -> int:
        priority.make_background()
        with priority.native_at_idle():
            pass
        real(0, os.SCHED_OTHER, os.sched_param(0))  # this test's thread, put back by hand
        with priority.native_at_idle():
            return os.sched_getscheduler(0)

    assert _on_thread(run) == os.SCHED_OTHER
    assert priority.idle_policy_usable() is False


CHILD = """
import os, sys, threading
sys.path.insert(0, sys.argv[1])
import priority
seen = []
def run():
    priority.make_background()
    with priority.native_at_idle():
        seen.append(os.sched_getscheduler(0))
    seen.append(os.sched_getscheduler(0))
t = threading.Thread(target=run); t.start(); t.join()
print(priority.idle_policy_usable(), seen)
"""

# The child imports only the module and the standard library, so that it runs as
# `nobody` wherever the checkout and its virtual environment are (a home directory
# `nobody` cannot read included).
STRUCTLOG_STUB = """
class _Logger:
    def info(self, *args, **kwargs):
        pass
    error = info
def get_logger(*args):
    return _Logger()
"""


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root to drop to nobody"
)
def test_as_an_unprivileged_user_the_thread_stays_at_nice() -> None:
    """The real kernel rule, as the Dockerfile's non-root user meets it."""
    work = pathlib.Path(tempfile.mkdtemp(prefix="daybook-priority-"))
    try:
        work.chmod(0o755)
        shutil.copy(priority.__file__, work / "priority.py")
        (work / "structlog.py").write_text(STRUCTLOG_STUB)
        done = subprocess.run(
            [
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                os.path.realpath(sys.executable),
                "-I",
                "-c",
                CHILD,
                str(work),
            ],
            cwd=work,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    assert done.returncode == 0, done.stderr[-2000:]
    usable, seen = done.stdout.strip().splitlines()[-1].split(" ", 1)
    assert usable == "False"
    assert seen == f"[{os.SCHED_OTHER}, {os.SCHED_OTHER}]"
