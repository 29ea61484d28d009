"""statistics shards: a collection's statistics are the sum of several rows

Concurrent writers (replicas sharing one PostgreSQL database) each lock and add to a
shard row of their own instead of queueing for one row per collection. The existing row
of every collection becomes its shard 0; new collections are created with
``STATS_SHARDS`` rows, and a collection with fewer rows still works (its writers share
them).

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("collection_stats", recreate="always") as batch:
        batch.add_column(sa.Column("shard", sa.Integer(), nullable=False, server_default="0"))
        batch.drop_constraint("pk_collection_stats", type_="primary")
        batch.create_primary_key("pk_collection_stats", ["collection_id", "shard"])


def downgrade() -> None:
    """Fold every collection's shards into one row (sums added as little-endian vectors)."""
    stats = sa.table(
        "collection_stats",
        sa.column("collection_id", sa.Integer()),
        sa.column("shard", sa.Integer()),
        sa.column("n_reports", sa.BigInteger()),
        sa.column("sums", sa.LargeBinary()),
        sa.column("float_sums", sa.LargeBinary()),
    )
    bind = op.get_bind()
    folded: dict[int, tuple[int, np.ndarray, np.ndarray | None]] = {}
    for row in bind.execute(sa.select(stats).order_by(stats.c.collection_id, stats.c.shard)):
        sums = np.frombuffer(bytes(row.sums), dtype="<i8")
        floats = None if row.float_sums is None else np.frombuffer(bytes(row.float_sums), "<f8")
        if row.collection_id in folded:
            n, total, float_total = folded[row.collection_id]
            if floats is not None:
                float_total = floats if float_total is None else float_total + floats
            folded[row.collection_id] = (n + row.n_reports, total + sums, float_total)
        else:
            folded[row.collection_id] = (row.n_reports, sums, floats)
    bind.execute(sa.delete(stats).where(stats.c.shard != 0))
    for collection_id, (n, total, float_total) in folded.items():
        bind.execute(
            sa.update(stats)
            .where(stats.c.collection_id == collection_id)
            .values(
                n_reports=n,
                sums=total.astype("<i8").tobytes(),
                float_sums=None if float_total is None else float_total.astype("<f8").tobytes(),
            )
        )
    with op.batch_alter_table("collection_stats", recreate="always") as batch:
        batch.drop_constraint("pk_collection_stats", type_="primary")
        batch.drop_column("shard")
        batch.create_primary_key("pk_collection_stats", ["collection_id"])
