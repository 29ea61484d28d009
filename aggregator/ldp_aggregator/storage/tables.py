"""The database schema (SQLAlchemy Core). Alembic revisions must create exactly this.

Nothing stored with a report can identify or order its sender: no IP address, user
agent, or time finer than a day; the ``reports`` table is ``WITHOUT ROWID`` on SQLite
so that rows are ordered by their random ids, not by arrival. What the files still keep
of arrival order (the write-ahead log, PostgreSQL's ``xmin`` and heap order, page
layout) and how the writer bounds it: docs/privacy-at-rest.md.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    Date,
    ForeignKey,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
)

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = MetaData(naming_convention=NAMING_CONVENTION)

database_identity = Table(
    "database_identity",
    metadata,
    # one row: 128 random bits in hex, made by migration 0013; log mode's messages carry
    # it so that a fold worker folds only those meant for its database (docs/log-mode.md)
    Column("id", String(32), primary_key=True),
)

collections = Table(
    "collections",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(64), nullable=False, unique=True),
    Column("config_json", Text, nullable=False),
    Column("config_hash", String(64), nullable=False),
    Column("created_day", Date, nullable=False),
    # the day an admin closed the collection to new reports (NULL: open); see
    # ldp_aggregator.storage.lifecycle
    Column("closed_day", Date, nullable=True),
    # how many days a report keeps its bits before they are folded away (NULL: for ever);
    # see ldp_aggregator.storage.retention
    Column("retention_days", Integer, nullable=True),
)

# A collection's statistics are the sum of its shard rows (ldp_aggregator.storage.stats):
# concurrent writers (replicas on PostgreSQL) each lock and add to a different shard.
collection_stats = Table(
    "collection_stats",
    metadata,
    Column(
        "collection_id",
        Integer,
        ForeignKey("collections.id", ondelete="CASCADE"),
        nullable=False,
    ),
    # the start (Unix seconds, UTC) of the period whose reports the row counts
    # (ldp_shared.periods): a collection's statistics are kept per period
    Column("period_start", BigInteger, nullable=False),
    Column("shard", Integer, nullable=False, server_default="0"),
    Column("n_reports", BigInteger, nullable=False),
    # little-endian int64 array of length config.stats_length (empty: all zero)
    Column("sums", LargeBinary, nullable=False),
    # little-endian float64 array of length config.float_stats_length (NULL or empty:
    # all zero)
    Column("float_sums", LargeBinary, nullable=True),
    PrimaryKeyConstraint("collection_id", "period_start", "shard"),
)

reports = Table(
    "reports",
    metadata,
    # no foreign key (migration 0012): the writer holds the collection's row while it
    # inserts (storage/lifecycle.refusal_to_write), and deleting a collection deletes its
    # reports (storage/lifecycle.delete_collection)
    Column("collection_id", Integer, nullable=False),
    Column("report_id", String(64), nullable=False),
    # the only times stored with a report, neither finer than the collection's period:
    # the period it was counted in, and the day (a weekly collection's: the week's Monday)
    Column("received_day", Date, nullable=False),
    Column("period_start", BigInteger, nullable=False),
    Column("bits", LargeBinary, nullable=False),
    PrimaryKeyConstraint("collection_id", "report_id"),
    sqlite_with_rowid=False,
)

# Trained models (naive Bayes, issue 3): the model as released, as JSON. A model is
# derived from the sufficient statistics only; analysts' prediction queries are never stored.
models = Table(
    "models",
    metadata,
    Column("model_id", String(64), primary_key=True),
    Column(
        "collection_id",
        Integer,
        ForeignKey("collections.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    Column("kind", String(32), nullable=False),
    Column("created_day", Date, nullable=False),
    Column("model_json", Text, nullable=False),
)
