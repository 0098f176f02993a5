"""Per-process search state, created in the app's lifespan and kept on ``app.state.search``.

At startup, in the background, ``SearchRuntime.warm`` loads what the first
search would otherwise load on the request path: the query model (about half
a second) and, without pgvector, every current vector (about a second per
100k memos). Startup and ``/readyz`` do not wait for it: the process serves
every route meanwhile, and a search arriving during the load waits for it
(``VectorCache.lock``) instead of starting a second one. ``warm_status`` says
where it is ("cold", "warming", "warm", "failed"). The worker shares the
query model when the model runs calls concurrently (MiniLM: one instance per
process, not two); otherwise it gets an instance of its own so a batch in
progress never blocks a query.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import sqlalchemy as sa
import structlog
from sqlalchemy.ext.asyncio import AsyncEngine

from app.db.schema import memo
from app.jobs.lease import holder_id, leased, take
from app.search.cache_sync import warm_cache
from app.search.embedder import Embedder, QueryCache, make_embedder
from app.search.fusion import Floor, Fusion
from app.search.relevance import DEFAULT_FUSION, parse_floor
from app.search.trim import release_free_memory
from app.search.vectors import VectorCache, one_blas_thread
from app.search.worker import run_low, run_worker

log = structlog.get_logger("daybook.search")


class SearchRuntime:
    def __init__(
        self,
        model: str,
        pgvector: bool,
        floor: str = "auto",
        fusion: Fusion = DEFAULT_FUSION,
        model_cache: Path | None = None,
    ) -> None:
        self.model = model
        self.model_cache = model_cache
        self.pgvector = pgvector
        self.floor_setting = floor
        self.fusion = fusion
        self._floors: dict[str, Floor] = {}
        self.queries = QueryCache()
        self._embedder: Embedder | None = None
        self._caches: dict[tuple[str, int], VectorCache] = {}
        self._lock = threading.Lock()
        self.warm_status = "cold"
        one_blas_thread()

    @property
    def embedder(self) -> Embedder:
        with self._lock:
            if self._embedder is None:
                self._embedder = make_embedder(self.model, self.model_cache)
                release_free_memory()  # the load's temporaries (app.search.trim)
            return self._embedder

    def vector_cache(self, model: str, dim: int) -> VectorCache:
        with self._lock:
            cache = self._caches.get((model, dim))
            if cache is None:
                cache = self._caches[(model, dim)] = VectorCache(dim)
            return cache

    def floor(self, model_name: str) -> Floor:
        """The relevance floor for vectors of ``model_name`` (the embedder's stamp)."""
        found = self._floors.get(model_name)
        if found is None:
            found = self._floors[model_name] = parse_floor(self.floor_setting, model_name)
        return found

    def worker_embedder(self) -> Embedder:
        """The embedding worker's model: the query model itself when it takes
        concurrent calls (each call runs at its caller thread's priority), else
        an instance of its own."""
        shared = self.embedder
        return shared if shared.concurrent else make_embedder(self.model, self.model_cache)

    async def loaded_embedder(self) -> Embedder:
        """The query embedder, loading it off the event loop the first time."""
        if self._embedder is not None:
            return self._embedder
        return await asyncio.to_thread(lambda: self.embedder)

    async def embed_query(self, text: str) -> Any:
        embedder = await self.loaded_embedder()
        return await asyncio.to_thread(self.queries.get, embedder, text)

    async def embed_sentences(self, query: str, texts: list[str]) -> tuple[Any, Any]:
        """The query's vector and one vector per sentence of ``texts`` (for snippets)."""
        embedder = await self.loaded_embedder()

        def run() -> tuple[Any, Any]:
            return self.queries.get(embedder, query), embedder.embed_passages(texts)

        return await asyncio.to_thread(run)

    async def warm(self, engine: AsyncEngine) -> None:
        """Load the query model and (without pgvector) the vectors, if there is
        anything to search yet; never raises (the first search loads instead)."""
        started = time.perf_counter()
        self.warm_status = "warming"
        try:
            async with engine.connect() as conn:
                empty = (await conn.execute(sa.select(memo.c.id).limit(1))).first() is None
            if empty:  # nothing to search: a new instance (or a test) stays cold
                self.warm_status = "warm"
                return
            embedder = await self.loaded_embedder()
            await asyncio.to_thread(embedder.embed_query, "warm up")
            model_s = time.perf_counter() - started
            vectors = 0
            if not self.pgvector:
                cache = self.vector_cache(embedder.name, embedder.dim)
                vectors = await warm_cache(engine, cache, embedder.name, embedder.dim)
        except asyncio.CancelledError:
            self.warm_status = "cold"
            raise
        except Exception:
            self.warm_status = "failed"
            log.exception("search warm-up failed: the first search loads instead")
            return
        self.warm_status = "warm"
        log.info(
            "search warm",
            model=embedder.name,
            model_seconds=round(model_s, 2),
            vectors=vectors,
            seconds=round(time.perf_counter() - started, 2),
        )


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


@contextlib.asynccontextmanager
async def _embedding_lease(
    engine: AsyncEngine,
    runtime: SearchRuntime,
    stop: asyncio.Event,
    lease_ms: int = 15_000,
) -> AsyncIterator[None]:
    """The embedding worker, in the one process holding the ``embedding`` lease.

    Only the holder embeds, on the embedding thread (lower priority,
    ``run_low``), with :meth:`SearchRuntime.worker_embedder`. A process that
    wins the lease at start loads it before it serves, as a single process
    always did (the first requests do not compete with the model load); one
    that wins it later loads it then.
    """
    holder = holder_id()
    state: dict[str, Any] = {"model": None, "failed": False}

    async def load() -> Any:
        if state["model"] is None and not state["failed"]:
            try:
                state["model"] = await run_low(runtime.worker_embedder)
            except Exception:
                state["failed"] = True
                log.exception("embedding model failed to load: semantic search stays empty")
        return state["model"]

    with contextlib.suppress(Exception):  # unreachable database: the lease loop retries
        if await take(engine, "embedding", holder, lease_ms):
            await load()

    async def job() -> None:
        own = await load()
        if own is None:
            await stop.wait()  # nothing to embed with; keep the lease quietly
            return
        await run_worker(engine, own, runtime.pgvector, stop)

    async with leased(engine, "embedding", job, holder=holder, ttl_ms=lease_ms):
        yield


def search_lifespan(
    model: str,
    worker: bool,
    floor: str = "auto",
    lease_ms: int = 15_000,
    model_cache: Path | None = None,
) -> Callable[[Any], contextlib.AbstractAsyncContextManager[None]]:
    """The lifespan hook: search state, its warm-up, and the embedding worker when enabled.

    ``model_cache`` is where MiniLM's memory-mapped build is kept (the data
    directory's ``cache``; ``app.search.model_cache``). A bad ``floor``
    (``DAYBOOK_SEARCH_FLOOR``) raises here, when the app is built, not on the
    first search."""
    parse_floor(floor, model)

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        engine: AsyncEngine = app.state.engine
        runtime = SearchRuntime(model, await has_pgvector(engine), floor, model_cache=model_cache)
        if engine.dialect.name == "postgresql" and not runtime.pgvector:
            log.warning(
                "pgvector is not installed in this database: the semantic arm scans the"
                " admitted memos' vectors exactly (in process), which grows with the"
                " number of memos a caller sees"
            )
        app.state.search = runtime
        stop = asyncio.Event()
        warming = asyncio.create_task(runtime.warm(engine))

        jobs = contextlib.AsyncExitStack()
        if worker:
            await jobs.enter_async_context(_embedding_lease(engine, runtime, stop, lease_ms))
        try:
            yield
        finally:
            stop.set()
            await jobs.aclose()
            warming.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await warming

    return lifespan
