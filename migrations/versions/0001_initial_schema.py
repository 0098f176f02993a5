"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-29 20:32:31.105600
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Tables whose rows this downgrade deletes for good (``app.db.migrate`` asks
# for confirmation before it does).
destroys = (
    "access_token",
    "attachment",
    "auth_session",
    "instance_setting",
    "memo",
    "memo_event",
    "memo_relation",
    "memo_share",
    "memo_tag",
    "reaction",
    "saved_view",
    "signin_failure",
    "user_account",
)


def upgrade() -> None:

    op.create_table(
        "instance_setting",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("value", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_instance_setting")),
    )
    op.create_table(
        "memo",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("uid", sa.String(length=36), nullable=False),
        sa.Column("creator_id", sa.Integer(), nullable=False),
        sa.Column("content", sa.Text(), server_default="", nullable=False),
        sa.Column("visibility", sa.String(length=16), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("pinned", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("created_ts", sa.BigInteger(), nullable=False),
        sa.Column("updated_ts", sa.BigInteger(), nullable=False),
        sa.Column("title", sa.Text(), server_default="", nullable=False),
        sa.Column("snippet", sa.Text(), server_default="", nullable=False),
        sa.Column("has_link", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("has_task_list", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("has_code", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column(
            "has_incomplete_tasks",
            sa.Boolean(),
            server_default=sa.false(),
            nullable=False,
        ),
        sa.Column("location_placeholder", sa.Text(), nullable=True),
        sa.Column("location_latitude", sa.Float(), nullable=True),
        sa.Column("location_longitude", sa.Float(), nullable=True),
        sa.Column("parent_id", sa.Integer(), nullable=True),
        sa.Column("space_id", sa.Integer(), nullable=True),
        sa.Column("tree", sa.Text(), nullable=True),
        sa.Column("origin", sa.JSON(), nullable=False),
        sa.Column("version", sa.Integer(), server_default="1", nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_memo")),
        sa.UniqueConstraint("uid", name=op.f("uq_memo_uid")),
        sqlite_autoincrement=True,
    )
    with op.batch_alter_table("memo", schema=None) as batch_op:
        batch_op.create_index(
            "ix_memo_creator_timeline",
            ["creator_id", "state", "created_ts", "id"],
            unique=False,
        )
        batch_op.create_index("ix_memo_parent", ["parent_id", "created_ts"], unique=False)
        batch_op.create_index(
            "ix_memo_pinned_timeline",
            ["state", "pinned", "created_ts", "id"],
            unique=False,
        )
        batch_op.create_index("ix_memo_timeline", ["state", "created_ts", "id"], unique=False)
        batch_op.create_index(
            "ix_memo_updated_timeline", ["state", "updated_ts", "id"], unique=False
        )
        batch_op.create_index(
            "ix_memo_visibility_timeline",
            ["visibility", "state", "created_ts", "id"],
            unique=False,
        )

    op.create_table(
        "memo_event",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("memo_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("actor_id", sa.Integer(), nullable=False),
        sa.Column("credential", sa.JSON(), nullable=False),
        sa.Column("prior_content", sa.Text(), nullable=True),
        sa.Column("prior", sa.JSON(), nullable=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("created_ts", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_memo_event")),
        sqlite_autoincrement=True,
    )
    with op.batch_alter_table("memo_event", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_memo_event_memo_id_id"), ["memo_id", "id"], unique=False
        )

    op.create_table(
        "signin_failure",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("username", sa.String(length=64), nullable=False),
        sa.Column("remote", sa.String(length=64), nullable=False),
        sa.Column("created_ts", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_signin_failure")),
        sqlite_autoincrement=True,
    )
    with op.batch_alter_table("signin_failure", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_signin_failure_remote_created_ts"),
            ["remote", "created_ts"],
            unique=False,
        )
        batch_op.create_index(
            batch_op.f("ix_signin_failure_username_created_ts"),
            ["username", "created_ts"],
            unique=False,
        )

    op.create_table(
        "user_account",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("username", sa.String(length=64), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("nickname", sa.String(length=128), server_default="", nullable=False),
        sa.Column("email", sa.String(length=256), server_default="", nullable=False),
        sa.Column("description", sa.Text(), server_default="", nullable=False),
        sa.Column("avatar_url", sa.Text(), server_default="", nullable=False),
        sa.Column("password_hash", sa.Text(), nullable=False),
        sa.Column("created_ts", sa.BigInteger(), nullable=False),
        sa.Column("updated_ts", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_user_account")),
        sa.UniqueConstraint("username", name=op.f("uq_user_account_username")),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "access_token",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("description", sa.String(length=256), server_default="", nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("token_hint", sa.String(length=16), nullable=False),
        sa.Column("restriction", sa.JSON(), nullable=True),
        sa.Column("created_ts", sa.BigInteger(), nullable=False),
        sa.Column("expires_ts", sa.BigInteger(), nullable=True),
        sa.Column("last_used_ts", sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["user_account.id"],
            name=op.f("fk_access_token_user_id_user_account"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_access_token")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_access_token_token_hash")),
        sqlite_autoincrement=True,
    )
    with op.batch_alter_table("access_token", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_access_token_user_id"), ["user_id"], unique=False)

    op.create_table(
        "attachment",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("uid", sa.String(length=36), nullable=False),
        sa.Column("creator_id", sa.Integer(), nullable=False),
        sa.Column("memo_id", sa.Integer(), nullable=True),
        sa.Column("filename", sa.String(length=256), nullable=False),
        sa.Column("mime_type", sa.String(length=128), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("storage_key", sa.String(length=128), nullable=True),
        sa.Column("blob", sa.LargeBinary(), nullable=True),
        sa.Column("created_ts", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["memo_id"],
            ["memo.id"],
            name=op.f("fk_attachment_memo_id_memo"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_attachment")),
        sa.UniqueConstraint("uid", name=op.f("uq_attachment_uid")),
        sqlite_autoincrement=True,
    )
    with op.batch_alter_table("attachment", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_attachment_creator_id_created_ts"),
            ["creator_id", "created_ts"],
            unique=False,
        )
        batch_op.create_index(batch_op.f("ix_attachment_memo_id"), ["memo_id"], unique=False)

    op.create_table(
        "auth_session",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("csrf_token", sa.String(length=64), nullable=False),
        sa.Column("created_ts", sa.BigInteger(), nullable=False),
        sa.Column("expires_ts", sa.BigInteger(), nullable=False),
        sa.Column("last_seen_ts", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["user_account.id"],
            name=op.f("fk_auth_session_user_id_user_account"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_auth_session")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_auth_session_token_hash")),
        sqlite_autoincrement=True,
    )
    with op.batch_alter_table("auth_session", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_auth_session_user_id"), ["user_id"], unique=False)

    op.create_table(
        "memo_relation",
        sa.Column("memo_id", sa.Integer(), nullable=False),
        sa.Column("related_memo_id", sa.Integer(), nullable=False),
        sa.Column("type", sa.String(length=16), nullable=False),
        sa.ForeignKeyConstraint(
            ["memo_id"],
            ["memo.id"],
            name=op.f("fk_memo_relation_memo_id_memo"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["related_memo_id"],
            ["memo.id"],
            name=op.f("fk_memo_relation_related_memo_id_memo"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "memo_id", "related_memo_id", "type", name=op.f("pk_memo_relation")
        ),
    )
    with op.batch_alter_table("memo_relation", schema=None) as batch_op:
        batch_op.create_index("ix_memo_relation_related", ["related_memo_id"], unique=False)

    op.create_table(
        "memo_share",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("memo_id", sa.Integer(), nullable=False),
        sa.Column("token", sa.String(length=64), nullable=False),
        sa.Column("creator_id", sa.Integer(), nullable=False),
        sa.Column("created_ts", sa.BigInteger(), nullable=False),
        sa.Column("expires_ts", sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(
            ["memo_id"],
            ["memo.id"],
            name=op.f("fk_memo_share_memo_id_memo"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_memo_share")),
        sa.UniqueConstraint("token", name=op.f("uq_memo_share_token")),
        sqlite_autoincrement=True,
    )
    with op.batch_alter_table("memo_share", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_memo_share_memo_id"), ["memo_id"], unique=False)

    op.create_table(
        "memo_tag",
        sa.Column("memo_id", sa.Integer(), nullable=False),
        sa.Column("tag", sa.String(length=256), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["memo_id"],
            ["memo.id"],
            name=op.f("fk_memo_tag_memo_id_memo"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("memo_id", "tag", name=op.f("pk_memo_tag")),
    )
    with op.batch_alter_table("memo_tag", schema=None) as batch_op:
        batch_op.create_index("ix_memo_tag_tag", ["tag", "memo_id"], unique=False)

    op.create_table(
        "reaction",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("memo_id", sa.Integer(), nullable=False),
        sa.Column("creator_id", sa.Integer(), nullable=False),
        sa.Column("reaction_type", sa.String(length=64), nullable=False),
        sa.Column("created_ts", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["memo_id"],
            ["memo.id"],
            name=op.f("fk_reaction_memo_id_memo"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_reaction")),
        sa.UniqueConstraint(
            "memo_id",
            "creator_id",
            "reaction_type",
            name=op.f("uq_reaction_memo_id_creator_id_reaction_type"),
        ),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "saved_view",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("title", sa.String(length=256), nullable=False),
        sa.Column("filter", sa.Text(), nullable=False),
        sa.Column("created_ts", sa.BigInteger(), nullable=False),
        sa.Column("updated_ts", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["user_account.id"],
            name=op.f("fk_saved_view_user_id_user_account"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_saved_view")),
        sqlite_autoincrement=True,
    )
    with op.batch_alter_table("saved_view", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_saved_view_user_id"), ["user_id"], unique=False)


def downgrade() -> None:
    # Id high-water marks kept by later downgrades (0003, 0005): at base no row
    # is left that could name an old id.
    op.execute("DROP TABLE IF EXISTS daybook_id_floor")
    with op.batch_alter_table("saved_view", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_saved_view_user_id"))

    op.drop_table("saved_view")
    op.drop_table("reaction")
    with op.batch_alter_table("memo_tag", schema=None) as batch_op:
        batch_op.drop_index("ix_memo_tag_tag")

    op.drop_table("memo_tag")
    with op.batch_alter_table("memo_share", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_memo_share_memo_id"))

    op.drop_table("memo_share")
    with op.batch_alter_table("memo_relation", schema=None) as batch_op:
        batch_op.drop_index("ix_memo_relation_related")

    op.drop_table("memo_relation")
    with op.batch_alter_table("auth_session", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_auth_session_user_id"))

    op.drop_table("auth_session")
    with op.batch_alter_table("attachment", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_attachment_memo_id"))
        batch_op.drop_index(batch_op.f("ix_attachment_creator_id_created_ts"))

    op.drop_table("attachment")
    with op.batch_alter_table("access_token", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_access_token_user_id"))

    op.drop_table("access_token")
    op.drop_table("user_account")
    with op.batch_alter_table("signin_failure", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_signin_failure_username_created_ts"))
        batch_op.drop_index(batch_op.f("ix_signin_failure_remote_created_ts"))

    op.drop_table("signin_failure")
    with op.batch_alter_table("memo_event", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_memo_event_memo_id_id"))

    op.drop_table("memo_event")
    with op.batch_alter_table("memo", schema=None) as batch_op:
        batch_op.drop_index("ix_memo_visibility_timeline")
        batch_op.drop_index("ix_memo_updated_timeline")
        batch_op.drop_index("ix_memo_timeline")
        batch_op.drop_index("ix_memo_pinned_timeline")
        batch_op.drop_index("ix_memo_parent")
        batch_op.drop_index("ix_memo_creator_timeline")

    op.drop_table("memo")
    op.drop_table("instance_setting")
