"""float statistics: a float64 block vector next to the int64 sums of each collection

Mechanisms may keep float64 sufficient statistics (named blocks in their layout); they
are stored beside the int64 ``sums``. Rows of existing collections keep NULL, which
reads as the empty vector their configs ask for.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("collection_stats") as batch:
        batch.add_column(sa.Column("float_sums", sa.LargeBinary(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("collection_stats") as batch:
        batch.drop_column("float_sums")
