"""Input bounds: a bounded tsvector index, cached memo HTML, tags within their bounds.

- PostgreSQL: ``ix_memo_content_tsv`` indexed ``to_tsvector('simple', content)``,
  which PostgreSQL refuses past 1 MiB of tsvector, so a long memo's INSERT
  failed. It now indexes the first 65,536 characters (decision 0017).
- ``memo_html``: each memo's rendered HTML, written with its content
  (``app.memos.html_cache``); memos written before this revision are rendered
  on read until they are next written.
- ``memo_tag``: derived tags are bounded (128 characters, 16 levels, 256 per
  memo). Rows an older version derived past those bounds are deleted: tags are
  derived data, and the next write of the memo derives them again. A
  downgrade does not bring them back.

The SQL is frozen here (no application module is imported), and every step
can run again on a database that already has it. A downgrade on PostgreSQL
rebuilds the unbounded index, which PostgreSQL refuses (and the downgrade
rolls back) while a memo too long for it exists: 0008 could not store one.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TSV_BOUNDED = "to_tsvector('simple'::regconfig, left(content, 65536))"
_TSV_OLD = "to_tsvector('simple'::regconfig, content)"

_TAGS_PAST_BOUNDS = (
    "DELETE FROM memo_tag WHERE position >= 256 OR length(tag) > 128"
    " OR length(tag) - length(replace(tag, '/', '')) >= 16"
)


def _tsv_index(expression: str) -> None:
    op.execute("DROP INDEX IF EXISTS ix_memo_content_tsv")
    op.execute(f"CREATE INDEX ix_memo_content_tsv ON memo USING gin ({expression})")


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        _tsv_index(_TSV_BOUNDED)
    if not sa.inspect(bind).has_table("memo_html"):
        op.create_table(
            "memo_html",
            sa.Column("memo_id", sa.Integer, nullable=False, autoincrement=False),
            sa.Column("renderer", sa.Integer, nullable=False),
            sa.Column("content_hash", sa.String(64), nullable=False),
            sa.Column("html", sa.Text, nullable=False),
            sa.ForeignKeyConstraint(
                ["memo_id"], ["memo.id"], name="fk_memo_html_memo_id_memo", ondelete="CASCADE"
            ),
            sa.PrimaryKeyConstraint("memo_id", name="pk_memo_html"),
        )
    op.execute(_TAGS_PAST_BOUNDS)


def downgrade() -> None:
    bind = op.get_bind()
    if sa.inspect(bind).has_table("memo_html"):
        op.drop_table("memo_html")
    if bind.dialect.name == "postgresql":
        _tsv_index(_TSV_OLD)
