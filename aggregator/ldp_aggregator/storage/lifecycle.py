"""Closing, reopening and deleting collections, and the check every write of reports makes.

A collection's config never changes; whether it takes new reports does. An admin closes
it (``closed_day`` is set to the day, the finest time stored) and may reopen it; its
statistics, and so its estimates and models, stay readable while it is closed.

Deleting a collection deletes its row; the foreign keys (``ON DELETE CASCADE``) take its
statistics, reports, models and jobs with it, and a job's training rounds, tokens and
reports with the job, in the same transaction: nothing is half deleted.

Replicas cache collections (:class:`~ldp_aggregator.storage.collections.CollectionCache`),
so the database decides: :func:`refusal_to_write` runs inside the transaction that writes
reports, after it took the statistics row lock that closing takes as well and that
deleting waits for, and refuses a collection that is closed, deleted, or deleted and
created again under the same name (another config hash) since the caller loaded it.
"""

from __future__ import annotations

from datetime import date

from sqlalchemy import Connection, Engine, delete, select, update

from ldp_aggregator.storage.collections import StoredCollection, utc_today
from ldp_aggregator.storage.stats import lock_stats
from ldp_aggregator.storage.tables import collection_stats, collections
from ldp_shared.errors import CollectionClosedError, CollectionNotFoundError, LDPError
from ldp_shared.lifecycle_wire import CollectionStatus


def gone(collection: StoredCollection) -> CollectionNotFoundError:
    """The error for a collection deleted since it was loaded."""
    return CollectionNotFoundError(f"no collection named {collection.name!r} (it was deleted)")


def _closed(collection: StoredCollection, day: date) -> CollectionClosedError:
    return CollectionClosedError(
        f"collection {collection.name!r} was closed to new reports on {day.isoformat()};"
        " nothing of this request was stored"
    )


def refusal_to_write(connection: Connection, collection: StoredCollection) -> LDPError | None:
    """Why no report may be written to ``collection`` now (``None``: they may). The writer
    asks after :func:`~ldp_aggregator.storage.stats.lock_stats` took the collection's lock
    (when it found no statistics row, :func:`gone` is the answer)."""
    row = connection.execute(
        select(collections.c.config_hash, collections.c.closed_day).where(
            collections.c.id == collection.id
        )
    ).one_or_none()
    if row is None or row.config_hash != collection.config.config_hash:
        return gone(collection)
    if row.closed_day is not None:
        return _closed(collection, row.closed_day)
    return None


def check_takes_reports(engine: Engine, collection: StoredCollection) -> None:
    """Raise what :func:`refusal_to_write` would refuse with, without locking (for a batch
    that writes nothing, so that it is answered as one that would)."""
    with engine.connect() as connection:
        refusal = refusal_to_write(connection, collection)
    if refusal is not None:
        raise refusal


def collection_status(engine: Engine, collection: StoredCollection) -> CollectionStatus:
    """Whether the collection is open, and its report count."""
    with engine.connect() as connection:
        return status_in(connection, collection)


def status_in(connection: Connection, collection: StoredCollection) -> CollectionStatus:
    row = connection.execute(
        select(
            collections.c.config_hash,
            collections.c.closed_day,
            collections.c.retention_days,
            collection_stats.c.n_reports,
        )
        .join(collection_stats, collection_stats.c.collection_id == collections.c.id)
        .where(collections.c.id == collection.id)
    ).one_or_none()
    if row is None or row.config_hash != collection.config.config_hash:
        raise gone(collection)
    return CollectionStatus(
        name=collection.name,
        open=row.closed_day is None,
        closed_day=row.closed_day,
        n_reports=int(row.n_reports),
        retention_days=row.retention_days,
    )


def set_closed(
    engine: Engine, collection: StoredCollection, closed: bool, today: date | None = None
) -> CollectionStatus:
    """Close the collection to new reports (``closed``) or reopen it. Idempotent: closing a
    closed collection keeps its first day. Reports being written commit before this does."""
    with engine.begin() as connection:
        if not lock_stats(connection, collection.id):
            raise gone(collection)
        current = status_in(connection, collection)
        if closed == current.open:
            connection.execute(
                update(collections)
                .where(collections.c.id == collection.id)
                .values(closed_day=(today or utc_today()) if closed else None)
            )
        return status_in(connection, collection)


def delete_collection(engine: Engine, collection: StoredCollection) -> None:
    """Delete the collection and everything that hangs off it, in one transaction."""
    with engine.begin() as connection:
        result = connection.execute(
            delete(collections).where(
                collections.c.id == collection.id,
                collections.c.config_hash == collection.config.config_hash,
            )
        )
        if result.rowcount != 1:
            raise gone(collection)
