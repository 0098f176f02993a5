"""Attachments may be external links (Memos' EXTERNAL storage), carried on import.

Memos has attachments that are only a URL; its export format writes them as
``externalLink`` and ``daybook import-memos-db`` reads them from Memos'
``reference`` column. Daybook keeps the link in ``attachment.external_link``
(nullable): such a row has neither a storage key nor a blob. The downgrade
drops the column with its links (there is nowhere older schemas could keep
them); the rows stay, as byte-less attachments.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("attachment") as batch:
        batch.add_column(sa.Column("external_link", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("attachment") as batch:
        batch.drop_column("external_link")
