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

The pool is per process (it holds no state, only CPU) and starts on first
use; its workers are forked from a forkserver that has imported the parser,
so they never inherit the server's threads or connections.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import multiprocessing
import os
import threading
from collections.abc import AsyncIterator
from concurrent.futures import TimeoutError
from concurrent.futures.process import BrokenProcessPool

import structlog
from pebble import ProcessExpired, ProcessPool

from app.memos.parse import Parsed, parse, plain

__all__ = ["INLINE_BYTES", "deadline", "parse_memo", "shutdown", "warm_pool"]

log = structlog.get_logger("daybook.markdown")

# Contents up to this size parse on the loop: at most a millisecond or so
# even when hostile, and cheaper than the round trip to a worker.
INLINE_BYTES = 256
BASE_SECONDS = 2.0
SECONDS_PER_MIB = 10.0
WORKERS = max(1, min(2, os.cpu_count() or 1))
# Parsing yields the CPU to the processes serving requests.
NICE = 5
# What the forkserver imports once, so that every worker forked from it
# shares it: the parser, and pebble's worker loop (its package imports
# asyncio). The workers' initializer is os.nice, not a function of this
# module, which would make each worker import structlog (and rich) anew.
PRELOAD = ["app.memos.parse", "pebble"]

_pool: ProcessPool | None = None
_lock = threading.Lock()


def deadline(size: int) -> float:
    """Seconds a parse of ``size`` bytes may take before it is abandoned."""
    return BASE_SECONDS + SECONDS_PER_MIB * size / (1024 * 1024)


def _get_pool() -> ProcessPool:
    global _pool
    with _lock:
        if _pool is None or not _pool.active:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(PRELOAD)
            _pool = ProcessPool(
                max_workers=WORKERS, context=context, initializer=os.nice, initargs=(NICE,)
            )
        return _pool


def shutdown() -> None:
    """Stop the workers (at exit; tests that want a fresh pool)."""
    global _pool
    with _lock:
        pool, _pool = _pool, None
    if pool is not None:
        pool.stop()  # type: ignore[no-untyped-call]
        pool.join(timeout=5)


atexit.register(shutdown)


@contextlib.asynccontextmanager
async def warm_pool(_: object = None) -> AsyncIterator[None]:
    """A lifespan that starts the workers before the first request.

    Starting the forkserver forks this process, which holds the interpreter
    for as long as copying a large process takes (a third of a second was
    seen on a loaded machine): better at start-up than in a request. A pool
    that cannot start does not stop the app: writes then store plain text.
    """
    try:
        pool = await asyncio.to_thread(_get_pool)
        await asyncio.wrap_future(pool.schedule(parse, args=("warm",)))
    except (BrokenProcessPool, ProcessExpired, RuntimeError, OSError) as exc:
        log.error("markdown workers could not start", error=repr(exc))
        await asyncio.to_thread(shutdown)
    yield


async def parse_memo(content: str, *, seconds: float | None = None) -> Parsed:
    """:func:`app.memos.parse.parse` of ``content``, without blocking the event loop."""
    size = len(content.encode())
    if size <= INLINE_BYTES:
        return parse(content)
    limit = deadline(size) if seconds is None else seconds
    try:
        pool = _pool if _pool is not None and _pool.active else None
        if pool is None:  # starting the forkserver and the workers blocks: not on the loop
            pool = await asyncio.to_thread(_get_pool)
        return await asyncio.wrap_future(pool.schedule(parse, args=(content,), timeout=limit))
    except TimeoutError:
        log.warning("markdown parse timed out: stored as plain text", bytes=size, seconds=limit)
    except ProcessExpired as exc:  # the worker died (out of memory, a signal)
        log.warning("markdown worker died: stored as plain text", bytes=size, error=str(exc))
    except (BrokenProcessPool, RuntimeError, OSError) as exc:  # no usable pool: start anew
        log.error("markdown workers unavailable: stored as plain text", error=repr(exc))
        await asyncio.to_thread(shutdown)
    return await asyncio.to_thread(plain, content)
