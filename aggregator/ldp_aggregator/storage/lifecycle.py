"""Closing, reopening and deleting collections, and the check every write of reports makes.

A collection's config never changes; whether it takes new reports does. An admin closes
it (``closed_day`` is set to the day, the finest time stored) and may reopen it; its
statistics, and so its estimates and models, stay readable while it is closed.

Deleting a collection deletes its row and its reports (:func:`delete_collection`; the
reports table has no foreign key); the foreign keys (``ON DELETE CASCADE``) take its
statistics, models and jobs with it, and a job's training rounds, tokens and reports with
the job, in the same transaction: nothing is half deleted.

Replicas cache collections (:class:`~ldp_aggregator.storage.collections.CollectionCache`),
so the database decides: :func:`refusal_to_write` runs inside the transaction that writes
reports and refuses a collection that is closed, deleted, or deleted and created again
under the same name (another config hash) since the caller loaded it. Writers and the
admin's changes exclude each other through the collection's row: on PostgreSQL a writer
reads it ``FOR SHARE`` (writers on several replicas do not wait for each other) and
closing, retention and deleting lock it for update; on SQLite every writing transaction
holds the database's one write lock.
"""

from __future__ import annotations

from datetime import date
from functools import lru_cache

from sqlalchemy import Connection, Dialect, Engine, bindparam, delete, func, select, update

from ldp_aggregator.storage.collections import StoredCollection, utc_today
from ldp_aggregator.storage.driver import DriverStatement, compile_for
from ldp_aggregator.storage.tables import collection_stats, collections, reports
from ldp_shared.errors import CollectionClosedError, CollectionNotFoundError, LDPError
from ldp_shared.wire.lifecycle import CollectionStatus


def gone(collection: StoredCollection) -> CollectionNotFoundError:
    """The error for a collection deleted since it was loaded."""
    return CollectionNotFoundError(f"no collection named {collection.name!r} (it was deleted)")


def _closed(collection: StoredCollection, day: date) -> CollectionClosedError:
    return CollectionClosedError(
        f"collection {collection.name!r} was closed to new reports on {day.isoformat()};"
        " nothing of this request was stored"
    )


def lock_collection(connection: Connection, collection_id: int) -> bool:
    """Lock the collection against writers of its reports until the transaction ends
    (``False``: it was deleted). PostgreSQL: its row ``FOR UPDATE``, which waits for the
    writers that hold it ``FOR SHARE``; SQLite: a no-op write, which takes the database's
    write lock before the transaction reads anything."""
    if connection.dialect.name == "sqlite":
        result = connection.execute(
            update(collections)
            .where(collections.c.id == collection_id)
            .values(closed_day=collections.c.closed_day)
        )
        return result.rowcount == 1
    found = connection.execute(
        select(collections.c.id).where(collections.c.id == collection_id).with_for_update()
    ).one_or_none()
    return found is not None


def refusal_to_write(
    connection: Connection, collection: StoredCollection, *, lock: bool = True
) -> LDPError | None:
    """Why no report may be written to ``collection`` now (``None``: they may). With
    ``lock``, PostgreSQL keeps the collection's row ``FOR SHARE`` until the transaction
    ends, so that it cannot be closed or deleted meanwhile (on SQLite the writer took the
    database's write lock first, see :func:`~ldp_aggregator.storage.stats.claim_shard`).
    Every ingest transaction asks this, so the query is compiled once per dialect
    (:mod:`~ldp_aggregator.storage.driver`)."""
    row = _refusal_query(connection.dialect, lock).run(connection, {"cid": collection.id})
    found = row.one_or_none()
    if found is None or found.config_hash != collection.config.config_hash:
        return gone(collection)
    if found.closed_day is not None:
        return _closed(collection, _closed_day(connection.dialect, found.closed_day))
    return None


@lru_cache(maxsize=16)
def _refusal_query(dialect: Dialect, lock: bool) -> DriverStatement:
    query = select(collections.c.config_hash, collections.c.closed_day).where(
        collections.c.id == bindparam("cid")
    )
    if lock:
        query = query.with_for_update(read=True)
    return compile_for(query, dialect)


def _closed_day(dialect: Dialect, stored: object) -> date:
    """The stored ``closed_day`` as a date (SQLite keeps it as text)."""
    if isinstance(stored, date):
        return stored
    processor = collections.c.closed_day.type.dialect_impl(dialect).result_processor(dialect, None)
    value = processor(stored) if processor is not None else stored
    assert isinstance(value, date)
    return value


def check_takes_reports(engine: Engine, collection: StoredCollection) -> None:
    """Raise what :func:`refusal_to_write` would refuse with, without locking (for a batch
    that writes nothing, so that it is answered as one that would)."""
    with engine.connect() as connection:
        refusal = refusal_to_write(connection, collection, lock=False)
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
            select(func.sum(collection_stats.c.n_reports))
            .where(collection_stats.c.collection_id == collections.c.id)
            .scalar_subquery()
            .label("n_reports"),
        ).where(collections.c.id == collection.id)
    ).one_or_none()
    if row is None or row.config_hash != collection.config.config_hash:
        raise gone(collection)
    return CollectionStatus(
        name=collection.name,
        open=row.closed_day is None,
        closed_day=row.closed_day,
        n_reports=int(row.n_reports or 0),
        retention_days=row.retention_days,
    )


def set_closed(
    engine: Engine, collection: StoredCollection, closed: bool, today: date | None = None
) -> CollectionStatus:
    """Close the collection to new reports (``closed``) or reopen it. Idempotent: closing a
    closed collection keeps its first day. Reports being written commit before this does."""
    with engine.begin() as connection:
        if not lock_collection(connection, collection.id):
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
    """Delete the collection and everything that hangs off it, in one transaction.

    Its reports are deleted here, not by a foreign key (``reports`` has none: the check
    it made on every inserted row cost a third of the insert). The collection's row goes
    first: that waits for every writer holding it (``FOR SHARE``, see
    :func:`refusal_to_write`) to commit, and a later writer finds it gone, so the second
    statement sees every report that will ever be written for the collection."""
    with engine.begin() as connection:
        result = connection.execute(
            delete(collections).where(
                collections.c.id == collection.id,
                collections.c.config_hash == collection.config.config_hash,
            )
        )
        if result.rowcount != 1:
            raise gone(collection)
        connection.execute(delete(reports).where(reports.c.collection_id == collection.id))
