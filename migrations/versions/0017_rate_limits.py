"""Rate limits: the shared window counters (decision 0029).

``rate_limit`` holds one row per (policy, subject) key with the hits counted in
its current fixed window, so every process on one database enforces one
budget. The downgrade drops the table: its rows are counters that expire
within the longest window (an hour), and no older schema has anywhere to
keep them, so nothing of value is lost (not listed in ``destroys``).

Revision ID: 0017
Revises: 0015
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "rate_limit",
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("window_start", sa.BigInteger(), nullable=False),
        sa.Column("hits", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("key", name="pk_rate_limit"),
    )
    op.create_index("ix_rate_limit_window_start", "rate_limit", ["window_start"])


def downgrade() -> None:
    op.drop_index("ix_rate_limit_window_start", table_name="rate_limit")
    op.drop_table("rate_limit")
