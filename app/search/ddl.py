"""DDL of the search indexes (``daybook reindex``; migrations 0004 and 0007 froze copies).

SQLite:

- ``memo_fts``: an FTS5 external-content table over ``memo.content`` with
  ``porter unicode61 remove_diacritics 2`` (English stemming, accents folded),
  kept in step by triggers in the writer's own transaction. It indexes the raw
  content, so FTS5's ``'rebuild'`` command is a valid rebuild.
- ``memo_embedding``: one vector per memo (float16 blob), stamped with model,
  dimension and a hash of the content it was computed from.

PostgreSQL:

- ``memo_tsv``: each memo's ``to_tsvector('simple', left(content, 65536))``
  (``PG_TSVECTOR``), written by triggers with the memo, and its GIN index
  (migration 0019). Until then a GIN expression index on ``memo`` found the
  matches, and ranking parsed every match's content again (decision 0046).
  No column is added to ``memo``: that would rewrite the table. Migration
  0020 adds a GIN expression index on ``daybook_tsv_repeated(tsv)``, the
  words a memo holds at least twice, for one-word searches
  (``lexical._repeated_tsquery``).
- ``memo_embedding`` as above (``bytea``) plus, where the ``vector``
  extension is available, a ``halfvec`` column and an HNSW index per
  dimension (a partial expression index, so models of other sizes coexist).

On both, a trigger deletes a memo's vector when its content changes, so a
stale vector is never ranked; the worker then embeds it again.
"""

from __future__ import annotations

FTS_TOKENIZE = "porter unicode61 remove_diacritics 2"
HNSW_DIMS = (384,)

_EMBEDDING_TABLE = [
    "CREATE TABLE memo_embedding ("
    " memo_id INTEGER NOT NULL PRIMARY KEY REFERENCES memo (id) ON DELETE CASCADE,"
    " model VARCHAR(128) NOT NULL,"
    " dim INTEGER NOT NULL,"
    " vector {blob} NOT NULL,"
    " content_hash BIGINT NOT NULL,"
    " updated_ts BIGINT NOT NULL)",
    "CREATE INDEX ix_memo_embedding_model ON memo_embedding (model, memo_id)",
]

SQLITE_FTS = [
    "CREATE VIRTUAL TABLE memo_fts USING fts5("
    f"content, content='memo', content_rowid='id', tokenize='{FTS_TOKENIZE}')",
    "INSERT INTO memo_fts(memo_fts) VALUES ('rebuild')",
    "CREATE TRIGGER memo_fts_ai AFTER INSERT ON memo BEGIN "
    "INSERT INTO memo_fts(rowid, content) VALUES (new.id, new.content); END",
    "CREATE TRIGGER memo_fts_ad AFTER DELETE ON memo BEGIN "
    "INSERT INTO memo_fts(memo_fts, rowid, content) VALUES ('delete', old.id, old.content); END",
    "CREATE TRIGGER memo_fts_au AFTER UPDATE OF content ON memo BEGIN "
    "INSERT INTO memo_fts(memo_fts, rowid, content) VALUES ('delete', old.id, old.content); "
    "INSERT INTO memo_fts(rowid, content) VALUES (new.id, new.content); END",
]

# SQLite: every write to ``memo_embedding`` (insert, upsert, delete by the
# staleness trigger or a cascade) appends the memo id to a log, in the
# writer's transaction. Each process keeps all current vectors in memory and
# replays the log from the last ``seq`` it saw (``semantic.sync_cache``), so
# another process's write is seen at the next query for the cost of one
# primary-key range read. The worker prunes old entries (``worker.LOG_KEEP``).
SQLITE_EMBEDDING_LOG = [
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
]

_SQLITE_UP = [
    *SQLITE_FTS,
    *(s.format(blob="BLOB") for s in _EMBEDDING_TABLE),
    *SQLITE_EMBEDDING_LOG,
    "CREATE TRIGGER memo_embedding_stale AFTER UPDATE OF content ON memo "
    "WHEN old.content IS NOT new.content BEGIN "
    "DELETE FROM memo_embedding WHERE memo_id = old.id; END",
]
_SQLITE_DOWN = [
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

# PostgreSQL refuses a tsvector over 1 MiB ("string is too long for tsvector"),
# and since the index is an expression index that refusal was the memo's
# INSERT failing: a 500 for any memo of about half a mebibyte of distinct words.
# Only the first FTS_PREFIX_CHARS characters are indexed (and ranked): the worst
# text measured (hyphenated one-letter words of 4-byte letters) makes about 9
# bytes of tsvector per character, so 64 Ki characters stay near 0.6 MiB, far
# from the limit, whatever the content (decision 0017). Lexical search on
# PostgreSQL therefore does not see words past that prefix; SQLite's FTS5 has
# no such limit. Migration 0009 rebuilt the index with this expression.
FTS_PREFIX_CHARS = 65536
PG_TSVECTOR = f"to_tsvector('simple'::regconfig, left(content, {FTS_PREFIX_CHARS}))"
# ``daybook reindex``: every memo's stored tsvector computed again (migration 0019
# keeps them with triggers; this is for a changed text-search configuration).
PG_TSV_REBUILD = (
    f"INSERT INTO memo_tsv (memo_id, tsv) SELECT id, {PG_TSVECTOR} FROM memo"  # noqa: S608 (constants only)
    " ON CONFLICT (memo_id) DO UPDATE SET tsv = EXCLUDED.tsv"
)

_PG_UP = [
    f"CREATE INDEX ix_memo_content_tsv ON memo USING gin ({PG_TSVECTOR})",
    *(s.format(blob="BYTEA") for s in _EMBEDDING_TABLE),
    "CREATE FUNCTION daybook_memo_embedding_stale() RETURNS trigger LANGUAGE plpgsql AS $$ "
    "BEGIN DELETE FROM memo_embedding WHERE memo_id = OLD.id; RETURN NULL; END $$",
    "CREATE TRIGGER memo_embedding_stale AFTER UPDATE OF content ON memo FOR EACH ROW "
    "WHEN (OLD.content IS DISTINCT FROM NEW.content) "
    "EXECUTE FUNCTION daybook_memo_embedding_stale()",
]
PG_VECTOR = [
    "CREATE EXTENSION IF NOT EXISTS vector",
    "ALTER TABLE memo_embedding ADD COLUMN embedding halfvec",
    *(
        f"CREATE INDEX ix_memo_embedding_hnsw_{d} ON memo_embedding "
        f"USING hnsw ((embedding::halfvec({d})) halfvec_cosine_ops) WHERE dim = {d}"
        for d in HNSW_DIMS
    ),
]
# The vector extension stays installed: dropping it could break other objects.
_PG_DOWN = [
    "DROP TRIGGER IF EXISTS memo_embedding_stale ON memo",
    "DROP FUNCTION IF EXISTS daybook_memo_embedding_stale()",
    "DROP TABLE IF EXISTS memo_embedding",
    "DROP INDEX IF EXISTS ix_memo_content_tsv",
]


# The worker's to-do list: a memo is queued, in the writer's transaction, when
# it is created or its content changes, and leaves the queue in the
# transaction that stores its vector (``worker.store_vectors``). The worker
# then reads its next batch by primary key instead of anti-joining every memo
# with its vector, and "how many of the memos I can see are not embedded
# yet" is a join with this (usually empty) table. Migration 0007.
QUEUE_TABLE = (
    "CREATE TABLE memo_embedding_queue ("
    " memo_id INTEGER NOT NULL PRIMARY KEY REFERENCES memo (id) ON DELETE CASCADE)"
)
QUEUE_BACKFILL = (
    "INSERT INTO memo_embedding_queue (memo_id) SELECT id FROM memo WHERE NOT EXISTS"
    " (SELECT 1 FROM memo_embedding e WHERE e.memo_id = memo.id)"
)
_SQLITE_QUEUE_UP = [
    QUEUE_TABLE,
    "CREATE TRIGGER memo_embedding_queue_ai AFTER INSERT ON memo BEGIN "
    "INSERT OR IGNORE INTO memo_embedding_queue (memo_id) VALUES (new.id); END",
    "CREATE TRIGGER memo_embedding_queue_au AFTER UPDATE OF content ON memo "
    "WHEN old.content IS NOT new.content BEGIN "
    "INSERT OR IGNORE INTO memo_embedding_queue (memo_id) VALUES (new.id); END",
    QUEUE_BACKFILL,
]
_SQLITE_QUEUE_DOWN = [
    "DROP TRIGGER IF EXISTS memo_embedding_queue_au",
    "DROP TRIGGER IF EXISTS memo_embedding_queue_ai",
    "DROP TABLE IF EXISTS memo_embedding_queue",
]
_PG_QUEUE_UP = [
    QUEUE_TABLE,
    "CREATE FUNCTION daybook_memo_embedding_enqueue() RETURNS trigger LANGUAGE plpgsql AS $$ "
    "BEGIN INSERT INTO memo_embedding_queue (memo_id) VALUES (NEW.id) "
    "ON CONFLICT (memo_id) DO NOTHING; RETURN NULL; END $$",
    "CREATE TRIGGER memo_embedding_queue_ai AFTER INSERT ON memo FOR EACH ROW "
    "EXECUTE FUNCTION daybook_memo_embedding_enqueue()",
    "CREATE TRIGGER memo_embedding_queue_au AFTER UPDATE OF content ON memo FOR EACH ROW "
    "WHEN (OLD.content IS DISTINCT FROM NEW.content) "
    "EXECUTE FUNCTION daybook_memo_embedding_enqueue()",
    QUEUE_BACKFILL,
]
_PG_QUEUE_DOWN = [
    "DROP TRIGGER IF EXISTS memo_embedding_queue_au ON memo",
    "DROP TRIGGER IF EXISTS memo_embedding_queue_ai ON memo",
    "DROP FUNCTION IF EXISTS daybook_memo_embedding_enqueue()",
    "DROP TABLE IF EXISTS memo_embedding_queue",
]


def queue_ddl(dialect_name: str) -> list[str]:
    """Statements creating and filling the embedding queue (migration 0007)."""
    return list(_SQLITE_QUEUE_UP if dialect_name == "sqlite" else _PG_QUEUE_UP)


def queue_drop_ddl(dialect_name: str) -> list[str]:
    return list(_SQLITE_QUEUE_DOWN if dialect_name == "sqlite" else _PG_QUEUE_DOWN)


def search_ddl(dialect_name: str) -> list[str]:
    """Statements creating the search indexes (PostgreSQL: without pgvector, see ``PG_VECTOR``)."""
    return list(_SQLITE_UP if dialect_name == "sqlite" else _PG_UP)


def search_drop_ddl(dialect_name: str) -> list[str]:
    return list(_SQLITE_DOWN if dialect_name == "sqlite" else _PG_DOWN)
