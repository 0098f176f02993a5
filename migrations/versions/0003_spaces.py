"""Spaces: the space, its roster, its structural event log, and the space timeline index.

Groups and tree grants come in a later revision.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Tables whose rows this downgrade deletes for good (``app.db.migrate`` asks
# for confirmation before it does).
destroys = ("space", "space_member", "space_event")


def upgrade() -> None:
    op.create_table(
        "space",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("uid", sa.String(length=36), nullable=False),
        sa.Column("title", sa.String(length=256), nullable=False),
        sa.Column("description", sa.Text(), server_default="", nullable=False),
        sa.Column("creator_id", sa.Integer(), nullable=False),
        sa.Column(
            "default_member_grants",
            sa.JSON(),
            server_default=sa.text("""'[{"path": "share", "level": "WRITE"}]'"""),
            nullable=False,
        ),
        sa.Column("created_ts", sa.BigInteger(), nullable=False),
        sa.Column("updated_ts", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_space")),
        sa.UniqueConstraint("uid", name=op.f("uq_space_uid")),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "space_member",
        sa.Column("space_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("invited_by", sa.Integer(), nullable=True),
        sa.Column("created_ts", sa.BigInteger(), nullable=False),
        sa.Column("updated_ts", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["space_id"],
            ["space.id"],
            name=op.f("fk_space_member_space_id_space"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["user_account.id"],
            name=op.f("fk_space_member_user_id_user_account"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("space_id", "user_id", name=op.f("pk_space_member")),
    )
    op.create_index("ix_space_member_user_state", "space_member", ["user_id", "state"])
    op.create_table(
        "space_event",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("space_id", sa.Integer(), nullable=False),
        sa.Column("actor_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("detail", sa.JSON(), nullable=False),
        sa.Column("created_ts", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_space_event")),
    )
    op.create_index("ix_space_event_space", "space_event", ["space_id", "id"])
    op.create_index("ix_memo_space_timeline", "memo", ["space_id", "state", "created_ts", "id"])


def downgrade() -> None:
    op.drop_index("ix_memo_space_timeline", table_name="memo")
    op.drop_index("ix_space_event_space", table_name="space_event")
    op.drop_table("space_event")
    op.drop_index("ix_space_member_user_state", table_name="space_member")
    op.drop_table("space_member")
    op.drop_table("space")
