"""The search tables as Core objects for queries (created by migration 0004, see ``ddl``).

They live on their own ``MetaData``: ``memo_fts`` is an FTS5 virtual table
and ``memo_embedding``'s ``halfvec`` column exists only where pgvector does,
so neither belongs in ``app.db.schema.metadata``, which the migration tests
compare column by column with the live database.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import TSVECTOR
from sqlalchemy.types import UserDefinedType

search_metadata = sa.MetaData()


class HalfVec(UserDefinedType[Any]):
    """pgvector's ``halfvec(dim)``; values are sent as text and cast in SQL."""

    cache_ok = True

    def __init__(self, dim: int | None = None) -> None:
        self.dim = dim

    def get_col_spec(self, **_: Any) -> str:
        return f"halfvec({self.dim})" if self.dim else "halfvec"


def _embedding_columns() -> list[sa.Column[Any]]:
    return [
        sa.Column("memo_id", sa.Integer, primary_key=True),
        sa.Column("model", sa.String(128), nullable=False),
        sa.Column("dim", sa.Integer, nullable=False),
        sa.Column("vector", sa.LargeBinary, nullable=False),  # float16, little-endian
        sa.Column("content_hash", sa.BigInteger, nullable=False),  # vectors.content_hash
        sa.Column("updated_ts", sa.BigInteger, nullable=False),
    ]


memo_embedding = sa.Table("memo_embedding", search_metadata, *_embedding_columns())

# The same table seen with its pgvector column (PostgreSQL with the extension only).
memo_embedding_pgvector = sa.Table(
    "memo_embedding",
    sa.MetaData(),
    *_embedding_columns(),
    sa.Column("embedding", HalfVec(), nullable=True),
)

# Memos waiting for a vector (migration 0007, kept by triggers).
memo_embedding_queue = sa.Table(
    "memo_embedding_queue",
    search_metadata,
    sa.Column("memo_id", sa.Integer, primary_key=True),
)

memo_fts = sa.table("memo_fts", sa.column("rowid", sa.Integer))

# PostgreSQL: each memo's tsvector, kept by triggers (migration 0019,
# ``ddl.PG_TSVECTOR``), so that ranking reads it instead of parsing the content.
memo_tsv = sa.Table(
    "memo_tsv",
    search_metadata,
    sa.Column("memo_id", sa.Integer, primary_key=True),
    sa.Column("tsv", TSVECTOR, nullable=False),
)
