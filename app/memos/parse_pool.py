"""Markdown parsing off the event loop, bounded in time.

Every memo write parses its content once (:func:`app.memos.parse.parse`:
properties and HTML). Parsing is pure Python and superlinear on hostile
input, so on the event loop one crafted 8 KiB memo stalled every request of
the process for half a second, and a mebibyte for hours. Here contents over
:data:`INLINE_BYTES` are parsed in a small pool of worker processes (pebble:
a task that overruns its deadline has its worker killed and replaced), and
the loop only awaits the result. A parse that runs out of time, or whose
worker dies, yields :func:`app.memos.parse.plain` instead: the memo still
saves, with text-only properties and HTML, and a warning is logged.

The deadline grows with the content (:func:`deadline`): a genuine mebibyte
of Markdown parses in a few seconds, a hostile one is cut off.

The pool is per process (it holds no state, only CPU). Its workers are
forked from a forkserver that has imported the parser, so they never
inherit the server's threads or connections. It starts on the first parse
that needs it, in a thread (about 0.2 s: the forkserver boots and forks
the workers), and stops after :data:`IDLE_SECONDS` without a parse, with
the forkserver and, when this process started it, multiprocessing's resource
tracker: an idle server holds no Markdown processes, which were about 50 MB
PSS per server process (decision 0052).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import multiprocessing
import multiprocessing.forkserver
import multiprocessing.resource_tracker
import multiprocessing.synchronize
import multiprocessing.util
import os
import threading
import time
from concurrent.futures import Future, InvalidStateError, TimeoutError
from concurrent.futures.process import BrokenProcessPool

import structlog
from pebble import ProcessExpired, ProcessPool

from app.memos.parse import Parsed, parse, plain

__all__ = ["IDLE_SECONDS", "INLINE_BYTES", "deadline", "parse_memo", "shutdown"]

log = structlog.get_logger("daybook.markdown")

# Contents up to this size parse on the loop: at most a millisecond or so
# even when hostile, and cheaper than the round trip to a worker.
INLINE_BYTES = 256
BASE_SECONDS = 2.0
SECONDS_PER_MIB = 10.0
WORKERS = max(1, min(2, os.cpu_count() or 1))
# A minute without a parse: the pool and its helpers stop; the next parse
# starts them again (about 0.2 s, once).
IDLE_SECONDS = 60.0
# Parsing yields the CPU to the processes serving requests.
NICE = 5
# A parse waits at most its deadline plus this for its answer: the deadline
# counts from when a worker takes the task, and pebble answers nothing for a
# task handed out as its pool broke. Past it the memo is stored as plain text,
# as for a timeout, and the request never hangs.
ANSWER_GRACE_SECONDS = 10.0
# What the forkserver imports once, so that every worker forked from it
# shares it: the parser, and pebble's worker loop (its package imports
# asyncio). The workers' initializer is os.nice, not a function of this
# module, which would make each worker import structlog (and rich) anew.
PRELOAD = ["app.memos.parse", "pebble"]

# _lock guards _pool, _generation, _running and _last_used, and is only held
# for moments (the event loop takes it). _start_lock is held while processes
# start or stop, never on the loop, and always taken before _lock.
_lock = threading.Lock()
_changed = threading.Condition(_lock)
_start_lock = threading.Lock()
_pool: ProcessPool | None = None
# Which pool runs, by number: the idle timer holds this, not the pool (nor
# do the parses' callbacks), so a stopped pool is freed at once (its
# semaphores with it).
_generation = 0
# The parses scheduled on _pool and not finished: a pool that is stopped
# under them fails them (pebble would never complete them).
_running: set[Future[Parsed]] = set()
_last_used = 0.0  # time.monotonic() of the last finished parse


def deadline(size: int) -> float:
    """Seconds a parse of ``size`` bytes may take before it is abandoned."""
    return BASE_SECONDS + SECONDS_PER_MIB * size / (1024 * 1024)


def _schedule(content: str, limit: float) -> Future[Parsed] | None:
    """The parse on the running pool, or None if there is none or it is broken. Never blocks."""
    with _lock:
        # A broken pebble pool (a worker died while idle: "All workers
        # expired") takes no task: the caller starts a new one instead.
        if _pool is None or not _pool.active:
            return None
        future = _pool.schedule(parse, args=(content,), timeout=limit)
        _running.add(future)
    future.add_done_callback(_finished)
    return future


def _start_and_schedule(content: str, limit: float) -> Future[Parsed]:
    """Off the loop: start the pool if none runs (another caller may have), then schedule.

    Scheduling the first task is what starts a pebble pool: it blocks until
    the forkserver has booted and forked the workers.
    """
    global _pool, _generation, _running
    with _start_lock:
        future = _schedule(content, limit)
        if future is not None:
            return future
        _retire(broken_only=False)  # a broken pool, if any: none else runs
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(PRELOAD)
        pool = ProcessPool(
            max_workers=WORKERS, context=context, initializer=os.nice, initargs=(NICE,)
        )
        try:
            future = pool.schedule(parse, args=(content,), timeout=limit)
        except BaseException:
            _stop(pool)
            raise
        with _lock:
            _pool, _running = pool, {future}
            _generation += 1
            generation = _generation
        future.add_done_callback(_finished)
        timer = threading.Thread(target=_idle_timer, args=(generation,), daemon=True)
        timer.name = "markdown-idle"
        timer.start()
        return future


def _finished(future: Future[Parsed]) -> None:
    global _last_used
    with _lock:
        if future in _running:  # not a parse of a pool already stopped
            _running.discard(future)
            _last_used = time.monotonic()


def _idle_timer(generation: int) -> None:
    """Stops the pool ``generation`` once no parse has run on it for IDLE_SECONDS."""
    while _wait_idle(generation):
        with _start_lock:
            pool = _take_if_idle(generation)
            if pool is not None:
                clean = _stop(pool)
                del pool  # the last reference: its semaphores are unlinked now
                if clean:
                    _stop_resource_tracker()
                log.info("markdown workers stopped", idle_seconds=IDLE_SECONDS)
                return


def _wait_idle(generation: int) -> bool:
    """True once the pool has been idle for IDLE_SECONDS; False once it is another or none."""
    with _changed:
        while generation == _generation:
            if _running:
                wait = IDLE_SECONDS
            else:
                wait = _last_used + IDLE_SECONDS - time.monotonic()
                if wait <= 0:
                    return True
            _changed.wait(wait)
        return False


def _take_if_idle(generation: int) -> ProcessPool | None:
    """The pool, no longer published, if it is still ``generation`` and still idle."""
    global _pool, _generation
    with _lock:
        if generation != _generation or _running or time.monotonic() - _last_used < IDLE_SECONDS:
            return None  # stopped meanwhile, or a parse came in
        pool, _pool = _pool, None
        _generation += 1
        return pool


def _stop(pool: ProcessPool) -> bool:
    """Stop ``pool``'s workers, then the forkserver they were forked from; True if both stopped.

    The forkserver holds the parser's modules (about 20 MB) and would
    otherwise outlive the pool. It exits only when every worker has (each
    holds its "alive" pipe), so it is stopped only after a clean join; the
    next pool starts a new one. ``_stop`` is CPython's (used by its tests)
    and absent elsewhere: then the forkserver stays, as before.
    """
    pool.stop()  # type: ignore[no-untyped-call]
    try:
        pool.join(timeout=5)
    except (RuntimeError, OSError) as exc:  # a worker pebble could not kill
        log.warning("markdown workers did not stop", error=repr(exc))
        return False
    stop_forkserver = getattr(multiprocessing.forkserver._forkserver, "_stop", None)
    if stop_forkserver is None:
        return False
    stop_forkserver()
    return True


def _stop_resource_tracker() -> None:
    """Stop multiprocessing's resource tracker (13 MB RSS) if this process started it for the pool.

    The forkserver starts it, and it lives until the process exits, for the
    named semaphores of the pool's channels. Only when this process started
    it (``serve`` as one process; with workers it is the supervisor's,
    shared) and no semaphore is left registered (the pool's were unlinked
    when it was freed): otherwise the tracker would unlink live ones. The
    next pool starts a new one. Private CPython state, read with getattr: on
    another implementation the tracker stays, as before.
    """
    tracker = multiprocessing.resource_tracker._resource_tracker
    stop = getattr(tracker, "_stop", None)
    registry = getattr(multiprocessing.util, "_finalizer_registry", None)
    cleanup = getattr(multiprocessing.synchronize.SemLock, "_cleanup", None)
    if getattr(tracker, "_pid", None) is None or stop is None or registry is None or not cleanup:
        return
    if any(getattr(f, "_callback", None) is cleanup for f in list(registry.values())):
        return
    stop()


def _retire(*, broken_only: bool) -> None:
    """Under _start_lock: unpublish the pool (``broken_only``: if broken), stop it, fail its parses.

    pebble never completes the futures of a pool stopped under them: each
    parse still waiting gets BrokenProcessPool, so its write stores plain
    text instead of waiting forever.
    """
    global _pool, _generation, _running
    with _changed:
        pool = _pool
        if pool is None or (broken_only and pool.active):
            return
        running, _running = _running, set()
        _pool = None
        _generation += 1
        _changed.notify_all()  # its idle timer ends
    try:
        clean = _stop(pool)
    finally:
        for future in running:
            with contextlib.suppress(InvalidStateError):  # completed or cancelled meanwhile
                future.set_exception(BrokenProcessPool("markdown workers stopped"))
    del pool
    if clean:
        _stop_resource_tracker()


def shutdown() -> None:
    """Stop the workers now (at exit; tests that want a fresh pool)."""
    with _start_lock:
        _retire(broken_only=False)


def _discard_broken() -> None:
    """After a parse failed for want of workers: stop the pool if it is broken.

    Only then: by now the pool may be a new one, started by another write
    and parsing (stopping it would fail that write).
    """
    with _start_lock:
        _retire(broken_only=True)


atexit.register(shutdown)


async def parse_memo(content: str, *, seconds: float | None = None) -> Parsed:
    """:func:`app.memos.parse.parse` of ``content``, without blocking the event loop."""
    size = len(content.encode())
    if size <= INLINE_BYTES:
        return parse(content)
    limit = deadline(size) if seconds is None else seconds
    try:
        future = _schedule(content, limit)
        if future is None:  # starting the forkserver and the workers blocks: not on the loop
            future = await asyncio.to_thread(_start_and_schedule, content, limit)
        return await asyncio.wait_for(asyncio.wrap_future(future), limit + ANSWER_GRACE_SECONDS)
    except TimeoutError:  # the deadline (pebble), or no answer in time (wait_for): one class
        log.warning("markdown parse timed out: stored as plain text", bytes=size, seconds=limit)
    except ProcessExpired as exc:  # the worker died (out of memory, a signal)
        log.warning("markdown worker died: stored as plain text", bytes=size, error=str(exc))
    except (BrokenProcessPool, RuntimeError, OSError) as exc:  # no usable pool: start anew
        log.error("markdown workers unavailable: stored as plain text", error=repr(exc))
        await asyncio.to_thread(_discard_broken)
    return await asyncio.to_thread(plain, content)
