"""The trash: memos in state TRASHED and the ``memo_trash`` bookkeeping table.

``DELETE /api/v1/memos/{id}`` no longer removes a memo: it sets ``memo.state``
to ``TRASHED`` (a value the read rule has always denied, so no read path can
return it) and records, in ``memo_trash``, which DELETE it belongs to, the
state a restore puts back, when, and by whom. Purging (a user's, or the
retention job's once the retention period has passed) deletes the rows.

Downgrade keeps every memo row as it is: trashed memos stay ``TRASHED``,
which older code denies on every path (an unknown state fails closed), so a
downgrade neither resurrects nor destroys anything. Only the bookkeeping is
dropped. The upgrade adopts any ``TRASHED`` memo without a ``memo_trash``
row (one left by such a downgrade): as its own group, or its parent's when
the parent is trashed too, restoring to NORMAL, trashed at its update time.

Revision ID: 0014
Revises: 0010
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "memo_trash",
        sa.Column("memo_id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("root_id", sa.Integer(), nullable=False),
        sa.Column("prior_state", sa.String(16), nullable=False),
        sa.Column("trashed_ts", sa.BigInteger(), nullable=False),
        sa.Column("trashed_by", sa.Integer(), nullable=False),
        sa.Column("claim_token", sa.String(32), nullable=True),
        sa.Column("claimed_ts", sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(
            ["memo_id"],
            ["memo.id"],
            name="fk_memo_trash_memo_id_memo",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("memo_id", name="pk_memo_trash"),
    )
    op.create_index("ix_memo_trash_root_id", "memo_trash", ["root_id"])
    op.create_index("ix_memo_trash_trashed_ts", "memo_trash", ["trashed_ts"])
    # Adopt memos left TRASHED by an earlier downgrade.
    op.execute(
        "INSERT INTO memo_trash (memo_id, root_id, prior_state, trashed_ts, trashed_by)"
        " SELECT m.id,"
        " CASE WHEN p.state = 'TRASHED' THEN p.id ELSE m.id END,"
        " 'NORMAL', m.updated_ts, m.creator_id"
        " FROM memo m LEFT JOIN memo p ON p.id = m.parent_id"
        " WHERE m.state = 'TRASHED'"
    )


def downgrade() -> None:
    op.drop_index("ix_memo_trash_trashed_ts", table_name="memo_trash")
    op.drop_index("ix_memo_trash_root_id", table_name="memo_trash")
    op.drop_table("memo_trash")
