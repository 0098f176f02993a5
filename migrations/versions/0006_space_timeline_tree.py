"""The space timeline index carries the tree path, for restricted keys' pages.

A restricted key's list is a merge of one newest-first walk per declared
space (``app.access.reach``); each walk skips the memos outside the key's
tree ceilings. With ``tree`` as the index's last column SQLite tests the
ceiling on the index entry and reads the table row only for memos inside it
(a walk that used to read eight rows per hit now reads one). PostgreSQL gets
the same index so both dialects keep one schema.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

INDEX = "ix_memo_space_timeline"


def upgrade() -> None:
    op.drop_index(INDEX, table_name="memo")
    op.create_index(INDEX, "memo", ["space_id", "state", "created_ts", "id", "tree"])


def downgrade() -> None:
    op.drop_index(INDEX, table_name="memo")
    op.create_index(INDEX, "memo", ["space_id", "state", "created_ts", "id"])
