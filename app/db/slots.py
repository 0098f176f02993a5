"""Request slots: at most N requests of a process work on the database at once, writes first.

With 80 clients on two cores the machine is the limit (about 10 ms of CPU
per request, decision 0043), and every request admitted to the event loop
shares it with every other: a save waited as long as the longest list, half
a second at 160 requests/s. A write is short, holds the one SQLite write
lock, and is what a person waits on when they press Save; so requests take a
slot before their database connection (after the body is read and parsed,
so a slow upload holds none), at most :data:`SLOTS` per process, and a free
slot goes to the oldest waiting *write* before any read. Reads still get
every slot no write is waiting for; what the writes gain the reads pay
(Little's law: the mean is fixed by throughput), so the figures in the
README show both. Decision 0044.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import AsyncIterator

from app.db.transactions import TxKind
from app.errors import Unavailable

__all__ = ["SLOTS", "SLOT_WAIT", "RequestSlots", "ServerBusy"]

SLOTS = 8  # requests per process working at once; the rest wait, costing nothing
SLOT_WAIT = 30.0  # seconds a request waits for a slot before 503


class ServerBusy(Unavailable):
    """No request slot came free within the wait budget: retry later (503)."""

    retry_after = 1


class RequestSlots:
    """A counting semaphore with two queues: writes are served before reads.

    Bound lazily to the running loop, as the write gate is. Waiters are
    futures in arrival order per kind; a cancelled waiter (the client went
    away) is skipped, and a slot handed to a waiter that is cancelled before
    it runs is passed on.
    """

    def __init__(self, slots: int = SLOTS, wait: float = SLOT_WAIT) -> None:
        self.slots = slots
        self.wait = wait
        self._busy = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queues: dict[TxKind, collections.deque[asyncio.Future[None]]] = {
            TxKind.WRITE: collections.deque(),
            TxKind.READ: collections.deque(),
        }

    def _bind(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._loop, self._busy = loop, 0
            for queue in self._queues.values():
                queue.clear()

    @property
    def waiting(self) -> int:
        return sum(len(q) for q in self._queues.values())

    @contextlib.asynccontextmanager
    async def slot(self, kind: TxKind) -> AsyncIterator[None]:
        await self.acquire(kind)
        try:
            yield
        finally:
            self.release()

    async def acquire(self, kind: TxKind) -> None:
        self._bind()
        if self._busy < self.slots and not self.waiting:
            self._busy += 1
            return
        assert self._loop is not None
        future: asyncio.Future[None] = self._loop.create_future()
        self._queues[kind].append(future)
        try:
            async with asyncio.timeout(self.wait):
                await future  # the slot is ours once it resolves: release() counted it
        except (asyncio.CancelledError, TimeoutError) as exc:
            if future.done() and not future.cancelled():
                self.release()  # handed to us, but we are gone: pass it on
            else:
                with contextlib.suppress(ValueError):
                    self._queues[kind].remove(future)
            if isinstance(exc, TimeoutError):
                raise ServerBusy(
                    f"the server is busy: no request slot within {self.wait:.0f} s, retry shortly"
                ) from None
            raise

    def release(self) -> None:
        for kind in (TxKind.WRITE, TxKind.READ):
            queue = self._queues[kind]
            while queue:
                future = queue.popleft()
                if not future.done():
                    future.set_result(None)  # the slot passes straight to it
                    return
        self._busy -= 1
