"""``daybook reindex``: rebuild the full-text index and every embedding.

The FTS rebuild is one statement; embeddings are recomputed for every memo
in batches with the configured model (rows of other models are replaced, and
removed at the end if any remain), reporting progress through ``advance``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from app.db.schema import memo
from app.db.transactions import write_transaction
from app.search.ddl import PG_TSV_REBUILD
from app.search.embedder import Embedder
from app.search.runtime import has_pgvector
from app.search.tables import memo_embedding
from app.search.worker import BATCH, embed_text, store_vectors


async def rebuild_fts(engine: AsyncEngine) -> None:
    async with write_transaction(engine) as conn:
        if conn.dialect.name == "sqlite":
            await conn.exec_driver_sql("INSERT INTO memo_fts(memo_fts) VALUES ('rebuild')")
        else:
            # Every memo's tsvector computed again (migration 0019), then its
            # indexes (0020 added the one on its repeated words).
            await conn.exec_driver_sql(PG_TSV_REBUILD)
            await conn.exec_driver_sql("REINDEX TABLE memo_tsv")


async def count_memos(engine: AsyncEngine) -> int:
    async with engine.connect() as conn:
        return int((await conn.execute(sa.select(sa.func.count()).select_from(memo))).scalar_one())


async def reembed_all(
    engine: AsyncEngine, embedder: Embedder, advance: Callable[[int], None], batch: int = BATCH
) -> int:
    pgvector = await has_pgvector(engine)
    last_id = 0
    stored = 0
    while True:
        async with engine.connect() as conn:
            rows = list(
                await conn.execute(
                    sa.select(memo.c.id, memo.c.content)
                    .where(memo.c.id > last_id)
                    .order_by(memo.c.id)
                    .limit(batch)
                )
            )
        if not rows:
            break
        vectors = await asyncio.to_thread(
            embedder.embed_passages, [embed_text(r.content) for r in rows]
        )
        async with write_transaction(engine) as conn:
            stored += await store_vectors(conn, embedder, rows, vectors, pgvector)
        last_id = rows[-1].id
        advance(len(rows))
    e = memo_embedding
    async with write_transaction(engine) as conn:
        other = sa.or_(e.c.model != embedder.name, e.c.dim != embedder.dim)
        await conn.execute(e.delete().where(other))
    return stored
