"""The sufficient statistics of a collection: ``n_reports`` and its mechanisms' blocks.

The int64 blocks are kept as one little-endian int64 array of ``config.stats_length``
values (``sums``), the float64 blocks as one little-endian float64 array of
``config.float_stats_length`` values (``float_sums``; NULL in rows written before it
existed, read as empty).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import Connection, select, update

from ldp_aggregator.storage.tables import collection_stats
from ldp_shared.codec import DecodedBatch, decode_reports
from ldp_shared.collection import CollectionConfig
from ldp_shared.errors import CollectionNotFoundError, CorruptStatisticsError

__all__ = [
    "CorruptStatisticsError",
    "Stats",
    "add_to_stats",
    "decode_floats",
    "decode_sums",
    "delta_of",
    "empty_stats_row",
    "encode_floats",
    "encode_sums",
    "lock_stats",
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


def empty_stats_row(collection_id: int, length: int, float_length: int = 0) -> dict[str, object]:
    """The statistics row of a collection without reports."""
    return {
        "collection_id": collection_id,
        "n_reports": 0,
        "sums": encode_sums(np.zeros(length, dtype=np.int64)),
        "float_sums": encode_floats(np.zeros(float_length)),
    }


def lock_stats(connection: Connection, collection_id: int) -> bool:
    """Take the write lock on a collection's statistics with a no-op write (``False``:
    the collection has no statistics row, it was deleted).

    On SQLite this acquires the database write lock before the transaction reads
    anything; on PostgreSQL it locks the row until commit. Either way, concurrent
    ingests of the same collection queue up here and cannot lose updates, and closing
    or deleting the collection waits for them.
    """
    result = connection.execute(
        update(collection_stats)
        .where(collection_stats.c.collection_id == collection_id)
        .values(n_reports=collection_stats.c.n_reports)
    )
    return result.rowcount == 1


def read_stats(
    connection: Connection, collection_id: int, length: int, float_length: int = 0
) -> Stats:
    """The current statistics of a collection."""
    row = connection.execute(
        select(
            collection_stats.c.n_reports, collection_stats.c.sums, collection_stats.c.float_sums
        ).where(collection_stats.c.collection_id == collection_id)
    ).one_or_none()
    if row is None:  # every collection is stored with its row: deleted meanwhile
        raise CollectionNotFoundError(f"collection {collection_id} was deleted")
    return Stats(
        n_reports=int(row.n_reports),
        sums=decode_sums(bytes(row.sums), length),
        floats=decode_floats(row.float_sums, float_length),
    )


def add_to_stats(connection: Connection, collection_id: int, current: Stats, delta: Stats) -> Stats:
    """Write ``current`` plus ``delta`` (caller holds the lock)."""
    updated = Stats(
        n_reports=current.n_reports + delta.n_reports,
        sums=current.sums + delta.sums,
        floats=current.floats + delta.floats,
    )
    connection.execute(
        update(collection_stats)
        .where(collection_stats.c.collection_id == collection_id)
        .values(
            n_reports=updated.n_reports,
            sums=encode_sums(updated.sums),
            float_sums=encode_floats(updated.floats),
        )
    )
    return updated
