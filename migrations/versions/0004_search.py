"""Search: FTS5 / tsvector index, the memo_embedding table, pgvector where available.

The statements are frozen here as they were when this revision shipped; the
live module ``app.search.ddl`` may change without rewriting history.

SQLite: ``memo_fts`` (FTS5, external content over ``memo.content``, porter
stemming, accents folded) kept by triggers; ``memo_embedding`` (one float16
blob per memo) with ``memo_embedding_log``, the change log each process
replays into its in-memory vectors. PostgreSQL: a GIN index on
``to_tsvector('simple', content)``, ``memo_embedding`` (``bytea``) and, where
the ``vector`` extension can be created, a ``halfvec`` column with an HNSW
index per dimension. On both, a trigger drops a memo's vector when its
content changes.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import logging

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

log = logging.getLogger("alembic.runtime.migration")

# Rows this downgrade deletes that an upgrade cannot restore (``app.db.migrate``
# asks for confirmation): vectors come back only as the worker recomputes them.
destroys = ("memo_embedding",)

SQLITE_UP = [
    "CREATE VIRTUAL TABLE memo_fts USING fts5("
    "content, content='memo', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2')",
    "INSERT INTO memo_fts(memo_fts) VALUES ('rebuild')",
    "CREATE TRIGGER memo_fts_ai AFTER INSERT ON memo BEGIN "
    "INSERT INTO memo_fts(rowid, content) VALUES (new.id, new.content); END",
    "CREATE TRIGGER memo_fts_ad AFTER DELETE ON memo BEGIN "
    "INSERT INTO memo_fts(memo_fts, rowid, content) VALUES ('delete', old.id, old.content); END",
    "CREATE TRIGGER memo_fts_au AFTER UPDATE OF content ON memo BEGIN "
    "INSERT INTO memo_fts(memo_fts, rowid, content) VALUES ('delete', old.id, old.content); "
    "INSERT INTO memo_fts(rowid, content) VALUES (new.id, new.content); END",
    "CREATE TABLE memo_embedding ("
    " memo_id INTEGER NOT NULL PRIMARY KEY REFERENCES memo (id) ON DELETE CASCADE,"
    " model VARCHAR(128) NOT NULL,"
    " dim INTEGER NOT NULL,"
    " vector BLOB NOT NULL,"
    " content_hash BIGINT NOT NULL,"
    " updated_ts BIGINT NOT NULL)",
    "CREATE INDEX ix_memo_embedding_model ON memo_embedding (model, memo_id)",
    "CREATE TABLE memo_embedding_log ("
    " seq INTEGER PRIMARY KEY AUTOINCREMENT, memo_id INTEGER NOT NULL)",
    "CREATE TRIGGER memo_embedding_log_ai AFTER INSERT ON memo_embedding BEGIN "
    "INSERT INTO memo_embedding_log(memo_id) VALUES (new.memo_id); END",
    "CREATE TRIGGER memo_embedding_log_au AFTER UPDATE ON memo_embedding BEGIN "
    "INSERT INTO memo_embedding_log(memo_id) VALUES (new.memo_id); "
    "INSERT INTO memo_embedding_log(memo_id) SELECT old.memo_id "
    "WHERE old.memo_id <> new.memo_id; END",
    "CREATE TRIGGER memo_embedding_log_ad AFTER DELETE ON memo_embedding BEGIN "
    "INSERT INTO memo_embedding_log(memo_id) VALUES (old.memo_id); END",
    "CREATE TRIGGER memo_embedding_stale AFTER UPDATE OF content ON memo "
    "WHEN old.content IS NOT new.content BEGIN "
    "DELETE FROM memo_embedding WHERE memo_id = old.id; END",
]
SQLITE_DOWN = [
    "DROP TRIGGER IF EXISTS memo_embedding_log_ad",
    "DROP TRIGGER IF EXISTS memo_embedding_log_au",
    "DROP TRIGGER IF EXISTS memo_embedding_log_ai",
    "DROP TABLE IF EXISTS memo_embedding_log",
    "DROP TRIGGER IF EXISTS memo_embedding_stale",
    "DROP TABLE IF EXISTS memo_embedding",
    "DROP TRIGGER IF EXISTS memo_fts_au",
    "DROP TRIGGER IF EXISTS memo_fts_ad",
    "DROP TRIGGER IF EXISTS memo_fts_ai",
    "DROP TABLE IF EXISTS memo_fts",
]
PG_UP = [
    "CREATE INDEX ix_memo_content_tsv ON memo USING gin (to_tsvector('simple'::regconfig, content))",
    "CREATE TABLE memo_embedding ("
    " memo_id INTEGER NOT NULL PRIMARY KEY REFERENCES memo (id) ON DELETE CASCADE,"
    " model VARCHAR(128) NOT NULL,"
    " dim INTEGER NOT NULL,"
    " vector BYTEA NOT NULL,"
    " content_hash BIGINT NOT NULL,"
    " updated_ts BIGINT NOT NULL)",
    "CREATE INDEX ix_memo_embedding_model ON memo_embedding (model, memo_id)",
    "CREATE FUNCTION daybook_memo_embedding_stale() RETURNS trigger LANGUAGE plpgsql AS $$ "
    "BEGIN DELETE FROM memo_embedding WHERE memo_id = OLD.id; RETURN NULL; END $$",
    "CREATE TRIGGER memo_embedding_stale AFTER UPDATE OF content ON memo FOR EACH ROW "
    "WHEN (OLD.content IS DISTINCT FROM NEW.content) "
    "EXECUTE FUNCTION daybook_memo_embedding_stale()",
]
PG_VECTOR = [
    "CREATE EXTENSION IF NOT EXISTS vector",
    "ALTER TABLE memo_embedding ADD COLUMN embedding halfvec",
    "CREATE INDEX ix_memo_embedding_hnsw_384 ON memo_embedding "
    "USING hnsw ((embedding::halfvec(384)) halfvec_cosine_ops) WHERE dim = 384",
]
# The vector extension stays installed: dropping it could break other objects.
PG_DOWN = [
    "DROP TRIGGER IF EXISTS memo_embedding_stale ON memo",
    "DROP FUNCTION IF EXISTS daybook_memo_embedding_stale()",
    "DROP TABLE IF EXISTS memo_embedding",
    "DROP INDEX IF EXISTS ix_memo_content_tsv",
]


def upgrade() -> None:
    bind = op.get_bind()
    sqlite = bind.dialect.name == "sqlite"
    for statement in SQLITE_UP if sqlite else PG_UP:
        op.execute(statement)
    if not sqlite:
        _try_pgvector(bind)


def _try_pgvector(bind: sa.Connection) -> None:
    """pgvector if the server has it and we may create it; else exact scans (logged)."""
    available = bind.execute(
        sa.text("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
    ).first()
    if available is None:
        log.warning("pgvector is not available: semantic search uses an exact scan")
        return
    try:
        with bind.begin_nested():
            for statement in PG_VECTOR:
                bind.execute(sa.text(statement))
    except sa.exc.DBAPIError as exc:
        log.warning("pgvector could not be enabled (%s): semantic search uses an exact scan", exc)


def downgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    for statement in SQLITE_DOWN if sqlite else PG_DOWN:
        op.execute(statement)
