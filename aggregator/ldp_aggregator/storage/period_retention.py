"""Retention of whole periods: merge old periods into coarser ones, or drop them.

* **Merge** (:func:`merge_periods`): every period that starts before a bound is added
  into the coarser period that contains it (a day, an ISO week) or, with ``all``, into the
  oldest of them. The statistics are sums, so the merged rows are exactly the statistics
  of the same reports; an estimate over every period is unchanged, while a window now
  takes in a merged period whole when its start lies in the window. The reports of a
  merged period are moved with it (their ``period_start``, and their ``received_day`` to
  the merged period's first day), so no row keeps a time finer than its period.
* **Drop** (:func:`drop_periods`): the statistics of every period that starts before a
  bound are deleted, and its reports are folded (bits emptied, as retention by days
  does); their rows and ids stay, so a replay of a dropped report is still answered
  ``duplicate`` and never counted again.

Only whole periods that have ended are touched (the bound is at most the current
period's start), in one transaction that holds the collection against writers.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import Connection, Engine, delete, func, insert, select, update

from ldp_aggregator.storage.collections import StoredCollection
from ldp_aggregator.storage.lifecycle import gone, lock_collection
from ldp_aggregator.storage.retention import FOLDED
from ldp_aggregator.storage.stats import Stats, sum_stats
from ldp_aggregator.storage.stats_codec import (
    decode_floats,
    decode_sums,
    encode_floats,
    encode_sums,
)
from ldp_aggregator.storage.tables import collection_stats, reports
from ldp_shared.errors import InvalidQueryError
from ldp_shared.periods import PERIOD_SECONDS, period_label, period_start, start_instant

MERGE_TARGETS = ("day", "week", "all")


@dataclass(frozen=True)
class PeriodChange:
    """What a merge or a drop did: periods holding statistics before and after, and the
    reports moved (merge) or folded (drop)."""

    periods_before: int
    periods_after: int
    reports: int


def _check_bound(collection: StoredCollection, before: int) -> None:
    period = collection.config.spec.period
    current = period_start(datetime.now(UTC), period)
    if before > current:
        raise InvalidQueryError(
            f"before={period_label(before, period)} is after the current {period}: only"
            " periods that have ended can be merged or dropped"
        )


def _target(start: int, into: str, oldest: int) -> int:
    return oldest if into == "all" else period_start(start_instant(start), into)


def merge_periods(
    engine: Engine, collection: StoredCollection, before: int, into: str
) -> PeriodChange:
    """Merge every period of ``collection`` that starts before ``before`` into the
    ``into`` period containing it (``day``, ``week``, or ``all``: the oldest)."""
    period = collection.config.spec.period
    if into not in MERGE_TARGETS:
        raise InvalidQueryError(f"into={into!r}: merge into one of {', '.join(MERGE_TARGETS)}")
    coarser = [t for t in MERGE_TARGETS if t == "all" or PERIOD_SECONDS[t] > PERIOD_SECONDS[period]]
    if into not in coarser:
        raise InvalidQueryError(
            f"the collection's periods are {period}s: merge them into a coarser period"
            f" ({', '.join(coarser)})"
        )
    _check_bound(collection, before)
    config = collection.config
    lengths = (config.stats_length, config.float_stats_length)
    with engine.begin() as connection:
        if not lock_collection(connection, collection.id):
            raise gone(collection)
        periods_before = _count_periods(connection, collection.id)
        rows = connection.execute(
            select(
                collection_stats.c.period_start,
                collection_stats.c.n_reports,
                collection_stats.c.sums,
                collection_stats.c.float_sums,
            ).where(
                collection_stats.c.collection_id == collection.id,
                collection_stats.c.period_start < before,
            )
        ).all()
        if not rows:
            return PeriodChange(periods_before, periods_before, 0)
        oldest = min(int(row.period_start) for row in rows)
        merged: dict[int, list[Stats]] = defaultdict(list)
        sources: dict[int, set[int]] = defaultdict(set)
        for row in rows:
            target = _target(int(row.period_start), into, oldest)
            sources[target].add(int(row.period_start))
            merged[target].append(
                Stats(
                    int(row.n_reports),
                    decode_sums(bytes(row.sums), lengths[0]),
                    decode_floats(row.float_sums, lengths[1]),
                )
            )
        connection.execute(
            delete(collection_stats).where(
                collection_stats.c.collection_id == collection.id,
                collection_stats.c.period_start < before,
            )
        )
        moved = 0
        for target, parts in sorted(merged.items()):
            total = sum_stats(parts)
            connection.execute(
                insert(collection_stats).values(
                    collection_id=collection.id,
                    period_start=target,
                    shard=0,
                    n_reports=total.n_reports,
                    sums=encode_sums(total.sums),
                    float_sums=encode_floats(total.floats),
                )
            )
            moved += _move_reports(connection, collection.id, sorted(sources[target]), target)
        return PeriodChange(periods_before, _count_periods(connection, collection.id), moved)


def _move_reports(connection: Connection, collection_id: int, starts: list[int], to: int) -> int:
    result = connection.execute(
        update(reports)
        .where(reports.c.collection_id == collection_id, reports.c.period_start.in_(starts))
        .values(period_start=to, received_day=start_instant(to).date())
    )
    return int(result.rowcount)


def drop_periods(engine: Engine, collection: StoredCollection, before: int) -> PeriodChange:
    """Delete the statistics of every period of ``collection`` that starts before
    ``before`` and fold its reports (their ids stay, for replays)."""
    _check_bound(collection, before)
    with engine.begin() as connection:
        if not lock_collection(connection, collection.id):
            raise gone(collection)
        periods_before = _count_periods(connection, collection.id)
        connection.execute(
            delete(collection_stats).where(
                collection_stats.c.collection_id == collection.id,
                collection_stats.c.period_start < before,
            )
        )
        folded = connection.execute(
            update(reports)
            .where(
                reports.c.collection_id == collection.id,
                reports.c.period_start < before,
                reports.c.bits != FOLDED,
            )
            .values(bits=FOLDED)
        )
        return PeriodChange(
            periods_before, _count_periods(connection, collection.id), int(folded.rowcount)
        )


def _count_periods(connection: Connection, collection_id: int) -> int:
    return int(
        connection.execute(
            select(func.count(func.distinct(collection_stats.c.period_start))).where(
                collection_stats.c.collection_id == collection_id
            )
        ).scalar_one()
    )
