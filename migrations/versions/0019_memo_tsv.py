"""PostgreSQL: each memo's tsvector stored in ``memo_tsv``, so ranking reads it instead of parsing.

The lexical arm ranks every memo matching the query with ``ts_rank_cd``,
which needs the memo's tsvector. ``ix_memo_content_tsv`` (0004, bounded in
0009) was an expression index: it found the matches, but PostgreSQL recomputed
``to_tsvector`` from the content of every match to rank it. With 22,000
memos and a word in 5,000 of them that was 250-330 ms of a search, statistics
or not (decision 0046). ``memo_tsv`` holds the same tsvector
(``to_tsvector('simple', left(content, 65536))``), written by triggers in the
writer's transaction when a memo is created or its content changes, deleted
with the memo, and indexed by GIN; the expression index is dropped.

A table beside ``memo`` rather than a generated column of it: adding a stored
column rewrites ``memo`` under an exclusive lock (4 s at 22,000 memos), and
would about triple its row width for every other reader.

Every step can run again on a database that already has it. The downgrade
rebuilds the expression index and drops the table: the tsvectors are derived
from the content, which stays. SQLite is unchanged (FTS5, ``memo_fts``).

Revision ID: 0019
Revises: 0018
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TSV = "to_tsvector('simple'::regconfig, left({}, 65536))"
PG_UP = [
    "CREATE TABLE IF NOT EXISTS memo_tsv ("
    " memo_id INTEGER NOT NULL PRIMARY KEY REFERENCES memo (id) ON DELETE CASCADE,"
    " tsv tsvector NOT NULL)",
    "CREATE OR REPLACE FUNCTION daybook_memo_tsv() RETURNS trigger LANGUAGE plpgsql AS $$ "
    "BEGIN INSERT INTO memo_tsv (memo_id, tsv) VALUES (NEW.id, "
    + _TSV.format("NEW.content")
    + ") ON CONFLICT (memo_id) DO UPDATE SET tsv = EXCLUDED.tsv; RETURN NULL; END $$",
    "DROP TRIGGER IF EXISTS memo_tsv_ai ON memo",
    "CREATE TRIGGER memo_tsv_ai AFTER INSERT ON memo FOR EACH ROW "
    "EXECUTE FUNCTION daybook_memo_tsv()",
    "DROP TRIGGER IF EXISTS memo_tsv_au ON memo",
    "CREATE TRIGGER memo_tsv_au AFTER UPDATE OF content ON memo FOR EACH ROW "
    "WHEN (OLD.content IS DISTINCT FROM NEW.content) EXECUTE FUNCTION daybook_memo_tsv()",
    "INSERT INTO memo_tsv (memo_id, tsv) SELECT id, "
    + _TSV.format("content")
    + " FROM memo ON CONFLICT (memo_id) DO UPDATE SET tsv = EXCLUDED.tsv",
    "CREATE INDEX IF NOT EXISTS ix_memo_tsv ON memo_tsv USING gin (tsv)",
    "DROP INDEX IF EXISTS ix_memo_content_tsv",
]
PG_DOWN = [
    "CREATE INDEX IF NOT EXISTS ix_memo_content_tsv ON memo USING gin ("
    + _TSV.format("content")
    + ")",
    "DROP TRIGGER IF EXISTS memo_tsv_au ON memo",
    "DROP TRIGGER IF EXISTS memo_tsv_ai ON memo",
    "DROP FUNCTION IF EXISTS daybook_memo_tsv()",
    "DROP TABLE IF EXISTS memo_tsv",
]


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        for statement in PG_UP:
            op.execute(statement)
        # Statistics for a backfilled table now: the periodic check
        # (app.db.statistics) looks at memo's row count only, and autovacuum
        # would come a minute or more later. An empty table is left as a
        # fresh install's (never analysed), so that the test databases emptied
        # for reuse (tests.pg_recycle) match the template exactly.
        if bind.exec_driver_sql("SELECT EXISTS (SELECT 1 FROM memo_tsv)").scalar():
            op.execute("ANALYZE memo_tsv")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for statement in PG_DOWN:
            op.execute(statement)
