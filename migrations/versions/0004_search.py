"""Search: FTS5 / tsvector index, the memo_embedding table, pgvector where available.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import logging

import sqlalchemy as sa
from alembic import op

from app.search.ddl import PG_VECTOR, search_ddl, search_drop_ddl

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

log = logging.getLogger("alembic.runtime.migration")


def upgrade() -> None:
    bind = op.get_bind()
    for statement in search_ddl(bind.dialect.name):
        op.execute(statement)
    if bind.dialect.name == "postgresql":
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
    bind = op.get_bind()
    for statement in search_drop_ddl(bind.dialect.name):
        op.execute(statement)
