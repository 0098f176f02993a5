"""The embedding queue: memos waiting for a vector, kept by triggers.

Until this revision the worker found its work by anti-joining every memo with
its vector (a scan of the whole table every poll, also when nothing was
pending), and a search counted the caller's pending memos the same way.
``memo_embedding_queue`` holds the ids instead: triggers add a memo when it
is created or its content changes, in the writer's transaction, and the
worker removes it in the transaction that stores the vector. Filled here with
every memo that has no vector yet. See ``app.search.ddl``.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

from app.search.ddl import queue_ddl, queue_drop_ddl

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    for statement in queue_ddl(op.get_bind().dialect.name):
        op.execute(statement)


def downgrade() -> None:
    for statement in queue_drop_ddl(op.get_bind().dialect.name):
        op.execute(statement)
