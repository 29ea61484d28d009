"""Retention: after a collection's ``retention_days``, reports are folded away.

Folding a report empties its ``bits`` and keeps its row: the random id, so that a replay of
the report is still answered ``duplicate`` and counted once, and its day of receipt (the
only time stored). Nothing else is lost, because the statistics already hold every
folded report: they are the sufficient statistics of all the estimates (frequencies,
means, quantiles, naive Bayes), which read them and never the rows. What does read the
rows, itemset mining, mines the reports still holding their bits
(:func:`~ldp_aggregator.storage.reports.iter_report_bits` skips folded ones).

A report received on day ``D`` keeps its bits through day ``D + retention_days`` and is
folded from the day after. :func:`fold_expired` folds every collection's expired reports;
the app's :class:`~ldp_aggregator.reshuffler.Reshuffler` calls it on each of its turns, and
setting a retention folds at once.
"""

from __future__ import annotations

from datetime import date, timedelta

from sqlalchemy import Connection, Engine, select, update

from ldp_aggregator.storage.collections import StoredCollection, utc_today
from ldp_aggregator.storage.lifecycle import gone, lock_collection, status_in
from ldp_aggregator.storage.tables import collections, reports
from ldp_shared.wire.lifecycle import CollectionStatus

FOLDED = b""
"""The bits of a folded report."""


def fold_reports(connection: Connection, collection_id: int, days: int, today: date) -> int:
    """Fold the collection's reports received more than ``days`` days before ``today``;
    how many were folded now."""
    result = connection.execute(
        update(reports)
        .where(
            reports.c.collection_id == collection_id,
            reports.c.received_day < today - timedelta(days=days),
            reports.c.bits != FOLDED,
        )
        .values(bits=FOLDED)
    )
    return int(result.rowcount)


def fold_expired(engine: Engine, today: date | None = None) -> int:
    """Fold the expired reports of every collection with a retention; how many."""
    day = today or utc_today()
    with engine.connect() as connection:
        kept = connection.execute(
            select(collections.c.id, collections.c.retention_days).where(
                collections.c.retention_days.is_not(None)
            )
        ).all()
    folded = 0
    for collection_id, days in kept:
        with engine.begin() as connection:
            folded += fold_reports(connection, int(collection_id), int(days), day)
    return folded


def set_retention(
    engine: Engine, collection: StoredCollection, days: int | None, today: date | None = None
) -> CollectionStatus:
    """Keep the collection's report bits ``days`` days (``None``: for ever), folding the
    reports already past it in the same transaction."""
    with engine.begin() as connection:
        if not lock_collection(connection, collection.id):
            raise gone(collection)
        current = status_in(connection, collection)  # raises for a deleted collection
        if current.retention_days != days:
            connection.execute(
                update(collections)
                .where(collections.c.id == collection.id)
                .values(retention_days=days)
            )
        if days is not None:
            fold_reports(connection, collection.id, days, today or utc_today())
        return status_in(connection, collection)
