"""Tree grants and groups; existing ACTIVE members get their default grants.

``space_group``, ``space_group_member`` and ``space_grant`` (a user or a group,
never both; level 1..3). On PostgreSQL the ``ltree`` extension and a GiST
index on ``text2ltree(memo.tree)`` serve tree coverage
(``app.access.scope.path_covers`` renders ``<@`` there); SQLite uses a range
scan on ``(space_id, tree)``, an index both dialects get.

Data: until this revision every ACTIVE member stood in for WRITE at the root.
Existing members now get what provisioning gives from here on: the space's
creator OWNER at ``home.<id>`` and ``share``; every other ACTIVE member OWNER
at ``home.<id>`` plus the space's ``default_member_grants``.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Tables whose rows this downgrade deletes for good (``app.db.migrate`` asks
# for confirmation before it does); an upgrade re-derives members' default
# grants only.
destroys = ("space_grant", "space_group", "space_group_member")

LEVELS = {"READ": 1, "WRITE": 2, "OWNER": 3}


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
        "space_group",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("space_id", sa.Integer(), nullable=False),
        sa.Column("title", sa.String(length=256), nullable=False),
        sa.Column("created_ts", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["space_id"],
            ["space.id"],
            name=op.f("fk_space_group_space_id_space"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_space_group")),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_space_group_space_id", "space_group", ["space_id"])
    op.create_table(
        "space_group_member",
        sa.Column("group_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["group_id"],
            ["space_group.id"],
            name=op.f("fk_space_group_member_group_id_space_group"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["user_account.id"],
            name=op.f("fk_space_group_member_user_id_user_account"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("group_id", "user_id", name=op.f("pk_space_group_member")),
    )
    op.create_index("ix_space_group_member_user_id", "space_group_member", ["user_id"])
    op.create_table(
        "space_grant",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("space_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=True),
        sa.Column("group_id", sa.Integer(), nullable=True),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("level", sa.Integer(), nullable=False),
        sa.Column("created_by", sa.Integer(), nullable=False),
        sa.Column("created_ts", sa.BigInteger(), nullable=False),
        sa.CheckConstraint(
            "(user_id IS NULL) <> (group_id IS NULL)",
            name=op.f("ck_space_grant_one_principal"),
        ),
        sa.CheckConstraint("level >= 1 AND level <= 3", name=op.f("ck_space_grant_level")),
        sa.ForeignKeyConstraint(
            ["space_id"],
            ["space.id"],
            name=op.f("fk_space_grant_space_id_space"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["user_account.id"],
            name=op.f("fk_space_grant_user_id_user_account"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["group_id"],
            ["space_group.id"],
            name=op.f("fk_space_grant_group_id_space_group"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_space_grant")),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_space_grant_space_id_user_id", "space_grant", ["space_id", "user_id"])
    op.create_index("ix_space_grant_space_id_group_id", "space_grant", ["space_id", "group_id"])
    op.create_index("ix_space_grant_user_id", "space_grant", ["user_id"])
    op.create_index("ix_memo_space_tree", "memo", ["space_id", "tree"])
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        op.execute("CREATE EXTENSION IF NOT EXISTS ltree")
        op.execute("CREATE INDEX ix_memo_tree_ltree ON memo USING gist (text2ltree(tree))")
    _restore_floor("space_group", _max_named(bind, "space_event", "detail", "group_id"))
    _restore_floor("space_grant", _max_named(bind, "space_event", "detail", "grant_id"))
    _default_grants(bind)


def _default_grants(bind: sa.Connection) -> None:
    now = int(time.time())
    rows = bind.execute(
        sa.text(
            "SELECT m.space_id, m.user_id, s.creator_id, s.default_member_grants"
            " FROM space_member m JOIN space s ON s.id = m.space_id"
            " WHERE m.state = 'ACTIVE'"
        )
    ).all()
    grants: list[dict[str, object]] = []
    for space_id, user_id, creator_id, defaults in rows:
        wanted = {(f"home.{user_id}", 3)}
        if user_id == creator_id:
            wanted.add(("share", 3))
        else:
            if isinstance(defaults, str):
                defaults = json.loads(defaults)
            for g in defaults if isinstance(defaults, list) else []:
                level = LEVELS.get(str(g.get("level"))) if isinstance(g, dict) else None
                if level is not None and isinstance(g.get("path"), str):
                    wanted.add((g["path"], level))
        grants += [
            {
                "space_id": space_id,
                "user_id": user_id,
                "path": path,
                "level": level,
                "created_by": user_id,
                "created_ts": now,
            }
            for path, level in sorted(wanted)
        ]
    if grants:
        bind.execute(
            sa.text(
                "INSERT INTO space_grant (space_id, user_id, group_id, path, level, created_by,"
                " created_ts) VALUES (:space_id, :user_id, NULL, :path, :level, :created_by,"
                " :created_ts)"
            ),
            grants,
        )


def downgrade() -> None:
    _keep_floor("space_group")
    _keep_floor("space_grant")
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        op.execute("DROP INDEX IF EXISTS ix_memo_tree_ltree")
        # The extension stays: other objects may use it, and it holds no data.
    op.drop_index("ix_memo_space_tree", table_name="memo")
    op.drop_index("ix_space_grant_user_id", table_name="space_grant")
    op.drop_index("ix_space_grant_space_id_group_id", table_name="space_grant")
    op.drop_index("ix_space_grant_space_id_user_id", table_name="space_grant")
    op.drop_table("space_grant")
    op.drop_index("ix_space_group_member_user_id", table_name="space_group_member")
    op.drop_table("space_group_member")
    op.drop_index("ix_space_group_space_id", table_name="space_group")
    op.drop_table("space_group")
