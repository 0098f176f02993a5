"""PostgreSQL: a GIN index on the words each memo holds at least twice (``ix_memo_tsv_repeated``).

A one-word search ranks with ``ts_rank_cd``, which for one lexeme and
``to_tsvector``'s single weight is 0.1 times the number of positions the
word has in the memo. So a memo holding the word twice or more always ranks
above one holding it once. When at least ``pool`` admitted memos hold it
twice or more, the page is among them, and the lexical arm can rank those
alone instead of every memo containing the word (a word of the benchmark's
vocabulary is in about 23,000 of 100,000 memos; it is repeated in about
3,400 of them). Decision 0046, "One-word searches".

``daybook_tsv_repeated(tsv)`` is the tsvector of those words (no positions),
an immutable SQL function of the stored tsvector; the index is an expression
index on ``memo_tsv``, so no column, no trigger and no rewrite of ``memo`` or
``memo_tsv``. Every step can run again (``CREATE OR REPLACE``, ``IF NOT
EXISTS``). The downgrade drops the index and the function. SQLite is
unchanged (FTS5 ranks with ``bm25``).

Revision ID: 0020
Revises: 0019
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

PG_UP = [
    "CREATE OR REPLACE FUNCTION daybook_tsv_repeated(tsvector) RETURNS tsvector"
    " LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS"
    " $$ SELECT array_to_tsvector(coalesce(array_agg(u.lexeme), '{}'))"
    " FROM unnest($1) AS u WHERE cardinality(u.positions) >= 2 $$",
    "CREATE INDEX IF NOT EXISTS ix_memo_tsv_repeated ON memo_tsv"
    " USING gin (daybook_tsv_repeated(tsv))",
]
PG_DOWN = [
    "DROP INDEX IF EXISTS ix_memo_tsv_repeated",
    "DROP FUNCTION IF EXISTS daybook_tsv_repeated(tsvector)",
]


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        for statement in PG_UP:
            op.execute(statement)
        # Statistics of the new expression for the planner (as 0019 does for the
        # table): an empty table is left unanalysed, as a fresh install's.
        if bind.exec_driver_sql("SELECT EXISTS (SELECT 1 FROM memo_tsv)").scalar():
            op.execute("ANALYZE memo_tsv")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for statement in PG_DOWN:
            op.execute(statement)
