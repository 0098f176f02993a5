"""Job leases: which process runs each background job (``daybook serve --workers N``).

One row per job name (``embedding``, ``webhook-delivery``, ``trash-retention``)
naming the process that holds it and when its lease runs out; a process takes
the row when it is free or expired and renews it while it runs the job
(:mod:`app.jobs.lease`). The downgrade drops the table: leases are renewed
every few seconds, so nothing is lost but who runs what for one lease period.

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "job_lease",
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("holder", sa.String(128), nullable=False),
        sa.Column("expires_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_job_lease"),
        if_not_exists=True,
    )


def downgrade() -> None:
    op.drop_table("job_lease", if_exists=True)
