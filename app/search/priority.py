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
the worker's statements, which hold the GIL, run at nice 10 as before.

Three guards:

- **The way back must be allowed.** Without ``CAP_SYS_NICE`` Linux lets a
  thread leave ``SCHED_IDLE`` only if ``RLIMIT_NICE`` allows its niceness
  (default: it does not), so a non-root server (the Dockerfile's ``USER``,
  systemd's ``User=``) would strand the thread at ``SCHED_IDLE`` for good.
  :func:`idle_policy_usable` tries the round trip once per process on a
  throwaway thread at the same niceness; if it fails, the thread stays at
  nice 10 (logged once). ``--cap-add SYS_NICE`` or ``--ulimit nice=10``
  (systemd: ``LimitNICE=10``) turn it on.
- **A starved run means the machine is full.** Each idle run measures the
  share of its time it waited for a core (``run_delay`` in
  ``/proc/thread-self/schedstat``, which does not count waiting for the GIL;
  CPU time over wall time where that file is missing). A run that waited
  more than ``1 - STARVED_SHARE`` of its time holds the thread at nice 10
  for :data:`HOLD_SECONDS`, doubled by each starved run in a row up to
  :data:`MAX_HOLD_SECONDS`; a run that is not starved resets it. At nice 10
  the thread's share is small but never nil, so a GIL it holds is always
  given back soon.
- **A starved run is cut short.** A run cannot be interrupted, but its
  thread can be moved: :func:`rescue` (called by ``run_low`` when a call has
  taken :data:`RESCUE_SECONDS`) puts the embedding thread back at the
  ordinary policy and starts the hold.

Linux only (per-thread scheduling); elsewhere nothing changes but the nice.
The model must run on the calling thread (``intra_op_num_threads = 1``, as
``app.search.model_cache`` sets it), or its work would escape the policy.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import structlog

__all__ = [
    "HOLD_SECONDS",
    "MAX_HOLD_SECONDS",
    "NICE",
    "RESCUE_SECONDS",
    "STARVED_SHARE",
    "idle_policy_usable",
    "make_background",
    "native_at_idle",
    "rescue",
]

log = structlog.get_logger("daybook.search.priority")

NICE = 10  # the embedding thread's niceness: interactive requests first (Linux: per thread)
STARVED_SHARE = 0.2  # an idle run that ran less than this share of its time: the machine is full
HOLD_SECONDS = 60.0  # then this long at nice 10 before trying SCHED_IDLE again
MAX_HOLD_SECONDS = 960.0  # the hold doubles with each starved run in a row, up to this
RESCUE_SECONDS = 5.0  # a worker call this long (a batch is about 1 s) is moved off SCHED_IDLE

_IDLE = getattr(os, "SCHED_IDLE", None)
_OTHER = getattr(os, "SCHED_OTHER", None)


@dataclass
class _Background:
    """The embedding thread (one per process: ``run_low`` has one thread) and its hold."""

    tid: int | None = None
    hold_until: float = 0.0
    hold: float = HOLD_SECONDS


_bg = _Background()
_local = threading.local()
_usable: bool | None = None  # the round trip's verdict, probed once per process


def make_background() -> None:
    """Mark the calling thread as the embedding thread, at nice :data:`NICE`. On Linux
    ``nice`` applies to the calling thread only, and threads it starts inherit it."""
    with contextlib.suppress(OSError):
        os.nice(NICE)
    _local.background = True
    _bg.tid = threading.get_native_id()
    _bg.hold_until, _bg.hold = 0.0, HOLD_SECONDS


def _set(policy: int, tid: int = 0) -> bool:
    try:
        os.sched_setscheduler(tid, policy, os.sched_param(0))
    except (OSError, AttributeError):
        return False
    return True


def _round_trip() -> bool:
    """On a throwaway thread at the embedding thread's niceness: into SCHED_IDLE and out."""
    if _IDLE is None or _OTHER is None:
        return False
    verdict: list[bool] = []

    def attempt() -> None:
        with contextlib.suppress(OSError):
            os.nice(NICE)
        verdict.append(_set(_IDLE) and _set(_OTHER))

    probe = threading.Thread(target=attempt, name="daybook-sched-probe", daemon=True)
    probe.start()
    probe.join(5)
    return bool(verdict and verdict[0])


def idle_policy_usable() -> bool:
    """Whether this process may put a thread at SCHED_IDLE and take it back."""
    global _usable
    if _usable is None:
        _usable = _round_trip()
        if not _usable and _IDLE is not None:
            log.info(
                "embedding runs stay at nice 10: leaving SCHED_IDLE needs CAP_SYS_NICE"
                " or RLIMIT_NICE >= 10 (docker --ulimit nice=10, systemd LimitNICE=10)",
                nice=NICE,
            )
    return _usable


def _disable(why: str) -> None:
    global _usable
    _usable = False
    log.error("embedding runs stay at nice 10 from now on", reason=why)


def _run_delay() -> float | None:
    """Seconds the calling thread has waited, runnable, for a core (None: not known)."""
    try:
        with open("/proc/thread-self/schedstat", encoding="ascii") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


def _hold(now: float) -> None:
    _bg.hold_until = now + _bg.hold
    _bg.hold = min(2 * _bg.hold, MAX_HOLD_SECONDS)


def rescue() -> None:
    """Move the embedding thread off SCHED_IDLE now (from any thread) and start the
    hold: its run has waited too long for a core."""
    tid = _bg.tid
    if tid is None or _IDLE is None or _OTHER is None:
        return
    try:
        if os.sched_getscheduler(tid) != _IDLE:
            return
    except OSError:
        return
    if not _set(_OTHER, tid):
        _disable("could not move the embedding thread off SCHED_IDLE")
        return
    now = time.monotonic()
    _hold(now)
    log.info("a starved embedding run was moved to nice 10", hold_s=round(_bg.hold_until - now))


@contextlib.contextmanager
def native_at_idle() -> Iterator[None]:
    """Around a call that releases the GIL: on the embedding thread, unless the
    machine was full lately, run it at ``SCHED_IDLE`` and go back to the ordinary
    policy (at the same niceness) as soon as it returns. Anywhere else, nothing."""
    if (
        _IDLE is None
        or _OTHER is None
        or not getattr(_local, "background", False)
        or time.monotonic() < _bg.hold_until
        or not idle_policy_usable()
        or not _set(_IDLE)
    ):
        yield
        return
    wall, waited, cpu = time.perf_counter(), _run_delay(), time.thread_time()
    try:
        yield
    finally:
        if not _set(_OTHER):
            _disable("could not leave SCHED_IDLE")
        wall = time.perf_counter() - wall
        after = _run_delay()
        if waited is not None and after is not None:
            ran = 1.0 - (after - waited) / wall if wall > 0 else 1.0
        else:
            ran = (time.thread_time() - cpu) / wall if wall > 0 else 1.0
        if ran < STARVED_SHARE:
            _hold(time.monotonic())
        elif time.monotonic() >= _bg.hold_until:
            _bg.hold = HOLD_SECONDS
