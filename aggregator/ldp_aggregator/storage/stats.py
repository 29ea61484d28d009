"""The sufficient statistics of a collection: ``n_reports`` and its mechanisms' blocks.

They are kept per period (:mod:`ldp_shared.periods`): the rows of one period are the
statistics of the reports accepted in it, and an estimate over a window adds up the rows
of its periods. A period has up to :data:`STATS_SHARDS` rows, summed when read: a writer
adds to one shard, so that writers on several replicas need not queue for one row. Rows
are created when a period's first report is written; an empty vector stands for zeros.

The int64 blocks are kept as one array of ``config.stats_length`` values (``sums``), in
the narrowest little-endian integer width that holds them, the float64 blocks as one
little-endian float64 array of ``config.float_stats_length`` values (``float_sums``;
NULL in rows written before it existed): :mod:`~ldp_aggregator.storage.stats_codec`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import Connection, Dialect, bindparam, select, text, update
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import IntegrityError, OperationalError

from ldp_aggregator.storage.driver import DriverStatement, compile_for
from ldp_aggregator.storage.stats_codec import (
    decode_floats,
    decode_sums,
    encode_floats,
    encode_sums,
)
from ldp_aggregator.storage.tables import collection_stats, collections
from ldp_shared.codec import DecodedBatch, decode_reports
from ldp_shared.collection import CollectionConfig
from ldp_shared.errors import CollectionNotFoundError, CorruptStatisticsError
from ldp_shared.periods import Window

__all__ = [
    "ClaimedShard",
    "CorruptStatisticsError",
    "Stats",
    "add_to_shard",
    "claim_shard",
    "delta_of",
    "empty_stats_rows",
    "no_stats",
    "prepare_period",
    "read_period_stats",
    "read_stats",
    "statistics_of",
    "sum_stats",
]


@dataclass(frozen=True)
class Stats:
    """``n`` reports, their int64 sums (``stats_length``) and float64 sums
    (``float_stats_length``)."""

    n_reports: int
    sums: NDArray[np.int64]
    floats: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))


def no_stats(length: int, float_length: int = 0) -> Stats:
    """The statistics of no reports."""
    return Stats(0, np.zeros(length, dtype=np.int64), np.zeros(float_length))


def delta_of(decoded: DecodedBatch) -> Stats:
    """The statistics that the valid rows of a decoded batch add."""
    return Stats(n_reports=int(decoded.valid.sum()), sums=decoded.sums, floats=decoded.floats)


def statistics_of(config: CollectionConfig, matrix: NDArray[np.uint8]) -> Stats:
    """The statistics that valid packed reports ``matrix`` add to their collection's."""
    return delta_of(decode_reports(config, matrix))


def sum_stats(parts: list[Stats]) -> Stats:
    """The statistics of several sets of reports of one collection together (``parts``
    not empty)."""
    return Stats(
        n_reports=sum(part.n_reports for part in parts),
        sums=np.sum([part.sums for part in parts], axis=0, dtype=np.int64),
        floats=np.sum([part.floats for part in parts], axis=0, dtype=np.float64),
    )


STATS_SHARDS = 8
"""Statistics rows per period at most. A writing transaction locks one shard of its
period and adds to it; on PostgreSQL it takes the first shard no other transaction
holds, so up to this many replicas write the same collection at once. SQLite has one
writer at a time and uses shard 0 only."""


@dataclass(frozen=True)
class ClaimedShard:
    """A statistics shard locked by the current transaction, and what it holds."""

    period_start: int
    shard: int
    stats: Stats


def empty_stats_rows(
    collection_id: int, period_start: int, shards: int = STATS_SHARDS
) -> list[dict[str, object]]:
    """The statistics rows of a period without reports (empty vectors: zeros)."""
    return [
        {
            "collection_id": collection_id,
            "period_start": period_start,
            "shard": shard,
            "n_reports": 0,
            "sums": b"",
            "float_sums": None,
        }
        for shard in range(shards)
    ]


_COLUMNS = (
    collection_stats.c.shard,
    collection_stats.c.n_reports,
    collection_stats.c.sums,
    collection_stats.c.float_sums,
)


def claim_shard(
    connection: Connection,
    collection_id: int,
    period_start: int,
    length: int,
    float_length: int = 0,
) -> ClaimedShard | None:
    """Lock one statistics shard of the collection's period ``period_start`` for this
    transaction and read it, creating the period's rows at its first report (``None``:
    the collection was deleted).

    PostgreSQL: the first shard that no other transaction holds (``SKIP LOCKED``), or,
    when all are held, shard 0 once it is free. SQLite: shard 0, with a write that takes
    the database's write lock before the transaction reads anything (a transaction that
    read first could not write after another connection committed).
    """
    statements = _shard_statements(connection.dialect)
    key = {"cid": collection_id, "period": period_start}
    sqlite = connection.dialect.name == "sqlite"
    if sqlite:
        row = _lock_shard_0(connection, statements, key)
    else:
        row = statements.first_free.run(connection, key).one_or_none()
    if row is None:
        if not _exists(connection, collection_id):
            return None
        if sqlite:  # the one writer: inside this transaction
            _create_period(connection, collection_id, period_start, 1)
            row = _lock_shard_0(connection, statements, key)
        else:
            _create_period_apart(connection, collection_id, period_start)
            row = statements.first_free.run(connection, key).one_or_none()
            if row is None:  # every shard is held: wait for shard 0
                row = statements.first_waiting.run(connection, key).one_or_none()
    if row is None:
        return None
    return ClaimedShard(
        period_start=period_start,
        shard=int(row.shard),
        stats=_stats_of_row(row, length, float_length),
    )


@dataclass(frozen=True)
class _ShardStatements:
    """The statements of :func:`claim_shard` and :func:`add_to_shard` for one dialect,
    compiled once (:mod:`~ldp_aggregator.storage.driver`); parameters ``cid`` and
    ``period``, the write also ``at_shard``, ``new_n``, ``new_sums`` and ``new_floats``."""

    lock_shard_0: DriverStatement  # a no-op write of shard 0, RETURNING it where it can
    read_shard_0: DriverStatement
    first_free: DriverStatement  # PostgreSQL: the first shard nobody holds
    first_waiting: DriverStatement  # PostgreSQL: shard 0, waiting for it
    write: DriverStatement


@lru_cache(maxsize=8)
def _shard_statements(dialect: Dialect) -> _ShardStatements:
    of_period = (
        collection_stats.c.collection_id == bindparam("cid"),
        collection_stats.c.period_start == bindparam("period"),
    )
    lock = (
        update(collection_stats)
        .where(*of_period, collection_stats.c.shard == 0)
        .values(n_reports=collection_stats.c.n_reports)
    )
    if dialect.update_returning:  # SQLite 3.35 and newer: one statement
        lock = lock.returning(*_COLUMNS)
    first = select(*_COLUMNS).where(*of_period).order_by(collection_stats.c.shard).limit(1)
    write = (
        update(collection_stats)
        .where(*of_period, collection_stats.c.shard == bindparam("at_shard"))
        .values(
            n_reports=bindparam("new_n"),
            sums=bindparam("new_sums"),
            float_sums=bindparam("new_floats"),
        )
    )
    shard_0 = select(*_COLUMNS).where(*of_period, collection_stats.c.shard == 0)
    return _ShardStatements(
        lock_shard_0=compile_for(lock, dialect),
        read_shard_0=compile_for(shard_0, dialect),
        first_free=compile_for(first.with_for_update(skip_locked=True), dialect),
        first_waiting=compile_for(first.with_for_update(), dialect),
        write=compile_for(write, dialect),
    )


def _lock_shard_0(connection: Connection, statements: _ShardStatements, key: dict[str, int]) -> Any:
    locked = statements.lock_shard_0.run(connection, key)
    if connection.dialect.update_returning:
        return locked.one_or_none()
    return statements.read_shard_0.run(connection, key).one_or_none()


def _exists(connection: Connection, collection_id: int) -> bool:
    found = connection.execute(select(collections.c.id).where(collections.c.id == collection_id))
    return found.first() is not None


def _create_period(
    connection: Connection, collection_id: int, period_start: int, shards: int
) -> None:
    """Insert the empty rows of a period (those another transaction inserted are kept)."""
    rows = empty_stats_rows(collection_id, period_start, shards)
    dialect_insert = postgresql.insert if connection.dialect.name == "postgresql" else sqlite_insert
    connection.execute(dialect_insert(collection_stats).on_conflict_do_nothing(), rows)


def prepare_period(connection: Connection, collection_id: int, period_start: int) -> None:
    """PostgreSQL: make sure the period's rows exist before this transaction locks the
    collection (:func:`claim_shard` then finds them). Creating them in a transaction of
    their own lets the writers of other replicas see them at once and take other shards,
    rather than wait for this transaction's end (rows it inserted itself would stay
    invisible to them, and their inserts would queue behind it); and doing it before the
    collection is locked means it never waits for a deletion that waits for us."""
    if connection.dialect.name != "postgresql":
        return
    found = connection.execute(
        select(collection_stats.c.shard).where(
            collection_stats.c.collection_id == collection_id,
            collection_stats.c.period_start == period_start,
        )
    ).first()
    if found is None:
        _create_period_apart(connection, collection_id, period_start)


def _create_period_apart(connection: Connection, collection_id: int, period_start: int) -> None:
    """Commit the period's empty rows in a short transaction of its own (nothing when the
    collection is gone or the rows' locks are not granted soon: the claim then waits or
    finds the collection gone)."""
    try:
        with connection.engine.begin() as apart:
            apart.execute(text(f"SET LOCAL lock_timeout = '{PERIOD_LOCK_TIMEOUT}'"))
            _create_period(apart, collection_id, period_start, STATS_SHARDS)
    except (IntegrityError, OperationalError):  # the collection's row is gone, or busy
        return


PERIOD_LOCK_TIMEOUT = "5s"


def _stats_of_row(row: Any, length: int, float_length: int) -> Stats:
    return Stats(
        n_reports=int(row.n_reports),
        sums=decode_sums(bytes(row.sums), length),
        floats=decode_floats(row.float_sums, float_length),
    )


def _in_window(collection_id: int, window: Window | None) -> list[Any]:
    where = [collection_stats.c.collection_id == collection_id]
    if window is not None:
        where.append(collection_stats.c.period_start.between(window.first, window.last))
    return where


def read_stats(
    connection: Connection,
    collection_id: int,
    length: int,
    float_length: int = 0,
    window: Window | None = None,
) -> Stats:
    """The statistics of a collection's reports in ``window`` (``None``: all periods): the
    sum of the shards of its periods. Raises :class:`CollectionNotFoundError` when the
    collection is gone."""
    rows = connection.execute(select(*_COLUMNS).where(*_in_window(collection_id, window))).all()
    if not rows and not _exists(connection, collection_id):
        raise CollectionNotFoundError(f"collection {collection_id} was deleted")
    empty = no_stats(length, float_length)
    return sum_stats([empty, *(_stats_of_row(row, length, float_length) for row in rows)])


def read_period_stats(
    connection: Connection,
    collection_id: int,
    length: int,
    float_length: int,
    window: Window | None,
) -> dict[int, Stats]:
    """The statistics of each period of ``window`` that holds rows, by period start."""
    rows = connection.execute(
        select(collection_stats.c.period_start, *_COLUMNS)
        .where(*_in_window(collection_id, window))
        .order_by(collection_stats.c.period_start)
    ).all()
    if not rows and not _exists(connection, collection_id):
        raise CollectionNotFoundError(f"collection {collection_id} was deleted")
    parts: dict[int, list[Stats]] = {}
    for row in rows:
        parts.setdefault(int(row.period_start), []).append(_stats_of_row(row, length, float_length))
    return {start: sum_stats(stats) for start, stats in parts.items()}


def add_to_shard(
    connection: Connection, collection_id: int, claimed: ClaimedShard, delta: Stats
) -> None:
    """Write the claimed shard plus ``delta`` (this transaction holds its lock)."""
    current = claimed.stats
    _shard_statements(connection.dialect).write.run(
        connection,
        {
            "cid": collection_id,
            "period": claimed.period_start,
            "at_shard": claimed.shard,
            "new_n": current.n_reports + delta.n_reports,
            "new_sums": encode_sums(current.sums + delta.sums),
            "new_floats": encode_floats(current.floats + delta.floats),
        },
    )
