"""training jobs: the open round of each job, participation tokens, the round's reports

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _job_key(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["job_id"], ["jobs.id"], name=op.f(f"fk_{table}_job_id_jobs"), ondelete="CASCADE"
    )


def upgrade() -> None:
    op.create_table(
        "training_rounds",
        sa.Column("job_id", sa.String(length=32), nullable=False),
        sa.Column("round", sa.Integer(), nullable=False),
        sa.Column("gradient_received", sa.Integer(), nullable=False),
        sa.Column("loss_received", sa.Integer(), nullable=False),
        sa.Column("weights", sa.LargeBinary(), nullable=False),
        sa.Column("weight_sum", sa.LargeBinary(), nullable=False),
        sa.Column("curve_json", sa.Text(), nullable=False),
        _job_key("training_rounds"),
        sa.PrimaryKeyConstraint("job_id", name=op.f("pk_training_rounds")),
    )
    op.create_table(
        "training_tokens",
        sa.Column("job_id", sa.String(length=32), nullable=False),
        sa.Column("token_hash", sa.LargeBinary(length=32), nullable=False),
        sa.Column("round", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(length=8), nullable=False),
        sa.Column("issued_unix", sa.BigInteger(), nullable=False),
        sa.Column("used", sa.Integer(), nullable=False),
        _job_key("training_tokens"),
        sa.PrimaryKeyConstraint("job_id", "token_hash", name=op.f("pk_training_tokens")),
        sqlite_with_rowid=False,
    )
    op.create_table(
        "training_reports",
        sa.Column("job_id", sa.String(length=32), nullable=False),
        sa.Column("report_id", sa.LargeBinary(length=16), nullable=False),
        sa.Column("round", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(length=8), nullable=False),
        sa.Column("payload", sa.LargeBinary(), nullable=False),
        _job_key("training_reports"),
        sa.PrimaryKeyConstraint("job_id", "report_id", name=op.f("pk_training_reports")),
        sqlite_with_rowid=False,
    )


def downgrade() -> None:
    op.drop_table("training_reports")
    op.drop_table("training_tokens")
    op.drop_table("training_rounds")
