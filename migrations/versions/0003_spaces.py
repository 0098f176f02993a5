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


# Ids are never reused across a downgrade/upgrade round trip: rows that outlive
# the dropped table (``memo.space_id``, history priors, event details) still
# name its ids, and a new row must never inherit what they point to. The
# downgrade keeps the table's high-water mark in ``daybook_id_floor``; the
# upgrade starts the new table's ids above it (and above every id a surviving
# row still names), then forgets the mark.
FLOOR_TABLE = "daybook_id_floor"


def _high_water(bind: sa.Connection, table: str) -> int:
    top = bind.execute(sa.text(f"SELECT coalesce(max(id), 0) FROM {table}")).scalar_one()
    if bind.dialect.name == "sqlite":
        seq = bind.execute(
            sa.text("SELECT seq FROM sqlite_sequence WHERE name = :t"), {"t": table}
        ).scalar()
    else:
        seq = bind.execute(
            sa.text("SELECT pg_sequence_last_value(pg_get_serial_sequence(:t, 'id')::regclass)"),
            {"t": table},
        ).scalar()
    return max(int(top), int(seq or 0))


def _keep_floor(table: str) -> None:
    bind = op.get_bind()
    high = _high_water(bind, table)
    if high == 0:
        return
    bind.execute(
        sa.text(
            f"CREATE TABLE IF NOT EXISTS {FLOOR_TABLE}"
            " (name VARCHAR(64) NOT NULL PRIMARY KEY, last_id BIGINT NOT NULL)"
        )
    )
    kept = bind.execute(
        sa.text(f"SELECT last_id FROM {FLOOR_TABLE} WHERE name = :t"), {"t": table}
    ).scalar()
    if kept is None:
        bind.execute(
            sa.text(f"INSERT INTO {FLOOR_TABLE} (name, last_id) VALUES (:t, :n)"),
            {"t": table, "n": high},
        )
    elif int(kept) < high:
        bind.execute(
            sa.text(f"UPDATE {FLOOR_TABLE} SET last_id = :n WHERE name = :t"),
            {"t": table, "n": high},
        )


def _restore_floor(table: str, *named: int) -> None:
    bind = op.get_bind()
    floor = max((0, *named))
    if sa.inspect(bind).has_table(FLOOR_TABLE):
        kept = bind.execute(
            sa.text(f"SELECT last_id FROM {FLOOR_TABLE} WHERE name = :t"), {"t": table}
        ).scalar()
        floor = max(floor, int(kept or 0))
        bind.execute(sa.text(f"DELETE FROM {FLOOR_TABLE} WHERE name = :t"), {"t": table})
        if bind.execute(sa.text(f"SELECT count(*) FROM {FLOOR_TABLE}")).scalar_one() == 0:
            bind.execute(sa.text(f"DROP TABLE {FLOOR_TABLE}"))
    if floor <= 0:
        return
    if bind.dialect.name == "sqlite":
        bind.execute(
            sa.text("INSERT INTO sqlite_sequence (name, seq) VALUES (:t, :n)"),
            {"t": table, "n": floor},
        )
    else:
        bind.execute(
            sa.text("SELECT setval(pg_get_serial_sequence(:t, 'id'), :n)"),
            {"t": table, "n": floor},
        )


def _max_named(bind: sa.Connection, table: str, column: str, key: str) -> int:
    """The largest integer ``key`` in the JSON objects of ``table.column`` (0 if none)."""
    if bind.dialect.name == "sqlite":
        expr = (
            f"CASE WHEN json_valid({column}) THEN CASE WHEN json_type({column}, '$.{key}')"
            f" = 'integer' THEN json_extract({column}, '$.{key}') END END"
        )
    else:
        expr = (
            f"CASE WHEN json_typeof({column}) = 'object' AND json_typeof({column} -> '{key}')"
            f" = 'number' THEN ({column} ->> '{key}')::numeric END"
        )
    value = bind.execute(sa.text(f"SELECT max({expr}) FROM {table}")).scalar()
    return int(value or 0)


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
    bind = op.get_bind()
    placed = bind.execute(sa.text("SELECT coalesce(max(space_id), 0) FROM memo")).scalar_one()
    _restore_floor("space", int(placed), _max_named(bind, "memo_event", "prior", "space_id"))


def downgrade() -> None:
    _keep_floor("space")
    op.drop_index("ix_memo_space_timeline", table_name="memo")
    op.drop_index("ix_space_event_space", table_name="space_event")
    op.drop_table("space_event")
    op.drop_index("ix_space_member_user_state", table_name="space_member")
    op.drop_table("space_member")
    op.drop_table("space")
