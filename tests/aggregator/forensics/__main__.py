"""Measure the arrival-order leak of the code installed: ``python -m tests.aggregator.forensics``.

Ingests ``--earlier`` reports, then ``--requests`` seeded requests one after the other
(``ingest_batch`` without an app's writer) into a temporary SQLite file, and into a
schema of its own on ``--postgres URL`` if given (a superuser's), then prints one line
per reader: the SQLite log and pages while the engine is open (as after kill -9), the
pages after a clean close, and PostgreSQL's ctid, xmin, heap and index files. Where the
code has ``ldp_aggregator.storage.at_rest``, the same again after a rewrite.
"""

from __future__ import annotations

import argparse
import importlib.util
import secrets
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

from sqlalchemy import Engine, create_engine, text

from ldp_aggregator.collections import create_collection
from ldp_aggregator.ingest import ingest_batch
from ldp_aggregator.storage.engine import make_engine
from ldp_aggregator.storage.migrate import upgrade
from ldp_shared.schema import CollectionSpec
from ldp_shared.wire import ReportBatch

from ..conftest import spec_payload
from . import Arrival, measure, seeded_requests
from . import postgres_files as pgf
from . import sqlite_files as sqf

SEED = 7
HAS_REWRITE = importlib.util.find_spec("ldp_aggregator.storage.at_rest") is not None


def ingest(engine: Engine, count: int, earlier: int) -> Arrival:
    """``earlier`` reports in batches of 2,000 (left out of the measures), then ``count``
    requests of 1 to 60 reports, the arrival measured."""
    upgrade(engine)
    survey = create_collection(engine, CollectionSpec.model_validate(spec_payload()))
    for seed in range(SEED + 1, SEED + 1 + earlier // 2000):
        items = seeded_requests(survey.config, 1, seed, largest=2000, smallest=2000)[0]
        ingest_batch(engine, survey, ReportBatch.model_validate({"reports": items}))
    requests = seeded_requests(survey.config, count, SEED, largest=60)
    for items in requests:
        ingest_batch(engine, survey, ReportBatch.model_validate({"reports": items}))
    return Arrival.of_requests(requests)


def rewrite(engine: Engine) -> None:
    from ldp_aggregator.storage.at_rest import rewrite_reports  # absent before the fix

    start = time.perf_counter()
    assert rewrite_reports(engine)
    print(f"  the rewrite took {time.perf_counter() - start:.2f} s")


def sqlite(count: int, earlier: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ldp.db"
        engine = make_engine(f"sqlite:///{path}")
        arrival = ingest(engine, count, earlier)
        known = set(arrival.ids)
        order = {report_id: k for k, report_id in enumerate(arrival.ids)}
        main, wal = sqf.read_files(path)
        print(f"SQLite, {len(known)} reports in {count} requests; -wal {len(wal):,} bytes")
        print(" ", measure("wal while running", arrival, sqf.wal_positions(wal, known)).line())
        image = sqf.current_image(main, wal)
        print(" ", measure("pages while running", arrival, sqf.page_positions(image, known)).line())
        pairs, agree = sqf.page_concordance(image, order)
        print(f"  pages while running: {pairs:,} same-page pairs, {agree:.3f} in arrival order")
        if HAS_REWRITE:
            rewrite(engine)
            main, wal = sqf.read_files(path)
            positions = sqf.page_positions(main, known)
            print(" ", measure("pages after a rewrite", arrival, positions).line())
            pairs, agree = sqf.page_concordance(main, order)
            print(f"  after a rewrite: {pairs:,} same-page pairs, {agree:.3f} in arrival order")
        engine.dispose()
        main, _ = sqf.read_files(path)
        print(" ", measure("pages after close", arrival, sqf.page_positions(main, known)).line())
        print(f"  stray id copies in the main file: {sqf.residue(main, known)}")


def postgres(base: str, count: int, earlier: int) -> None:
    schema = f"ldp_forensics_{secrets.token_hex(4)}"
    admin = create_engine(base)
    with admin.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    separator = "&" if "?" in base else "?"
    engine = make_engine(f"{base}{separator}options={quote(f'-csearch_path={schema}')}")
    try:
        arrival = ingest(engine, count, earlier)
        print(f"PostgreSQL, {len(arrival.ids)} reports in {count} requests")
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
        index = pgf.index_positions(pgf.read_relation(connection, "pk_reports"), known)
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
    ]:
        print("   ", measure(f"{name} {when}", arrival, positions).line())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=120)
    parser.add_argument("--earlier", type=int, default=0, help="reports stored before")
    parser.add_argument("--postgres", default="", help="a superuser's SQLAlchemy URL")
    args = parser.parse_args()
    sqlite(args.requests, args.earlier)
    if args.postgres:
        postgres(args.postgres, args.requests, args.earlier)


if __name__ == "__main__":
    main()
