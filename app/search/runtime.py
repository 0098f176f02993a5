"""Per-process search state, created in the app's lifespan and kept on ``app.state.search``.

The query embedder loads on first use (the default model loads in well under
a second); the worker gets an instance of its own so a batch in progress
never blocks a query.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

import sqlalchemy as sa
import structlog
from sqlalchemy.ext.asyncio import AsyncEngine

from app.search.embedder import Embedder, QueryCache, make_embedder
from app.search.vectors import VectorCache
from app.search.worker import run_worker

log = structlog.get_logger("daybook.search")


class SearchRuntime:
    def __init__(self, model: str, pgvector: bool) -> None:
        self.model = model
        self.pgvector = pgvector
        self.queries = QueryCache()
        self._embedder: Embedder | None = None
        self._caches: dict[tuple[str, int], VectorCache] = {}
        self._lock = threading.Lock()

    @property
    def embedder(self) -> Embedder:
        with self._lock:
            if self._embedder is None:
                self._embedder = make_embedder(self.model)
            return self._embedder

    def vector_cache(self, model: str, dim: int) -> VectorCache:
        with self._lock:
            cache = self._caches.get((model, dim))
            if cache is None:
                cache = self._caches[(model, dim)] = VectorCache(dim)
            return cache

    async def loaded_embedder(self) -> Embedder:
        """The query embedder, loading it off the event loop the first time."""
        if self._embedder is not None:
            return self._embedder
        return await asyncio.to_thread(lambda: self.embedder)

    async def embed_query(self, text: str) -> Any:
        embedder = await self.loaded_embedder()
        return await asyncio.to_thread(self.queries.get, embedder, text)


async def has_pgvector(engine: AsyncEngine) -> bool:
    """Whether ``memo_embedding`` has migration 0004's ``halfvec`` column."""
    if engine.dialect.name != "postgresql":
        return False
    async with engine.connect() as conn:
        found = await conn.execute(
            sa.text(
                "SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()"
                " AND table_name = 'memo_embedding' AND column_name = 'embedding'"
            )
        )
        return found.first() is not None


def search_lifespan(
    model: str, worker: bool
) -> Callable[[Any], contextlib.AbstractAsyncContextManager[None]]:
    """The lifespan hook: search state, and the embedding worker when enabled."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        engine: AsyncEngine = app.state.engine
        runtime = SearchRuntime(model, await has_pgvector(engine))
        app.state.search = runtime
        stop = asyncio.Event()
        task: asyncio.Task[None] | None = None
        if worker:
            try:
                own = await asyncio.to_thread(make_embedder, model)
            except Exception:
                log.exception("embedding model failed to load: semantic search stays empty")
            else:
                task = asyncio.create_task(run_worker(engine, own, runtime.pgvector, stop))
        try:
            yield
        finally:
            stop.set()
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    return lifespan
