"""The stored reports: one row per accepted report (random id, day, packed bits)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import date

from sqlalchemy import Connection, func, insert, select

from ldp_aggregator.storage.tables import reports

ID_CHUNK = 900
"""Ids per ``IN (...)`` query: far below every engine's bound-parameter limit."""


def existing_ids(connection: Connection, collection_id: int, ids: Sequence[str]) -> set[str]:
    """Which of ``ids`` are stored already for the collection."""
    found: set[str] = set()
    for start in range(0, len(ids), ID_CHUNK):
        chunk = ids[start : start + ID_CHUNK]
        found.update(
            connection.execute(
                select(reports.c.report_id).where(
                    reports.c.collection_id == collection_id, reports.c.report_id.in_(chunk)
                )
            ).scalars()
        )
    return found


def insert_reports(
    connection: Connection,
    collection_id: int,
    rows: Sequence[tuple[str, bytes]],
    day: date,
) -> None:
    """Store ``(report_id, bits)`` rows received on ``day`` (one executemany)."""
    if not rows:
        return
    connection.execute(
        insert(reports),
        [
            {"collection_id": collection_id, "report_id": rid, "received_day": day, "bits": bits}
            for rid, bits in rows
        ],
    )


def count_reports(connection: Connection, collection_id: int) -> int:
    """How many reports are stored for the collection."""
    return int(
        connection.execute(
            select(func.count())
            .select_from(reports)
            .where(reports.c.collection_id == collection_id)
        ).scalar_one()
    )


def iter_report_bits(
    connection: Connection, collection_id: int, chunk: int = 10_000
) -> Iterator[list[bytes]]:
    """The stored packed reports of a collection, in chunks (ordered by id, not arrival)."""
    result = connection.execution_options(stream_results=True, yield_per=chunk).execute(
        select(reports.c.bits)
        .where(reports.c.collection_id == collection_id)
        .order_by(reports.c.report_id)
    )
    for partition in result.partitions(chunk):
        yield [bytes(row.bits) for row in partition]
