"""Measure the arrival-order leak of the code installed: ``python -m tests.aggregator.forensics``.

Ingests ``--earlier`` reports, then ``--requests`` seeded requests of 1 to ``--largest``
reports one after the other (``ingest_batch`` without an app's writer: one transaction
per request; with ``--clients K``, K threads at a time through one writer, whose group
commit then writes the requests that wait together) into a temporary SQLite file, and
into a schema of its own on ``--postgres URL`` if given (a superuser's), then prints one
line per reader: the SQLite log and pages while the engine is open (as after kill -9),
the main file's cells by byte offset, the pages after a clean close, and PostgreSQL's
ctid, xmin, heap and index files (by rank within a leaf and by byte offset). Where the
code has ``ldp_aggregator.storage.at_rest``, the same again after a rewrite.
"""

from __future__ import annotations

import argparse
import importlib.util
import secrets
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from sqlalchemy import Engine, create_engine, text

from ldp_aggregator.collections import create_collection
from ldp_aggregator.ingest import ingest_batch
from ldp_aggregator.storage.engine import make_engine
from ldp_aggregator.storage.migrate import upgrade
from ldp_aggregator.writer import ReportWriter
from ldp_shared.schema import CollectionSpec
from ldp_shared.wire.reports import ReportBatch

from ..conftest import spec_payload
from . import Arrival, measure, seeded_requests
from . import postgres_files as pgf
from . import sqlite_files as sqf

SEED = 7
HAS_REWRITE = importlib.util.find_spec("ldp_aggregator.storage.at_rest") is not None


@dataclass(frozen=True)
class Shape:
    """What is ingested: ``earlier`` reports in batches of 2,000 (left out of the
    measures), then ``count`` requests of 1 to ``largest`` reports from ``seed``, sent by
    ``clients`` threads at a time."""

    count: int
    earlier: int
    largest: int
    seed: int
    clients: int


def ingest(engine: Engine, shape: Shape) -> Arrival:
    """Ingest ``shape``; the arrival of its measured requests (in the order sent)."""
    upgrade(engine)
    survey = create_collection(engine, CollectionSpec.model_validate(spec_payload()))
    for batch_seed in range(shape.seed + 1, shape.seed + 1 + shape.earlier // 2000):
        items = seeded_requests(survey.config, 1, batch_seed, largest=2000, smallest=2000)[0]
        ingest_batch(engine, survey, ReportBatch.model_validate({"reports": items}))
    requests = seeded_requests(survey.config, shape.count, shape.seed, largest=shape.largest)
    batches = [ReportBatch.model_validate({"reports": items}) for items in requests]
    if shape.clients == 1:
        for batch in batches:
            ingest_batch(engine, survey, batch)
    else:
        writer = ReportWriter(engine)
        with ThreadPoolExecutor(shape.clients) as pool:
            list(pool.map(lambda b: ingest_batch(engine, survey, b, writer=writer), batches))
        writer.close()
        print(f"  {shape.count} requests in {writer.transactions} transactions")
    return Arrival.of_requests(requests)


def rewrite(engine: Engine) -> None:
    from ldp_aggregator.storage.at_rest import rewrite_reports  # absent before the fix

    start = time.perf_counter()
    assert rewrite_reports(engine)
    print(f"  the rewrite took {time.perf_counter() - start:.2f} s")


def sqlite(shape: Shape) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ldp.db"
        engine = make_engine(f"sqlite:///{path}")
        arrival = ingest(engine, shape)
        known = set(arrival.ids)
        order = {report_id: k for k, report_id in enumerate(arrival.ids)}
        main, wal = sqf.read_files(path)
        print(f"SQLite, {len(known)} reports in {shape.count} requests; -wal {len(wal):,} bytes")
        print(" ", measure("wal while running", arrival, sqf.wal_positions(wal, known)).line())
        image = sqf.current_image(main, wal)
        print(" ", measure("pages while running", arrival, sqf.page_positions(image, known)).line())
        offsets = sqf.offset_positions(image, known)
        print(" ", measure("main file by byte offset while running", arrival, offsets).line())
        pairs, agree = sqf.page_concordance(image, order)
        print(f"  pages while running: {pairs:,} same-page pairs, {agree:.3f} in arrival order")
        if HAS_REWRITE:
            rewrite(engine)
            main, wal = sqf.read_files(path)
            positions = sqf.page_positions(main, known)
            print(" ", measure("pages after a rewrite", arrival, positions).line())
            offsets = sqf.offset_positions(main, known)
            print(" ", measure("main file by byte offset after a rewrite", arrival, offsets).line())
            pairs, agree = sqf.page_concordance(main, order)
            print(f"  after a rewrite: {pairs:,} same-page pairs, {agree:.3f} in arrival order")
        engine.dispose()
        main, _ = sqf.read_files(path)
        print(" ", measure("pages after close", arrival, sqf.page_positions(main, known)).line())
        print(f"  stray id copies in the main file: {sqf.residue(main, known)}")


def postgres(base: str, shape: Shape) -> None:
    schema = f"ldp_forensics_{secrets.token_hex(4)}"
    admin = create_engine(base)
    with admin.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    separator = "&" if "?" in base else "?"
    engine = make_engine(f"{base}{separator}options={quote(f'-csearch_path={schema}')}")
    try:
        arrival = ingest(engine, shape)
        print(f"PostgreSQL, {len(arrival.ids)} reports in {shape.count} requests")
        read_postgres(engine, arrival, "between rewrites")
        if HAS_REWRITE:
            rewrite(engine)
            read_postgres(engine, arrival, "after a rewrite")
    finally:
        engine.dispose()
        with admin.begin() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


def read_postgres(engine: Engine, arrival: Arrival, when: str) -> None:
    known = set(arrival.ids)
    with engine.connect() as connection:
        by_ctid, by_xmin = pgf.system_columns(connection)
        heap = pgf.heap_file(pgf.read_relation(connection, "reports"), known)
        index_file = pgf.read_relation(connection, "pk_reports")
        index = pgf.index_positions(index_file, known)
        offsets = pgf.index_offsets(index_file, known)
        stats = pgf.heap_file(pgf.read_relation(connection, "collection_stats"), set())
    print(
        f"  {when}: {len(set(by_xmin.values()))} distinct xmin, heap tuples {heap.tuples}, "
        f"id copies {heap.copies}, statistics tuples {stats.tuples}"
    )
    for name, positions in [
        ("ctid", by_ctid),
        ("xmin", by_xmin),
        ("heap file", heap.positions),
        ("index file", index),
        ("index file by byte offset", offsets),
    ]:
        print("   ", measure(f"{name} {when}", arrival, positions).line())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=120)
    parser.add_argument("--earlier", type=int, default=0, help="reports stored before")
    parser.add_argument("--largest", type=int, default=60, help="reports in a request, at most")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--clients", type=int, default=1, help="requests sent at a time")
    parser.add_argument("--postgres", default="", help="a superuser's SQLAlchemy URL")
    args = parser.parse_args()
    shape = Shape(args.requests, args.earlier, args.largest, args.seed, args.clients)
    sqlite(shape)
    if args.postgres:
        postgres(args.postgres, shape)


if __name__ == "__main__":
    main()
