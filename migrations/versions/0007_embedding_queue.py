"""The embedding queue: memos waiting for a vector, kept by triggers.

Until this revision the worker found its work by anti-joining every memo with
its vector (a scan of the whole table every poll, also when nothing was
pending), and a search counted the caller's pending memos the same way.
``memo_embedding_queue`` holds the ids instead: triggers add a memo when it
is created or its content changes, in the writer's transaction, and the
worker removes it in the transaction that stores the vector. Filled here with
every memo that has no vector yet.

The statements are frozen here as they were when this revision shipped; the
live module ``app.search.ddl`` may change without rewriting history.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

QUEUE_TABLE = (
    "CREATE TABLE memo_embedding_queue ("
    " memo_id INTEGER NOT NULL PRIMARY KEY REFERENCES memo (id) ON DELETE CASCADE)"
)
QUEUE_BACKFILL = (
    "INSERT INTO memo_embedding_queue (memo_id) SELECT id FROM memo WHERE NOT EXISTS"
    " (SELECT 1 FROM memo_embedding e WHERE e.memo_id = memo.id)"
)
SQLITE_UP = [
    QUEUE_TABLE,
    "CREATE TRIGGER memo_embedding_queue_ai AFTER INSERT ON memo BEGIN "
    "INSERT OR IGNORE INTO memo_embedding_queue (memo_id) VALUES (new.id); END",
    "CREATE TRIGGER memo_embedding_queue_au AFTER UPDATE OF content ON memo "
    "WHEN old.content IS NOT new.content BEGIN "
    "INSERT OR IGNORE INTO memo_embedding_queue (memo_id) VALUES (new.id); END",
    QUEUE_BACKFILL,
]
SQLITE_DOWN = [
    "DROP TRIGGER IF EXISTS memo_embedding_queue_au",
    "DROP TRIGGER IF EXISTS memo_embedding_queue_ai",
    "DROP TABLE IF EXISTS memo_embedding_queue",
]
PG_UP = [
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
PG_DOWN = [
    "DROP TRIGGER IF EXISTS memo_embedding_queue_au ON memo",
    "DROP TRIGGER IF EXISTS memo_embedding_queue_ai ON memo",
    "DROP FUNCTION IF EXISTS daybook_memo_embedding_enqueue()",
    "DROP TABLE IF EXISTS memo_embedding_queue",
]


def upgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    for statement in SQLITE_UP if sqlite else PG_UP:
        op.execute(statement)


def downgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    for statement in SQLITE_DOWN if sqlite else PG_DOWN:
        op.execute(statement)
