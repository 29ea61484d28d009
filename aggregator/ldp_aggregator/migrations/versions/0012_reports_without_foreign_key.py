"""reports without a foreign key to collections

The foreign key checked every inserted report's collection (on PostgreSQL a lookup and
a ``FOR KEY SHARE`` lock of the collection's row per row): an insert of 10,000 reports
took 1.5 times as long with it (``bench/report_insert.py``, docs/log-mode.md). Nothing
needs it: every writer holds the collection's row while it inserts
(``storage/lifecycle.refusal_to_write``; on SQLite the database's write lock), and
deleting a collection deletes its reports in the same transaction
(``storage/lifecycle.delete_collection``), which the ``ON DELETE CASCADE`` did before.
SQLite rebuilds the table to drop the constraint (a copy of every stored report, once).
A replica on older code that deletes a collection after this migration leaves its
reports behind: upgrade every replica before deleting collections (docs/log-mode.md).

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

FOREIGN_KEY = "fk_reports_collection_id_collections"


def upgrade() -> None:
    with op.batch_alter_table("reports", table_kwargs={"sqlite_with_rowid": False}) as batch:
        batch.drop_constraint(FOREIGN_KEY, type_="foreignkey")


def downgrade() -> None:
    op.execute("DELETE FROM reports WHERE collection_id NOT IN (SELECT id FROM collections)")
    with op.batch_alter_table("reports", table_kwargs={"sqlite_with_rowid": False}) as batch:
        batch.create_foreign_key(
            FOREIGN_KEY, "collections", ["collection_id"], ["id"], ondelete="CASCADE"
        )
