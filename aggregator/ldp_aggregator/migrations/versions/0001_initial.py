"""initial schema: collections, collection_stats, reports

Revision ID: 0001
Revises:
Create Date: 2025-01-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "collections",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("config_json", sa.Text(), nullable=False),
        sa.Column("config_hash", sa.String(length=64), nullable=False),
        sa.Column("created_day", sa.Date(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_collections")),
        sa.UniqueConstraint("name", name=op.f("uq_collections_name")),
    )
    op.create_table(
        "collection_stats",
        sa.Column("collection_id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("n_reports", sa.BigInteger(), nullable=False),
        sa.Column("sums", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["collection_id"],
            ["collections.id"],
            name=op.f("fk_collection_stats_collection_id_collections"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("collection_id", name=op.f("pk_collection_stats")),
    )
    op.create_table(
        "reports",
        sa.Column("collection_id", sa.Integer(), nullable=False),
        sa.Column("report_id", sa.String(length=64), nullable=False),
        sa.Column("received_day", sa.Date(), nullable=False),
        sa.Column("bits", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["collection_id"],
            ["collections.id"],
            name=op.f("fk_reports_collection_id_collections"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("collection_id", "report_id", name=op.f("pk_reports")),
        sqlite_with_rowid=False,
    )


def downgrade() -> None:
    op.drop_table("reports")
    op.drop_table("collection_stats")
    op.drop_table("collections")
