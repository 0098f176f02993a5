"""The Markdown pool holds no process while idle, and keeps its bound when it starts again.

Decision 0052: the pool (two workers and their forkserver, about 50 MB PSS
per server process, and multiprocessing's resource tracker) used to start
with the app and live as long as it; now it starts on the first parse past
``INLINE_BYTES`` and stops, helpers included, after ``IDLE_SECONDS``
without a parse.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import errno
import multiprocessing
import multiprocessing.resource_tracker
import os
import pathlib
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import pebble
import pytest

from app.memos import parse_pool
from app.memos.parse_pool import parse_memo
from tests.support import LagProbe

FINE = "**fine** " + "x" * 400  # past INLINE_BYTES: parsed in a worker
HOSTILE = "![" * 20_000  # markdown-it takes seconds on it


def _children(pid: int) -> list[int]:
    """Every child of ``pid``, whichever of its threads started it."""
    out: list[int] = []
    for task in pathlib.Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):  # the thread ended meanwhile
            out += [int(c) for c in (task / "children").read_text().split()]
    return out


def _cmdline(pid: int) -> str:
    try:
        return pathlib.Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")
    except OSError:
        return ""


def markdown_processes() -> list[int]:
    """This process's forkserver, the pool workers forked from it, and its resource tracker."""
    helpers = [p for p in _children(os.getpid()) if "from multiprocessing." in _cmdline(p)]
    return helpers + [w for h in helpers for w in _children(h)]


def idle_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name == "markdown-idle"]


async def wait_until(check: Any, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        await asyncio.sleep(0.05)
    return bool(check())


@pytest.fixture
def fresh_pool() -> Iterator[None]:
    parse_pool.shutdown()
    parse_pool._stop_resource_tracker()  # a test before may have left one
    yield
    parse_pool.shutdown()


async def test_a_short_parse_starts_no_process(fresh_pool: None) -> None:
    parsed = await parse_memo("**short**")
    assert "<strong>short</strong>" in parsed.html
    assert markdown_processes() == []


async def test_the_pool_stops_when_idle_and_a_later_parse_starts_it_again(
    fresh_pool: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parse_pool, "IDLE_SECONDS", 0.5)
    assert markdown_processes() == []
    parsed = await parse_memo(FINE)
    assert not parsed.degraded and "<strong>fine</strong>" in parsed.html
    running = markdown_processes()
    assert len(running) == 2 + parse_pool.WORKERS, running  # tracker, forkserver, workers
    assert idle_threads() == ["markdown-idle"]

    assert await wait_until(lambda: markdown_processes() == [], 10), markdown_processes()
    assert all(_cmdline(p) == "" for p in running)  # the workers exited too
    assert await wait_until(lambda: idle_threads() == [], 5)

    again = await parse_memo(FINE + "y")
    assert not again.degraded and "<strong>fine</strong>" in again.html
    assert len(markdown_processes()) == 2 + parse_pool.WORKERS


async def test_a_parse_longer_than_the_idle_period_is_not_cut(
    fresh_pool: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parse_pool, "IDLE_SECONDS", 0.1)
    slow = "![" * 4093  # about half a second: well past the idle period
    await parse_memo(FINE)  # the pool runs, idle from here
    parsed = await parse_memo(slow, seconds=30)
    assert not parsed.degraded
    assert await wait_until(lambda: markdown_processes() == [], 10)


async def test_a_hostile_parse_on_a_cold_pool_is_still_cut_off(fresh_pool: None) -> None:
    started = time.perf_counter()
    parsed = await parse_memo(HOSTILE, seconds=0.2)
    took = time.perf_counter() - started
    assert parsed.degraded
    assert took < 3, f"{took:.2f} s"  # the cold start and the deadline, not markdown-it's seconds
    fine = await parse_memo(FINE)  # the killed worker was replaced
    assert not fine.degraded


async def test_a_cold_start_does_not_stall_the_event_loop(fresh_pool: None) -> None:
    probe = LagProbe()
    probing = asyncio.create_task(probe.run())
    try:
        parsed = await parse_memo(FINE)
    finally:
        probe.stop()
        await probing
    assert not parsed.degraded
    assert probe.worst < 0.2, f"the loop stalled {probe.worst:.3f} s while the pool started"


def _trackers() -> list[int]:
    return [p for p in _children(os.getpid()) if "resource_tracker" in _cmdline(p)]


async def test_a_tracker_with_semaphores_left_is_kept(
    fresh_pool: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Another named semaphore of this process: stopping the tracker would unlink it.
    monkeypatch.setattr(parse_pool, "IDLE_SECONDS", 0.3)
    await parse_memo(FINE)
    lock = multiprocessing.get_context("forkserver").Lock()
    assert _trackers()
    assert await wait_until(lambda: markdown_processes() == _trackers(), 10)
    await asyncio.sleep(0.3)
    assert _trackers(), "the tracker was stopped under a live semaphore"
    with lock:  # still usable
        pass
    del lock
    parse_pool._stop_resource_tracker()  # as the next idle stop would
    assert _trackers() == []


async def test_a_tracker_this_process_did_not_start_is_kept(
    fresh_pool: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # serve --workers N: the tracker is the supervisor's, shared by the workers.
    monkeypatch.setattr(parse_pool, "IDLE_SECONDS", 0.3)
    await parse_memo(FINE)
    tracker = multiprocessing.resource_tracker._resource_tracker
    pid = tracker._pid  # type: ignore[attr-defined]
    monkeypatch.setattr(tracker, "_pid", None)
    assert await wait_until(lambda: markdown_processes() == _trackers(), 10)
    await asyncio.sleep(0.3)
    assert _trackers()
    monkeypatch.setattr(tracker, "_pid", pid)
    parse_pool._stop_resource_tracker()
    assert _trackers() == []


def _workers() -> list[int]:
    """The pool's worker processes: the forkserver's children."""
    servers = [p for p in _children(os.getpid()) if "forkserver" in _cmdline(p)]
    return [w for s in servers for w in _children(s)]


async def test_a_parse_in_flight_when_the_pool_stops_still_answers(fresh_pool: None) -> None:
    # shutdown() under a parse (at exit, or another request's error path):
    # pebble never completes the futures of a stopped pool.
    await parse_memo(FINE)  # the pool runs
    slow = asyncio.create_task(parse_memo("![" * 20_000, seconds=30))
    await asyncio.sleep(0.3)  # scheduled, and taken by a worker
    await asyncio.to_thread(parse_pool.shutdown)
    parsed = await asyncio.wait_for(slow, 10)
    assert parsed.degraded


async def test_a_failed_start_does_not_stop_the_pool_started_after_it(
    fresh_pool: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two writes find no pool. The first start fails (here EMFILE); the second
    # starts a pool and parses on it. The first write's error handling runs
    # after that (the threads are queued in this order: one thread makes it
    # deterministic): it must not stop the second write's pool under it.
    one = concurrent.futures.ThreadPoolExecutor(max_workers=1)

    async def to_thread(func: Any, /, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(one, func, *args)

    real = pebble.ProcessPool
    starts: list[int] = []

    def flaky(*args: Any, **kwargs: Any) -> Any:
        starts.append(1)
        if len(starts) == 1:
            raise OSError(errno.EMFILE, "Too many open files")
        return real(*args, **kwargs)

    monkeypatch.setattr(parse_pool, "ProcessPool", flaky)
    monkeypatch.setattr(asyncio, "to_thread", to_thread)
    try:
        first = asyncio.create_task(parse_memo(FINE))
        second = asyncio.create_task(parse_memo("![" * 6000, seconds=30))  # about a second
        assert (await first).degraded
        parsed = await asyncio.wait_for(second, 15)
        assert not parsed.degraded
        assert len(starts) == 2
    finally:
        one.shutdown(wait=False, cancel_futures=True)


async def test_a_pool_broken_while_idle_is_replaced_without_a_plain_text_write(
    fresh_pool: None,
) -> None:
    # A worker killed while idle (the OOM killer) breaks a pebble pool ("All
    # workers expired"); the next write starts a new pool, as before decision
    # 0052, rather than storing plain text.
    await parse_memo(FINE)
    os.kill(_workers()[0], signal.SIGKILL)
    assert await wait_until(lambda: parse_pool._pool is not None and not parse_pool._pool.active, 5)
    parsed = await parse_memo(FINE + "z")
    assert not parsed.degraded and "<strong>fine</strong>" in parsed.html


async def test_a_parse_whose_answer_never_comes_is_stored_as_plain_text(
    fresh_pool: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pebble answers nothing for a task handed out as its pool breaks: the write
    still ends, within the deadline plus ANSWER_GRACE_SECONDS, as plain text."""
    never: concurrent.futures.Future[Any] = concurrent.futures.Future()
    monkeypatch.setattr(parse_pool, "_schedule", lambda content, limit: never)
    monkeypatch.setattr(parse_pool, "ANSWER_GRACE_SECONDS", 0.2)
    started = time.monotonic()
    parsed = await asyncio.wait_for(parse_memo(FINE, seconds=0.3), 5)
    assert parsed.degraded
    assert time.monotonic() - started < 2
    assert never.cancelled()
