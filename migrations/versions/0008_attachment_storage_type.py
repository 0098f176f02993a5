"""Where each attachment's bytes are: DATABASE, LOCAL (a directory) or S3 (a bucket).

As in Memos, every attachment records its own storage type, so changing the
instance's storage setting affects new uploads only and older attachments
stay readable. Rows so far were LOCAL when they name a ``storage_key`` and
DATABASE (``blob``) otherwise.

Downgrading is refused while any attachment lives in S3: the older schema
would take its key for a local file and lose track of the object.

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
        batch.add_column(
            sa.Column("storage_type", sa.String(16), server_default="LOCAL", nullable=False)
        )
    op.execute("UPDATE attachment SET storage_type = 'DATABASE' WHERE storage_key IS NULL")


def downgrade() -> None:
    in_s3 = (
        op.get_bind()
        .execute(sa.text("SELECT count(*) FROM attachment WHERE storage_type = 'S3'"))
        .scalar_one()
    )
    if in_s3:
        raise RuntimeError(
            f"{in_s3} attachments are stored in S3, which revision 0007 cannot read:"
            " delete them or move them to local storage before downgrading"
        )
    with op.batch_alter_table("attachment") as batch:
        batch.drop_column("storage_type")
