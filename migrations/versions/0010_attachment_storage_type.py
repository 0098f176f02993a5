"""Where each attachment's bytes are: DATABASE, LOCAL (a directory), S3 (a bucket), or
EXTERNAL (a link only).

As in Memos, every attachment records its own storage type, so changing the
instance's storage setting affects new uploads only and older attachments
stay readable. Rows so far were LOCAL when they name a ``storage_key``,
DATABASE when they hold a ``blob``, and EXTERNAL (``external_link``) otherwise.

Downgrading is refused while any attachment lives in S3: the older schema
would take its key for a local file and lose track of the object.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("attachment") as batch:
        batch.add_column(
            sa.Column("storage_type", sa.String(16), server_default="LOCAL", nullable=False)
        )
    op.execute(
        "UPDATE attachment SET storage_type = 'DATABASE'"
        " WHERE storage_key IS NULL AND blob IS NOT NULL"
    )
    op.execute(
        "UPDATE attachment SET storage_type = 'EXTERNAL' WHERE storage_key IS NULL AND blob IS NULL"
    )


def downgrade() -> None:
    in_s3 = (
        op.get_bind()
        .execute(sa.text("SELECT count(*) FROM attachment WHERE storage_type = 'S3'"))
        .scalar_one()
    )
    if in_s3:
        raise RuntimeError(
            f"{in_s3} attachments are stored in S3, which revision 0008 cannot read:"
            " delete them or move them to local storage before downgrading"
        )
    with op.batch_alter_table("attachment") as batch:
        batch.drop_column("storage_type")
