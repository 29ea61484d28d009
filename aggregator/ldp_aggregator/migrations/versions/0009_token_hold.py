"""training tokens keep the coarse end of their hold, not the second they were issued

``training_tokens.issued_unix`` (the issuing second) becomes ``held_until``: the end of
the place's hold rounded up to a multiple of the hold, and nothing once the token is
used or its round closed (docs/training-jobs.md). An unused token of an open round gets
the end its issuing second gives; the others get none.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-27
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

DEFAULT_HOLD = 60.0  # TrainingSpec.participation_seconds when a spec leaves it out

tokens = sa.table(
    "training_tokens",
    sa.column("job_id", sa.String()),
    sa.column("round", sa.Integer()),
    sa.column("used", sa.Integer()),
    sa.column("issued_unix", sa.BigInteger()),
    sa.column("held_until", sa.BigInteger()),
)
rounds = sa.table(
    "training_rounds", sa.column("job_id", sa.String()), sa.column("round", sa.Integer())
)
jobs = sa.table("jobs", sa.column("id", sa.String()), sa.column("request_json", sa.Text()))


def _holds(bind: sa.Connection) -> dict[str, int]:
    """Each training job's hold in whole seconds, by job id."""
    query = sa.select(jobs.c.id, jobs.c.request_json).where(
        jobs.c.id.in_(sa.select(tokens.c.job_id).distinct())
    )
    return {
        str(job_id): math.ceil(json.loads(spec).get("participation_seconds") or DEFAULT_HOLD)
        for job_id, spec in bind.execute(query)
    }


def _open(job_id: str) -> sa.ColumnElement[bool]:
    """The token is unused and of its job's open round."""
    open_round = sa.select(rounds.c.round).where(rounds.c.job_id == job_id).scalar_subquery()
    return sa.and_(tokens.c.job_id == job_id, tokens.c.used == 0, tokens.c.round == open_round)


def _drop_column(table: str, column: str) -> None:
    # training_tokens is a WITHOUT ROWID table on SQLite, which a batch copy would not
    # keep: SQLite drops the column in place
    if op.get_bind().dialect.name == "sqlite":
        op.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    else:
        op.drop_column(table, column)


def upgrade() -> None:
    op.add_column("training_tokens", sa.Column("held_until", sa.BigInteger(), nullable=True))
    bind = op.get_bind()
    for job_id, hold in _holds(bind).items():
        # issued + hold rounded up to a multiple of hold (all positive: // floors)
        end = (tokens.c.issued_unix + (2 * hold - 1)) // hold * hold
        bind.execute(sa.update(tokens).where(_open(job_id)).values(held_until=end))
    _drop_column("training_tokens", "issued_unix")


def downgrade() -> None:
    """The issuing second comes back as the hold's end less the hold (0 where none)."""
    op.add_column(
        "training_tokens",
        sa.Column("issued_unix", sa.BigInteger(), nullable=False, server_default="0"),
    )
    bind = op.get_bind()
    for job_id, hold in _holds(bind).items():
        bind.execute(
            sa.update(tokens)
            .where(_open(job_id), tokens.c.held_until.is_not(None))
            .values(issued_unix=tokens.c.held_until - hold)
        )
    if bind.dialect.name != "sqlite":
        op.alter_column("training_tokens", "issued_unix", server_default=None)
    _drop_column("training_tokens", "held_until")
