"""the database's identity: a random id, made once

Log mode's ingest replicas stamp every message with the identity of the database they
read the collections from (``Ldp-Database``), and a fold worker folds only messages
stamped with its own database's: a worker started on another database (a wrong
``--database-url``, or none, which is ``./ldpcollect.db``) used to find none of the
messages' collections there, and acknowledged them as dropped, so reports answered
``accepted`` were lost (docs/log-mode.md). The id is 128 random bits in hex; it says
nothing of the data, and a copy of the database (a backup restored) keeps it.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-28
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    table = op.create_table(
        "database_identity",
        sa.Column("id", sa.String(32), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_database_identity"),
    )
    op.bulk_insert(table, [{"id": secrets.token_hex(16)}])


def downgrade() -> None:
    op.drop_table("database_identity")
