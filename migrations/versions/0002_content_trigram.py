"""Trigram index for content.contains (SQLite FTS5 trigram / PostgreSQL pg_trgm).

The statements are frozen here as they were when this revision shipped; the
live module ``app.filter.ddl`` may change without rewriting history.

SQLite: an FTS5 ``trigram`` table over ``daybook_fold(content)``, filled by
the ``INSERT ... SELECT`` below and kept by triggers (never by FTS5's
``'rebuild'``, which would read the unfolded column). ``daybook_fold`` is the
SQL function every Daybook SQLite connection has, the migration's included
(``app.db.migrate`` registers it).

PostgreSQL: ``pg_trgm`` and a GIN index on ``lower(content)``.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

SQLITE_UP = [
    "CREATE VIRTUAL TABLE memo_trgm USING fts5("
    "content, content='memo', content_rowid='id', tokenize='trigram')",
    "INSERT INTO memo_trgm(rowid, content) SELECT id, daybook_fold(content) FROM memo",
    "CREATE TRIGGER memo_trgm_ai AFTER INSERT ON memo BEGIN "
    "INSERT INTO memo_trgm(rowid, content) VALUES (new.id, daybook_fold(new.content)); END",
    "CREATE TRIGGER memo_trgm_ad AFTER DELETE ON memo BEGIN "
    "INSERT INTO memo_trgm(memo_trgm, rowid, content) "
    "VALUES ('delete', old.id, daybook_fold(old.content)); END",
    "CREATE TRIGGER memo_trgm_au AFTER UPDATE OF content ON memo BEGIN "
    "INSERT INTO memo_trgm(memo_trgm, rowid, content) "
    "VALUES ('delete', old.id, daybook_fold(old.content)); "
    "INSERT INTO memo_trgm(rowid, content) VALUES (new.id, daybook_fold(new.content)); END",
]
SQLITE_DOWN = [
    "DROP TRIGGER IF EXISTS memo_trgm_au",
    "DROP TRIGGER IF EXISTS memo_trgm_ad",
    "DROP TRIGGER IF EXISTS memo_trgm_ai",
    "DROP TABLE IF EXISTS memo_trgm",
]
PG_UP = [
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    "CREATE INDEX IF NOT EXISTS ix_memo_content_trgm "
    "ON memo USING gin (lower(content) gin_trgm_ops)",
]
# The extension stays: other features (search) may rely on it.
PG_DOWN = ["DROP INDEX IF EXISTS ix_memo_content_trgm"]


def upgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    for statement in SQLITE_UP if sqlite else PG_UP:
        op.execute(statement)


def downgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    for statement in SQLITE_DOWN if sqlite else PG_DOWN:
        op.execute(statement)
