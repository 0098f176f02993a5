"""The SHA-256 of each uploaded attachment's bytes, so a repeated upload is idempotent.

A client that chose the attachment's id (``?attachmentId=``, as Memos'
``CreateAttachmentRequest.attachment_id``) may send the same upload again
after a lost answer: the web client's outbox does, for files chosen offline
(decision 0039). The repeat answers the existing attachment only when it is
the caller's and its bytes are the same, which this column records at upload.
Rows from before this revision have no hash (NULL): a repeat of one of them
is refused as before (409), never guessed.

The downgrade drops the column: the hashes are derived from bytes that stay,
and the older schema refuses every repeat anyway (not listed in ``destroys``).

Revision ID: 0018
Revises: 0017
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("attachment") as batch:
        batch.add_column(sa.Column("sha256", sa.String(64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("attachment") as batch:
        batch.drop_column("sha256")
