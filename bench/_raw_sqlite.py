"""The raw SQLite loop of ``bench/ingestion.py``: what the database alone takes to store
batches of reports, with the aggregator's schema, pragmas and statements.

A temporary SQLite file is made by the aggregator's own code: its engine (the pragmas of
``ldp_aggregator.storage.engine``: WAL, ``synchronous=FULL``, cache, ``secure_delete``),
its migrations (``ldp_aggregator.storage.migrate.upgrade``) and its
``insert_collection`` (the collection row and its statistics rows). The statements are
compiled by SQLAlchemy from ``ldp_aggregator.storage.tables``, so the loop follows the
schema as it changes; the statistics statements touch one row of the collection
(``collection_id = ?``, plus ``shard = 0`` when the table has a ``shard`` column).

A transaction's cost grows with the size of the table it inserts into (random ids land
on ever more distinct index pages, each written to the log and checkpointed back), so the
service and this loop are compared at the same table sizes: ``windows`` are ranges of the
table's row count, ``(first, end)``, and each gets its own reports/s from the loop's
transactions that started inside it (``bench/ingestion.py`` passes the row counts its
service runs covered); the loop grows its table from empty, batch by batch, as the
service does.

Per batch of pre-made rows (random ids of the SDK's form, sorted by id as the service
sorts them, random bits of the collection's packed size), one transaction on the driver's
connection: ``INSERT ... ON CONFLICT DO NOTHING`` of the rows (one ``executemany``), read
the statistics row, write it back with the batch added, ``COMMIT``; optionally
``PRAGMA wal_checkpoint(TRUNCATE)`` after each commit, as the service does to keep
arrival order out of the write-ahead log (docs/privacy-at-rest.md). Only the
transaction (and the checkpoint) is timed.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from ldp_aggregator.storage.collections import insert_collection
from ldp_aggregator.storage.driver import compile_for
from ldp_aggregator.storage.engine import make_engine
from ldp_aggregator.storage.migrate import upgrade
from ldp_aggregator.storage.stats import empty_stats_rows
from ldp_aggregator.storage.stats_codec import decode_sums, encode_sums
from ldp_aggregator.storage.tables import collection_stats, reports
from ldp_shared.collection import CollectionConfig
from ldp_shared.periods import stamp
from ldp_shared.wire.reports import new_report_id


def _window(first: int, end: int, sizes: list[int], times: list[float]) -> dict[str, Any]:
    """Reports/s of the transactions that started with ``first <= rows < end``."""
    rows, reports, seconds = 0, 0, 0.0
    for size, spent in zip(sizes, times, strict=True):
        if first <= rows < end:
            reports, seconds = reports + size, seconds + spent
        rows += size
    return {
        "table_rows": [first, end],
        "reports": reports,
        "reports_per_second": reports / seconds if seconds else None,
    }


def _stats_where() -> list[Any]:
    """One statistics row of the collection: ``collection_id``, shard 0 and the period."""
    return [
        collection_stats.c.collection_id == bindparam("cid"),
        collection_stats.c.shard == 0,
        collection_stats.c.period_start == bindparam("period"),
    ]


def raw_sqlite_loop(
    config: CollectionConfig,
    packed_bytes: int,
    *,
    reports_total: int,
    batch: int,
    checkpoint: bool,
    rng: np.random.Generator,
    windows: Sequence[tuple[int, int]] = (),
) -> dict[str, Any]:
    """Store ``reports_total`` reports in batches of ``batch``, from an empty database;
    reports/s overall and in each of ``windows`` (table row counts)."""
    with tempfile.TemporaryDirectory(prefix="ldp-bench-raw-") as tmp:
        path = Path(tmp) / "raw.db"
        engine = make_engine(f"sqlite:///{path}")
        try:
            upgrade(engine)
            collection = insert_collection(engine, config)
            today, period = stamp(config.spec.period)
            with engine.begin() as connection:  # the period's row, as its first report makes it
                zeros = {"sums": encode_sums(np.zeros(config.stats_length, dtype=np.int64))}
                rows = empty_stats_rows(collection.id, period, shards=1)
                connection.execute(insert(collection_stats), [{**row, **zeros} for row in rows])
            dialect = engine.dialect
            insert_stmt = compile_for(sqlite_insert(reports).on_conflict_do_nothing(), dialect)
            where = _stats_where()
            read_stmt = compile_for(
                select(
                    collection_stats.c.n_reports,
                    collection_stats.c.sums,
                    collection_stats.c.float_sums,
                ).where(*where),
                dialect,
            )
            write_stmt = compile_for(
                update(collection_stats)
                .where(*where)
                .values(
                    n_reports=bindparam("n"),
                    sums=bindparam("sums"),
                    float_sums=bindparam("floats"),
                ),
                dialect,
            )
            day_type = reports.c.received_day.type.dialect_impl(dialect)
            day_processor = day_type.bind_processor(dialect)
            day = day_processor(today) if day_processor else today
            delta = np.ones(config.stats_length, dtype="<i8")
            raw = engine.raw_connection()
            try:
                db = raw.driver_connection
                assert db is not None
                db.isolation_level = None  # explicit BEGIN / COMMIT below
                values = {
                    "collection_id": collection.id,
                    "received_day": day,
                    "period_start": period,
                }

                def fresh_rows(size: int) -> list[tuple[Any, ...]]:
                    ids = sorted(new_report_id() for _ in range(size))
                    bits = [rng.bytes(packed_bytes) for _ in range(size)]
                    return [
                        insert_stmt.params({**values, "report_id": i, "bits": b})
                        for i, b in zip(ids, bits, strict=True)
                    ]

                times: list[float] = []
                sizes: list[int] = []
                for start in range(0, reports_total, batch):
                    size = min(batch, reports_total - start)
                    rows = fresh_rows(size)
                    t0 = time.perf_counter()
                    db.execute("BEGIN")
                    db.executemany(insert_stmt.sql, rows)
                    key = {"cid": collection.id, "period": period}
                    n, sums, floats = db.execute(read_stmt.sql, read_stmt.params(key)).fetchone()
                    new_sums = encode_sums(decode_sums(sums, delta.size) + delta)
                    put = {**key, "n": n + size, "sums": new_sums, "floats": floats}
                    db.execute(write_stmt.sql, write_stmt.params(put))
                    db.execute("COMMIT")
                    if checkpoint:
                        db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
                    times.append(time.perf_counter() - t0)
                    sizes.append(size)
                stored = db.execute("SELECT count(*) FROM reports").fetchone()[0]
                columns = [row[1] for row in db.execute("PRAGMA table_info(collection_stats)")]
            finally:
                raw.close()
            database_bytes = sum(p.stat().st_size for p in Path(tmp).glob("raw.db*"))
        finally:
            engine.dispose()
    seconds = sum(times)
    ordered = sorted(times)
    return {
        "wal_checkpoint_truncate_after_each_commit": checkpoint,
        "reports": reports_total,
        "reports_stored": stored,
        "batch": batch,
        "transactions": len(times),
        "seconds_in_transactions": seconds,
        "reports_per_second": reports_total / seconds,
        "windows": [_window(lo, hi, sizes, times) for lo, hi in windows],
        "transaction_ms": {
            "mean": 1e3 * statistics.fmean(times),
            "p50": 1e3 * ordered[len(ordered) // 2],
            "p99": 1e3 * ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))],
        },
        "database_bytes_at_end": database_bytes,
        "collection_stats_columns_after_migrations": columns,
        "statements": {
            "insert": insert_stmt.sql,
            "read_stats": read_stmt.sql,
            "write_stats": write_stmt.sql,
        },
    }
