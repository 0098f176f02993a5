"""Trigram index for content.contains (SQLite FTS5 trigram / PostgreSQL pg_trgm).

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

from alembic import op

from app.db.sqlite_functions import register
from app.filter.ddl import content_index_ddl, content_index_drop_ddl

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        # The backfill and triggers call daybook_fold(); make sure this
        # connection has it even if env.py did not register it.
        register(bind.connection.dbapi_connection)
    for statement in content_index_ddl(bind.dialect.name):
        op.execute(statement)


def downgrade() -> None:
    bind = op.get_bind()
    for statement in content_index_drop_ddl(bind.dialect.name):
        op.execute(statement)
