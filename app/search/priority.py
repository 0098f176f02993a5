"""The embedding thread's CPU priority: below every request, yet never stalling one.

Why (issue 15, decision 0055): the embedding worker shares its process and
the machine's cores with interactive requests. At nice 10 (decision 0047)
its thread still kept a core for the rest of its slice when a request's
thread woke up (the kernel's EEVDF scheduler protects a running task's
slice), and a request wakes up about ten times (every statement is a round
trip to the database), so during a backlog a list's median went from 10 to
19 ms on PostgreSQL. A ``SCHED_IDLE`` thread is preempted at once by any
ordinary thread that wakes.

Why only while the model runs: a thread that is preempted while it holds
the GIL stalls its process's event loop until it runs again, and a
``SCHED_IDLE`` thread on a busy machine may wait a long time for a core
(weight 3 against 1024). onnxruntime's ``session.run`` releases the GIL for
the model's work, which is almost all of an embedding's CPU, so only that
call runs at ``SCHED_IDLE`` (:func:`native_at_idle`); tokenising, pooling and
the worker's statements, which hold the GIL, run at nice 10 as before. And
only while the machine has cores to spare: each idle run measures the share
of a core it got (its thread's CPU time over its wall time); a run that got
less than :data:`STARVED_SHARE` means ordinary work fills the machine, and
the next :data:`HOLD_SECONDS` of runs stay at nice 10, whose share is small
but never nil, so a GIL the thread holds is always given back soon. A starved
run costs the backlog the time it waited (on a machine that stays full, up to
a minute), so each starved run in a row doubles the hold, up to
:data:`MAX_HOLD_SECONDS`; a run that is not starved resets it.

Linux only (per-thread scheduling); elsewhere the thread is niced where the
platform allows and the rest is a no-op.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator

__all__ = [
    "HOLD_SECONDS",
    "MAX_HOLD_SECONDS",
    "NICE",
    "STARVED_SHARE",
    "make_background",
    "native_at_idle",
]

NICE = 10  # the embedding thread's niceness: interactive requests first (Linux: per thread)
STARVED_SHARE = 0.2  # an idle run that got less of a core than this: the machine is full
HOLD_SECONDS = 60.0  # then this long at nice 10 before trying SCHED_IDLE again
MAX_HOLD_SECONDS = 960.0  # the hold doubles with each starved run in a row, up to this

_local = threading.local()
_IDLE = getattr(os, "SCHED_IDLE", None)
_OTHER = getattr(os, "SCHED_OTHER", None)


def make_background() -> None:
    """Mark the calling thread as the embedding thread, at nice :data:`NICE`. On Linux
    ``nice`` applies to the calling thread only, and threads it starts inherit it."""
    with contextlib.suppress(OSError):
        os.nice(NICE)
    _local.background = True
    _local.hold_until = 0.0
    _local.hold = HOLD_SECONDS


def _set(policy: int) -> bool:
    try:
        os.sched_setscheduler(0, policy, os.sched_param(0))
    except (OSError, AttributeError):
        return False
    return True


@contextlib.contextmanager
def native_at_idle() -> Iterator[None]:
    """Around a call that releases the GIL: on the embedding thread, unless a recent
    idle run was starved, run it at ``SCHED_IDLE`` and go back to the ordinary policy
    (at the same niceness) as soon as it returns. Anywhere else, nothing changes."""
    if (
        _IDLE is None
        or _OTHER is None
        or not getattr(_local, "background", False)
        or time.monotonic() < _local.hold_until
        or not _set(_IDLE)
    ):
        yield
        return
    wall, cpu = time.perf_counter(), time.thread_time()
    try:
        yield
    finally:
        _set(_OTHER)
        wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
        if wall > 0 and cpu / wall < STARVED_SHARE:
            _local.hold_until = time.monotonic() + _local.hold
            _local.hold = min(2 * _local.hold, MAX_HOLD_SECONDS)
        else:
            _local.hold = HOLD_SECONDS
