"""DDL for the substring index behind ``content.contains`` (tests, bench).

Migration 0002 keeps its own frozen copy of these statements.

SQLite: an FTS5 ``trigram`` table over ``daybook_fold(content)`` (the same
fold the filter applies, so a trigram MATCH on the folded needle never misses
a row the exact predicate would keep). It is an external-content table keyed
by ``memo.id``, but it indexes the *folded* text, so it must be filled by the
triggers and the explicit ``INSERT ... SELECT`` below, never by FTS5's
``'rebuild'`` command (which would read the unfolded column). The triggers
call the ``daybook_fold`` UDF, so every SQLite connection that writes ``memo``
needs ``app.db.sqlite_functions.register``.

PostgreSQL: ``pg_trgm`` and a GIN index on ``lower(content)``, the exact
expression the renderer emits.
"""

from __future__ import annotations

_SQLITE_UP = [
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
_SQLITE_DOWN = [
    "DROP TRIGGER IF EXISTS memo_trgm_au",
    "DROP TRIGGER IF EXISTS memo_trgm_ad",
    "DROP TRIGGER IF EXISTS memo_trgm_ai",
    "DROP TABLE IF EXISTS memo_trgm",
]
_PG_UP = [
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    "CREATE INDEX IF NOT EXISTS ix_memo_content_trgm "
    "ON memo USING gin (lower(content) gin_trgm_ops)",
]
# The extension stays: other features (search) may rely on it.
_PG_DOWN = ["DROP INDEX IF EXISTS ix_memo_content_trgm"]


def content_index_ddl(dialect_name: str) -> list[str]:
    """Statements that create the content substring index for ``dialect_name``."""
    return list(_SQLITE_UP if dialect_name == "sqlite" else _PG_UP)


def content_index_drop_ddl(dialect_name: str) -> list[str]:
    """Statements that remove what ``content_index_ddl`` created."""
    return list(_SQLITE_DOWN if dialect_name == "sqlite" else _PG_DOWN)
