"""training curve in a table of its own; training tokens indexed by round

``training_curve`` holds one row per closed round (its log, JSON), moved out of
``training_rounds.curve_json``: every request of a job updates that job's
``training_rounds`` row, which SQLite rewrites whole, so a curve kept there made every
request cost more as the job ran. ``ix_training_tokens_round`` finds the open round's
tokens without reading those of earlier rounds (docs/training-jobs.md).

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-27
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

rounds = sa.table(
    "training_rounds", sa.column("job_id", sa.String()), sa.column("curve_json", sa.Text())
)
curve = sa.table(
    "training_curve",
    sa.column("job_id", sa.String()),
    sa.column("round", sa.Integer()),
    sa.column("log_json", sa.Text()),
)


def upgrade() -> None:
    op.create_table(
        "training_curve",
        sa.Column(
            "job_id",
            sa.String(32),
            sa.ForeignKey("jobs.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("round", sa.Integer(), nullable=False),
        sa.Column("log_json", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("job_id", "round"),
    )
    op.create_index("ix_training_tokens_round", "training_tokens", ["job_id", "round"])
    bind = op.get_bind()
    for job_id, text in bind.execute(sa.select(rounds.c.job_id, rounds.c.curve_json)).all():
        logs = json.loads(text)
        if logs:
            bind.execute(
                sa.insert(curve),
                [
                    {"job_id": job_id, "round": i, "log_json": json.dumps(log)}
                    for i, log in enumerate(logs)
                ],
            )
    bind.execute(sa.update(rounds).values(curve_json="[]"))


def downgrade() -> None:
    bind = op.get_bind()
    for (job_id,) in bind.execute(sa.select(rounds.c.job_id)).all():
        logs = bind.execute(
            sa.select(curve.c.log_json).where(curve.c.job_id == job_id).order_by(curve.c.round)
        ).scalars()
        text = "[" + ",".join(logs) + "]"
        bind.execute(sa.update(rounds).where(rounds.c.job_id == job_id).values(curve_json=text))
    op.drop_index("ix_training_tokens_round", table_name="training_tokens")
    op.drop_table("training_curve")
