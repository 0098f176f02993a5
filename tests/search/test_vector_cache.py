"""SQLite's in-memory vector matrix: kept in step across processes, and exact.

``sync_cache`` replays ``memo_embedding_log``; two ``VectorCache`` objects on
one database file stand for two server processes. ``walk_ranking`` must give
exactly the top-``pool`` admitted memos by similarity (what the admitted-ids
scan of ``exact_ranking`` gives), or decline so the caller falls back to it.
"""

from __future__ import annotations

import pathlib
from collections.abc import AsyncIterator
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from app.db.engine import create_engine
from app.db.migrate import upgrade
from app.db.schema import memo, user_account
from app.search import cache_sync, semantic, worker
from app.search.embedder import HashingEmbedder
from app.search.semantic import exact_ranking, queued_count, sync_cache, walk_ranking
from app.search.tables import memo_embedding
from app.search.vectors import VectorCache
from app.search.worker import embed_pending

EMBEDDER = HashingEmbedder(32, "hash-32")
WORDS = [
    "apple",
    "river",
    "stone",
    "cloud",
    "maple",
    "harbor",
    "violet",
    "ember",
    "quartz",
    "meadow",
    "lantern",
    "cedar",
]


def _text(i: int) -> str:
    # a few exact duplicates, so equal scores (ties) occur
    j = i % 450
    return " ".join(WORDS[(j * k + k) % len(WORDS)] for k in range(1, 4)) + f" n{j}"


@pytest.fixture
async def engine(tmp_path: pathlib.Path) -> AsyncIterator[AsyncEngine]:
    eng = create_engine(f"sqlite:///{tmp_path / 'cache.db'}")
    await upgrade(eng)
    async with eng.begin() as conn:
        await conn.execute(
            user_account.insert(),
            [
                {
                    "id": u,
                    "username": f"u{u}",
                    "role": "USER",
                    "state": "NORMAL",
                    "password_hash": "x",
                    "created_ts": 0,
                    "updated_ts": 0,
                }
                for u in (1, 2)
            ],
        )
        await conn.execute(
            memo.insert(),
            [
                {
                    "id": i,
                    "uid": f"m{i}",
                    "creator_id": 1,
                    "content": _text(i),
                    "visibility": "PRIVATE",
                    "state": "NORMAL",
                    "created_ts": i,
                    "updated_ts": i,
                    "origin": {"kind": "session"},
                }
                for i in range(1, 2001)
            ],
        )
    await embed_pending(eng, EMBEDDER, False, batch_size=500)
    yield eng
    await eng.dispose()


async def _truth(engine: AsyncEngine) -> dict[int, int]:
    async with engine.connect() as conn:
        rows = await conn.execute(
            sa.select(memo_embedding.c.memo_id, memo_embedding.c.content_hash)
        )
        return {int(i): int(k) for i, k in rows}


def _cached(cache: VectorCache) -> set[int]:
    ids, _ = cache.score_all(np.ones(cache.dim, dtype=np.float32))
    return set(ids.tolist())


async def test_a_write_by_another_process_is_seen_at_the_next_sync(engine: AsyncEngine) -> None:
    mine, theirs = VectorCache(EMBEDDER.dim), VectorCache(EMBEDDER.dim)
    async with engine.connect() as conn:
        await sync_cache(conn, mine, EMBEDDER.name, EMBEDDER.dim)
        await sync_cache(conn, theirs, EMBEDDER.name, EMBEDDER.dim)
    assert _cached(mine) == set(await _truth(engine))
    # "theirs" edits a memo (the trigger drops its vector), deletes another
    # and a vector of a second model is written: none of it through "mine".
    async with engine.begin() as conn:
        await conn.execute(memo.update().where(memo.c.id == 5).values(content="brand new words"))
        await conn.execute(memo.delete().where(memo.c.id == 6))
        await conn.execute(memo_embedding.delete().where(memo_embedding.c.memo_id == 7))
    other = HashingEmbedder(32, "hash-other")
    await embed_pending(engine, other, False, batch_size=500, max_batches=1)
    async with engine.connect() as conn:
        await sync_cache(conn, mine, EMBEDDER.name, EMBEDDER.dim)
    assert _cached(mine) == set(await _truth(engine)) - set(
        await _other_model_ids(engine, other.name)
    )
    assert not {5, 6, 7} & _cached(mine)
    # re-embedding memo 5 with the current model shows up with its new vector
    await embed_pending(engine, EMBEDDER, False)
    async with engine.connect() as conn:
        await sync_cache(conn, mine, EMBEDDER.name, EMBEDDER.dim)
    assert {5, 7} <= _cached(mine)
    fresh = EMBEDDER.embed_query("brand new words")
    ids, scores = mine.score_all(fresh)
    assert int(ids[int(np.argmax(scores))]) == 5


async def _other_model_ids(engine: AsyncEngine, model: str) -> list[int]:
    async with engine.connect() as conn:
        e = memo_embedding
        return list(
            (await conn.execute(sa.select(e.c.memo_id).where(e.c.model == model))).scalars()
        )


async def test_a_cache_behind_the_pruned_log_reloads(
    engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = VectorCache(EMBEDDER.dim)
    async with engine.connect() as conn:
        await sync_cache(conn, cache, EMBEDDER.name, EMBEDDER.dim)
    monkeypatch.setattr(worker, "LOG_KEEP", 3)
    async with engine.begin() as conn:
        await conn.execute(memo.update().where(memo.c.id <= 20).values(content="pruned away"))
    await embed_pending(engine, EMBEDDER, False, batch_size=8)
    async with engine.connect() as conn:
        oldest = (await conn.exec_driver_sql("SELECT min(seq) FROM memo_embedding_log")).scalar()
        assert oldest is not None and oldest > (cache.synced_seq or 0) + 1
        await sync_cache(conn, cache, EMBEDDER.name, EMBEDDER.dim)
    ids, scores = cache.score_all(EMBEDDER.embed_query("pruned away"))
    best = set(ids[scores >= scores.max() - 1e-6].tolist())
    assert best == set(range(1, 21))


@pytest.mark.parametrize("modulus", [1, 2, 7, 60, 400, 5000])
async def test_walk_equals_the_admitted_scan(engine: AsyncEngine, modulus: int) -> None:
    """Any admitted share: the walk (or its fallback) ranks exactly what the scan ranks."""
    admitted: list[Any] = [memo.c.id % modulus == 0, memo.c.state == "NORMAL"]
    walked_cache, scan_cache = VectorCache(EMBEDDER.dim), VectorCache(EMBEDDER.dim)
    async with engine.connect() as conn:
        await sync_cache(conn, walked_cache, EMBEDDER.name, EMBEDDER.dim)
        for text in ("apple river", "quartz meadow lantern n17", "ember"):
            q = EMBEDDER.embed_query(text)
            for pool in (5, 50):
                expected, covered = await exact_ranking(
                    conn, scan_cache, EMBEDDER.name, q, admitted, pool
                )
                got = await walk_ranking(conn, walked_cache, EMBEDDER.name, q, admitted, pool)
                if got is None:  # declined: the service falls back to the scan
                    assert modulus > 1, (modulus, pool)
                    continue
                assert got == expected or len(got) == len(expected), (modulus, text, pool)
                # equal up to the order of equal similarities (float rounding of ties)
                sim = dict(zip(*(a.tolist() for a in walked_cache.score_all(q)), strict=True))
                assert [round(sim[i], 5) for i in got] == [round(sim[i], 5) for i in expected]
                assert len(set(got)) == len(got)
                assert all(i % modulus == 0 for i in got)
                pending = await queued_count(conn, admitted)
                assert pending == covered.pending == 0


async def test_the_walk_is_used_when_most_memos_are_admitted(engine: AsyncEngine) -> None:
    cache = VectorCache(EMBEDDER.dim)
    admitted: list[Any] = [memo.c.id % 2 == 0]
    async with engine.connect() as conn:
        await sync_cache(conn, cache, EMBEDDER.name, EMBEDDER.dim)
        got = await walk_ranking(
            conn, cache, EMBEDDER.name, EMBEDDER.embed_query("cedar"), admitted, 50
        )
    assert got is not None and len(got) == 50
    assert semantic.WALK_WINDOW >= 100


async def test_a_sync_reads_only_what_changed_and_decodes_off_the_event_loop(
    engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 15: the SQLite cache syncs from its high-water mark (``synced_seq``):
    after one memo's vector changes, the next sync reads that memo's row only;
    and decoding never runs on the event loop's thread, where every list
    request of the process would wait for it."""
    import threading

    loop_thread = threading.get_ident()
    decoded_on: list[int] = []
    real = cache_sync.decode_many

    def spy(blobs: list[bytes], dim: int) -> Any:
        decoded_on.append(threading.get_ident())
        return real(blobs, dim)

    monkeypatch.setattr(cache_sync, "decode_many", spy)
    cache = VectorCache(EMBEDDER.dim)
    async with engine.connect() as conn:
        await sync_cache(conn, cache, EMBEDDER.name, EMBEDDER.dim)
    assert len(cache) == 2000 and decoded_on and loop_thread not in decoded_on
    high_water = cache.synced_seq
    async with engine.begin() as conn:
        await conn.execute(memo.update().where(memo.c.id == 9).values(content="changed words"))
    await embed_pending(engine, EMBEDDER, False)
    statements: list[tuple[str, Any]] = []

    def record(_c: Any, _cur: Any, statement: str, params: Any, *_: Any) -> None:
        statements.append((statement, params))

    sa.event.listen(engine.sync_engine, "before_cursor_execute", record)
    try:
        decoded_on.clear()
        async with engine.connect() as conn:
            await sync_cache(conn, cache, EMBEDDER.name, EMBEDDER.dim)
    finally:
        sa.event.remove(engine.sync_engine, "before_cursor_execute", record)
    assert cache.synced_seq is not None and high_water is not None
    assert cache.synced_seq > high_water
    reads = [(s, p) for s, p in statements if "FROM memo_embedding " in s + " "]
    assert len(reads) == 1 and 9 in reads[0][1], reads  # the changed memo's row only
    assert decoded_on and loop_thread not in decoded_on


def _cut(cache: VectorCache, q: Any, count: int) -> list[tuple[float, int]]:
    """Every vector at least as similar as the ``count``-th best, from the full product."""
    ids, scores = cache.score_all(q)
    if len(scores) > count:
        bar = np.partition(scores, len(scores) - count)[len(scores) - count]
        ids, scores = ids[scores >= bar], scores[scores >= bar]
    return sorted(zip(scores.tolist(), ids.tolist(), strict=True))


def test_top_is_the_exact_cut_from_the_blas_pass() -> None:
    """Decision 0041: ``top`` scores every row with one BLAS product and rescores
    only the rows its rounding bound cannot rule out; the result must be exactly
    the per-row product's cut (ties at the cut included), for rows stored one by
    one (capacity past the last row), duplicates (ties), and removed rows."""
    rng = np.random.default_rng(37)
    dim, n = 48, 12_000
    base = rng.standard_normal((600, dim)).astype(np.float32) + rng.standard_normal(dim) * 1.5
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    cache = VectorCache(dim)
    cache.exact_below = 0  # always the coarse pass, however small the cache
    picks = rng.integers(0, len(base), n)
    cache.store_many(np.arange(1, 9001), np.zeros(9000, dtype=np.int64), base[picks[:9000]])
    for i in range(9001, n + 1):
        cache.store(i, 0, base[picks[i - 1]])
    for i in rng.choice(n, 300, replace=False):
        cache.remove(int(i) + 1)
    assert len(cache._matrix) > cache._used  # a partial last chunk beyond the rows
    for trial in range(12):
        q = base[trial] + rng.standard_normal(dim).astype(np.float32) * 0.4
        q = (q / np.linalg.norm(q)).astype(np.float32)
        for count in (1, 50, 1024):
            ids, scores = cache.top(q, count)
            got = sorted(zip(scores.tolist(), ids.tolist(), strict=True))
            assert got == _cut(cache, q, count), (trial, count)
    empty = VectorCache(dim)
    assert [len(a) for a in empty.top(base[0], 10)] == [0, 0]


def test_the_rounding_bound_holds_between_blas_and_the_per_row_product() -> None:
    """``top`` keeps a row when its BLAS score is within ``rounding_bound`` of the
    cut; if BLAS and ``similarities`` could differ by more, a row of the true cut
    could be dropped. Checked on unit rows and on rows of norm up to 2 at the
    dimensions of the models Daybook ships (and one larger), on this machine's
    BLAS, with the process on one BLAS thread as the server runs it."""
    from app.search.vectors import one_blas_thread, rounding_bound, similarities

    one_blas_thread()
    rng = np.random.default_rng(41)
    for dim in (64, 384, 768, 1024):
        rows = rng.standard_normal((4096, dim)).astype(np.float32)
        rows /= np.linalg.norm(rows, axis=1, keepdims=True)
        rows[::2] *= 2.0  # the bound scales with the norms
        q = rng.standard_normal(dim).astype(np.float32)
        q /= np.linalg.norm(q)
        apart = np.abs(np.matmul(rows, q) - similarities(rows, q))
        allowed = rounding_bound(dim) * np.linalg.norm(rows, axis=1)
        assert bool((apart <= allowed).all()), (dim, float((apart / allowed).max()))
        assert float(apart.max()) > 0 or dim == 64  # BLAS does sum in another order


def test_the_way_is_chosen_by_the_probed_rate() -> None:
    """Pure: a 1% key goes to the exact scan; a broad caller walks, in one batch."""
    from app.search.walk import WALK_WINDOW, first_batch, worth_walking

    assert not worth_walking(0.01, 100_000, 50)
    assert worth_walking(0.4, 100_000, 50)
    assert worth_walking(0.0, WALK_WINDOW, 50)  # a small cache is walked whole
    assert first_batch(None, 50) == 100
    assert first_batch(1.0, 50) == 100
    assert first_batch(0.4, 50) == 188  # 1.5 x 50 / 0.4: the pool in one statement
    assert first_batch(0.001, 50) == WALK_WINDOW


async def test_the_arm_ranks_what_the_scan_ranks_and_a_narrow_caller_skips_the_full_product(
    engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The arm on SQLite (probe, then walk or exact scan, the coarse pass forced)
    ranks exactly what the admitted-ids scan ranks; a caller admitting 1% of the
    memos never scores every cached vector."""
    tops: list[int] = []
    real_top = VectorCache.top

    def counting(self: VectorCache, q: Any, count: int) -> Any:
        tops.append(count)
        return real_top(self, q, count)

    monkeypatch.setattr(VectorCache, "top", counting)
    monkeypatch.setattr(VectorCache, "exact_below", 0)
    cache, scan_cache = VectorCache(EMBEDDER.dim), VectorCache(EMBEDDER.dim)
    async with engine.connect() as conn:
        await sync_cache(conn, cache, EMBEDDER.name, EMBEDDER.dim)
    for modulus in (1, 3, 100):
        tops.clear()
        admitted: list[Any] = [memo.c.id % modulus == 0, memo.c.state == "NORMAL"]
        await _arm_matches_the_scan(engine, cache, scan_cache, admitted, modulus)
        assert (tops == []) == (modulus == 100), (modulus, tops)


async def _arm_matches_the_scan(
    engine: AsyncEngine,
    cache: VectorCache,
    scan_cache: VectorCache,
    admitted: list[Any],
    modulus: int,
) -> None:
    async with engine.connect() as conn:
        for text in ("apple river", "quartz meadow lantern n17"):
            q = EMBEDDER.embed_query(text)
            arm = await semantic.semantic_arm(
                conn, cache, EMBEDDER.name, EMBEDDER.dim, False, q, admitted, 50
            )
            expected, _ = await exact_ranking(conn, scan_cache, EMBEDDER.name, q, admitted, 50)
            sim = dict(zip(*(a.tolist() for a in cache.score_all(q)), strict=True))
            assert [round(sim[i], 5) for i in arm.ranking] == [round(sim[i], 5) for i in expected]
            assert all(i % modulus == 0 for i in arm.ranking) and arm.pending == 0
