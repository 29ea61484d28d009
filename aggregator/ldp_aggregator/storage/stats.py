"""The sufficient statistics of a collection: ``n_reports`` and its mechanisms' blocks.

They are stored as :data:`STATS_SHARDS` rows per collection, summed when read: a writer
adds to one shard, so that writers on several replicas need not queue for one row.

The int64 blocks are kept as one little-endian int64 array of ``config.stats_length``
values (``sums``), the float64 blocks as one little-endian float64 array of
``config.float_stats_length`` values (``float_sums``; NULL in rows written before it
existed, read as empty).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import Connection, select, update

from ldp_aggregator.storage.tables import collection_stats
from ldp_shared.codec import DecodedBatch, decode_reports
from ldp_shared.collection import CollectionConfig
from ldp_shared.errors import CollectionNotFoundError, CorruptStatisticsError

__all__ = [
    "ClaimedShard",
    "CorruptStatisticsError",
    "Stats",
    "add_to_shard",
    "claim_shard",
    "decode_floats",
    "decode_sums",
    "delta_of",
    "empty_stats_rows",
    "encode_floats",
    "encode_sums",
    "read_stats",
    "statistics_of",
    "sum_stats",
]

SUMS_DTYPE = np.dtype("<i8")
FLOATS_DTYPE = np.dtype("<f8")


@dataclass(frozen=True)
class Stats:
    """``n`` reports, their int64 sums (``stats_length``) and float64 sums
    (``float_stats_length``)."""

    n_reports: int
    sums: NDArray[np.int64]
    floats: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))


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


def encode_sums(sums: NDArray[np.int64]) -> bytes:
    """The stored form of the sums: little-endian int64."""
    return np.ascontiguousarray(sums, dtype=SUMS_DTYPE).tobytes()


def decode_sums(blob: bytes, length: int) -> NDArray[np.int64]:
    """Inverse of :func:`encode_sums`, checking the length."""
    if len(blob) != length * SUMS_DTYPE.itemsize:
        raise CorruptStatisticsError(
            f"statistics hold {len(blob)} bytes, expected {length * SUMS_DTYPE.itemsize}"
        )
    return np.frombuffer(blob, dtype=SUMS_DTYPE).astype(np.int64)


def encode_floats(floats: NDArray[np.float64]) -> bytes:
    """The stored form of the float sums: little-endian float64."""
    return np.ascontiguousarray(floats, dtype=FLOATS_DTYPE).tobytes()


def decode_floats(blob: bytes | None, length: int) -> NDArray[np.float64]:
    """Inverse of :func:`encode_floats` (``None``, from a row older than the column, is
    empty), checking the length."""
    data = b"" if blob is None else bytes(blob)
    if len(data) != length * FLOATS_DTYPE.itemsize:
        raise CorruptStatisticsError(
            f"float statistics hold {len(data)} bytes, expected {length * FLOATS_DTYPE.itemsize}"
        )
    return np.frombuffer(data, dtype=FLOATS_DTYPE).astype(np.float64)


STATS_SHARDS = 8
"""Statistics rows of a new collection. A writing transaction locks one shard and adds to
it; on PostgreSQL it takes the first shard no other transaction holds, so up to this many
replicas write the same collection at once. SQLite has one writer at a time and uses
shard 0 only."""


@dataclass(frozen=True)
class ClaimedShard:
    """A statistics shard locked by the current transaction, and what it holds."""

    shard: int
    stats: Stats


def empty_stats_rows(
    collection_id: int, length: int, float_length: int = 0
) -> list[dict[str, object]]:
    """The statistics rows (:data:`STATS_SHARDS` shards) of a collection without reports."""
    return [
        {
            "collection_id": collection_id,
            "shard": shard,
            "n_reports": 0,
            "sums": encode_sums(np.zeros(length, dtype=np.int64)),
            "float_sums": encode_floats(np.zeros(float_length)),
        }
        for shard in range(STATS_SHARDS)
    ]


def claim_shard(
    connection: Connection, collection_id: int, length: int, float_length: int = 0
) -> ClaimedShard | None:
    """Lock one statistics shard of the collection for this transaction and read it
    (``None``: the collection has no statistics rows, it was deleted).

    PostgreSQL: the first shard that no other transaction holds (``SKIP LOCKED``), or,
    when all are held, shard 0 once it is free. SQLite: shard 0, with a no-op write that
    takes the database's write lock before the transaction reads anything (a transaction
    that read first could not write after another connection committed).
    """
    columns = (
        collection_stats.c.shard,
        collection_stats.c.n_reports,
        collection_stats.c.sums,
        collection_stats.c.float_sums,
    )
    of_collection = collection_stats.c.collection_id == collection_id
    if connection.dialect.name == "sqlite":
        lock = (
            update(collection_stats)
            .where(of_collection, collection_stats.c.shard == 0)
            .values(n_reports=collection_stats.c.n_reports)
        )
        if connection.dialect.update_returning:  # SQLite 3.35 and newer: one statement
            row = connection.execute(lock.returning(*columns)).one_or_none()
        else:
            connection.execute(lock)
            shard_0 = select(*columns).where(of_collection, collection_stats.c.shard == 0)
            row = connection.execute(shard_0).one_or_none()
    else:
        first = select(*columns).where(of_collection).order_by(collection_stats.c.shard).limit(1)
        row = connection.execute(first.with_for_update(skip_locked=True)).one_or_none()
        if row is None:  # every shard is held (or none exists): wait for shard 0
            row = connection.execute(first.with_for_update()).one_or_none()
    if row is None:
        return None
    return ClaimedShard(shard=int(row.shard), stats=_stats_of_row(row, length, float_length))


def _stats_of_row(row: Any, length: int, float_length: int) -> Stats:
    return Stats(
        n_reports=int(row.n_reports),
        sums=decode_sums(bytes(row.sums), length),
        floats=decode_floats(row.float_sums, float_length),
    )


def read_stats(
    connection: Connection, collection_id: int, length: int, float_length: int = 0
) -> Stats:
    """The current statistics of a collection: the sum of its shards."""
    rows = connection.execute(
        select(
            collection_stats.c.n_reports, collection_stats.c.sums, collection_stats.c.float_sums
        ).where(collection_stats.c.collection_id == collection_id)
    ).all()
    if not rows:  # every collection is stored with its rows: deleted meanwhile
        raise CollectionNotFoundError(f"collection {collection_id} was deleted")
    return sum_stats([_stats_of_row(row, length, float_length) for row in rows])


def add_to_shard(
    connection: Connection, collection_id: int, claimed: ClaimedShard, delta: Stats
) -> None:
    """Write the claimed shard plus ``delta`` (this transaction holds its lock)."""
    current = claimed.stats
    connection.execute(
        update(collection_stats)
        .where(
            collection_stats.c.collection_id == collection_id,
            collection_stats.c.shard == claimed.shard,
        )
        .values(
            n_reports=current.n_reports + delta.n_reports,
            sums=encode_sums(current.sums + delta.sums),
            float_sums=encode_floats(current.floats + delta.floats),
        )
    )
