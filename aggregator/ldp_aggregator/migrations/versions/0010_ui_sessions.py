"""dashboard sessions kept server-side

``ui_sessions``: the SHA-256 of each dashboard session id (never the id), the hex
SHA-256 of the bearer token that signed in and when the session ends. The session cookie
carried the bearer token itself before; such cookies open nothing after this upgrade
(their holders sign in again).

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "ui_sessions",
        sa.Column("id_hash", sa.LargeBinary(32), primary_key=True),
        sa.Column("token_sha256", sa.String(64), nullable=False),
        sa.Column("expires_unix", sa.BigInteger(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("ui_sessions")
