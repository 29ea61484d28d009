"""periods: statistics are kept per period (hour, day or ISO week, UTC), and every report
row names the period it was counted in

A collection's statistics rows become ``(collection_id, period_start, shard)``. The
statistics gathered before this upgrade cannot be split by time, so every existing row
and report lands in one period: the day of the upgrade (UTC), which is the period of
every existing collection (their specs predate the ``period`` setting, so it is ``day``).

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-26
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np
import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _upgrade_day() -> str:
    now = int(datetime.now(UTC).timestamp())
    return str(now - now % 86_400)


def upgrade() -> None:
    start = _upgrade_day()
    with op.batch_alter_table("collection_stats", recreate="always") as batch:
        batch.add_column(
            sa.Column("period_start", sa.BigInteger(), nullable=False, server_default=start)
        )
        batch.drop_constraint("pk_collection_stats", type_="primary")
        batch.create_primary_key("pk_collection_stats", ["collection_id", "period_start", "shard"])
    # reports is a WITHOUT ROWID table on SQLite, which a batch copy would not keep: an
    # ALTER TABLE adds the column in place there (the default stays, unused: every insert
    # names the period)
    op.add_column(
        "reports", sa.Column("period_start", sa.BigInteger(), nullable=False, server_default=start)
    )
    with op.batch_alter_table("collection_stats") as batch:
        batch.alter_column("period_start", server_default=None)
    if op.get_bind().dialect.name != "sqlite":
        op.alter_column("reports", "period_start", server_default=None)


def downgrade() -> None:
    """Add every collection's periods up, shard by shard, into the rows of one period.

    A shard never written holds an empty vector, which the code before this revision
    does not read: downgrade only databases whose collections all hold reports."""
    stats = sa.table(
        "collection_stats",
        sa.column("collection_id", sa.Integer()),
        sa.column("period_start", sa.BigInteger()),
        sa.column("shard", sa.Integer()),
        sa.column("n_reports", sa.BigInteger()),
        sa.column("sums", sa.LargeBinary()),
        sa.column("float_sums", sa.LargeBinary()),
    )
    bind = op.get_bind()
    folded: dict[tuple[int, int], tuple[int, bytes, bytes | None]] = {}
    for row in bind.execute(sa.select(stats)):
        key = (int(row.collection_id), int(row.shard))
        n, sums, floats = folded.get(key, (0, b"", None))
        folded[key] = (
            n + int(row.n_reports),
            _add(sums, bytes(row.sums), "<i8"),
            _add(floats or b"", bytes(row.float_sums or b""), "<f8") or None,
        )
    bind.execute(sa.delete(stats))
    for (collection_id, shard), (n, sums, floats) in folded.items():
        bind.execute(
            sa.insert(stats).values(
                collection_id=collection_id,
                period_start=0,
                shard=shard,
                n_reports=n,
                sums=sums,
                float_sums=floats,
            )
        )
    with op.batch_alter_table("collection_stats", recreate="always") as batch:
        batch.drop_constraint("pk_collection_stats", type_="primary")
        batch.drop_column("period_start")
        batch.create_primary_key("pk_collection_stats", ["collection_id", "shard"])
    if bind.dialect.name == "sqlite":
        op.execute("ALTER TABLE reports DROP COLUMN period_start")
    else:
        op.drop_column("reports", "period_start")


def _add(left: bytes, right: bytes, dtype: str) -> bytes:
    """The sum of two stored vectors (an empty one is all zero)."""
    if not left or not right:
        return left or right
    total = np.frombuffer(left, dtype) + np.frombuffer(right, dtype)
    return bytes(total.astype(dtype).tobytes())
