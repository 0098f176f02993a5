"""Credentials: sign-in throttle rows, one-time password reset links, an audit log.

- ``throttle`` replaces ``signin_failure``: one row per throttle key
  (a digest of username and client, or of the client alone) holding a count
  and a back-off deadline, instead of one row per failure. The old rows are
  short-lived counters (15 minutes), so they are not carried over, in either
  direction.
- ``password_reset``: the SHA-256 digest of each reset secret, its user, who
  issued it, its expiry and when it was used (decision 0022).
- ``audit_event``: security events about accounts.

Every step can run again on a database that already has it.

Revision ID: 0013
Revises: 0010
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _has(name: str) -> bool:
    return bool(sa.inspect(op.get_bind()).has_table(name))


def upgrade() -> None:
    if not _has("throttle"):
        op.create_table(
            "throttle",
            sa.Column("key", sa.String(64), nullable=False),
            sa.Column("attempts", sa.Integer, nullable=False),
            sa.Column("last_ts", sa.BigInteger, nullable=False),
            sa.Column("blocked_until", sa.BigInteger, nullable=False),
            sa.PrimaryKeyConstraint("key", name="pk_throttle"),
        )
    if not _has("password_reset"):
        op.create_table(
            "password_reset",
            sa.Column("id", sa.Integer, autoincrement=True, nullable=False),
            sa.Column("user_id", sa.Integer, nullable=False),
            sa.Column("token_hash", sa.String(64), nullable=False),
            sa.Column("issued_by", sa.String(64), nullable=False),
            sa.Column("created_ts", sa.BigInteger, nullable=False),
            sa.Column("expires_ts", sa.BigInteger, nullable=False),
            sa.Column("used_ts", sa.BigInteger, nullable=True),
            sa.ForeignKeyConstraint(
                ["user_id"],
                ["user_account.id"],
                name="fk_password_reset_user_id_user_account",
                ondelete="CASCADE",
            ),
            sa.PrimaryKeyConstraint("id", name="pk_password_reset"),
            sa.UniqueConstraint("token_hash", name="uq_password_reset_token_hash"),
            sqlite_autoincrement=True,
        )
        op.create_index("ix_password_reset_user_id", "password_reset", ["user_id"])
    if not _has("audit_event"):
        op.create_table(
            "audit_event",
            sa.Column("id", sa.Integer, autoincrement=True, nullable=False),
            sa.Column("created_ts", sa.BigInteger, nullable=False),
            sa.Column("action", sa.String(32), nullable=False),
            sa.Column("actor", sa.String(80), nullable=False),
            sa.Column("target_user_id", sa.Integer, nullable=True),
            sa.Column("detail", sa.JSON, nullable=False),
            sa.PrimaryKeyConstraint("id", name="pk_audit_event"),
            sqlite_autoincrement=True,
        )
        op.create_index("ix_audit_event_target_user_id_id", "audit_event", ["target_user_id", "id"])
    if _has("signin_failure"):
        op.drop_table("signin_failure")


def downgrade() -> None:
    if not _has("signin_failure"):
        op.create_table(
            "signin_failure",
            sa.Column("id", sa.Integer, autoincrement=True, nullable=False),
            sa.Column("username", sa.String(64), nullable=False),
            sa.Column("remote", sa.String(64), nullable=False),
            sa.Column("created_ts", sa.BigInteger, nullable=False),
            sa.PrimaryKeyConstraint("id", name="pk_signin_failure"),
            sqlite_autoincrement=True,
        )
        op.create_index(
            "ix_signin_failure_remote_created_ts", "signin_failure", ["remote", "created_ts"]
        )
        op.create_index(
            "ix_signin_failure_username_created_ts", "signin_failure", ["username", "created_ts"]
        )
    for table in ("audit_event", "password_reset", "throttle"):
        if _has(table):
            op.drop_table(table)
