"""Webhooks: a user's endpoints, the durable outbox, and the delivery log.

``webhook`` holds a user's endpoints (Memos' ``users/{u}/webhooks``) with
their Standard Webhooks signing secrets; ``webhook_event`` is the outbox, one
row per event and webhook, inserted in the memo write's own transaction;
``webhook_delivery`` logs every attempt for the webhook's owner.

The downgrade drops the three tables with their rows: no older schema has
anywhere to keep them (Daybook had no webhooks before). ``app.db.migrate``
asks for confirmation first (``destroys``). Nothing outside these tables names
their integer ids (webhooks are named by ``uid``), so a round trip may restart
them.

Revision ID: 0015
Revises: 0010
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

destroys = ("webhook", "webhook_event", "webhook_delivery")


def upgrade() -> None:
    op.create_table(
        "webhook",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("uid", sa.String(32), nullable=False),
        sa.Column("owner_id", sa.Integer(), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("display_name", sa.String(256), server_default="", nullable=False),
        sa.Column("secret", sa.String(256), nullable=False),
        sa.Column("created_ts", sa.BigInteger(), nullable=False),
        sa.Column("updated_ts", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["owner_id"],
            ["user_account.id"],
            name="fk_webhook_owner_id_user_account",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_webhook"),
        sa.UniqueConstraint("uid", name="uq_webhook_uid"),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_webhook_owner_id", "webhook", ["owner_id"])
    op.create_table(
        "webhook_event",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("msg_id", sa.String(64), nullable=False),
        sa.Column("webhook_id", sa.Integer(), nullable=False),
        sa.Column("activity", sa.String(48), nullable=False),
        sa.Column("memo_id", sa.Integer(), nullable=False),
        sa.Column("parent_id", sa.Integer(), nullable=True),
        sa.Column("snapshot", sa.JSON(), nullable=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer(), server_default="0", nullable=False),
        sa.Column("next_attempt_ms", sa.BigInteger(), nullable=False),
        sa.Column("claimed_until_ms", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("claim_token", sa.String(32), nullable=True),
        sa.Column("created_ms", sa.BigInteger(), nullable=False),
        sa.Column("finished_ms", sa.BigInteger(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["webhook_id"],
            ["webhook.id"],
            name="fk_webhook_event_webhook_id_webhook",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_webhook_event"),
        sa.UniqueConstraint("msg_id", name="uq_webhook_event_msg_id"),
        sqlite_autoincrement=True,
    )
    op.create_index(
        "ix_webhook_event_state_next_attempt_ms", "webhook_event", ["state", "next_attempt_ms"]
    )
    op.create_index("ix_webhook_event_webhook_id_id", "webhook_event", ["webhook_id", "id"])
    op.create_table(
        "webhook_delivery",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("event_id", sa.Integer(), nullable=False),
        sa.Column("webhook_id", sa.Integer(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("started_ms", sa.BigInteger(), nullable=False),
        sa.Column("duration_ms", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["event_id"],
            ["webhook_event.id"],
            name="fk_webhook_delivery_event_id_webhook_event",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["webhook_id"],
            ["webhook.id"],
            name="fk_webhook_delivery_webhook_id_webhook",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_webhook_delivery"),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_webhook_delivery_webhook_id_id", "webhook_delivery", ["webhook_id", "id"])
    op.create_index("ix_webhook_delivery_event_id", "webhook_delivery", ["event_id"])


def downgrade() -> None:
    op.drop_index("ix_webhook_delivery_event_id", table_name="webhook_delivery")
    op.drop_index("ix_webhook_delivery_webhook_id_id", table_name="webhook_delivery")
    op.drop_table("webhook_delivery")
    op.drop_index("ix_webhook_event_webhook_id_id", table_name="webhook_event")
    op.drop_index("ix_webhook_event_state_next_attempt_ms", table_name="webhook_event")
    op.drop_table("webhook_event")
    op.drop_index("ix_webhook_owner_id", table_name="webhook")
    op.drop_table("webhook")
