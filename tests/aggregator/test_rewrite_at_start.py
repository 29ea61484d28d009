"""An app rewrites the stored reports as soon as it starts, not one interval later.

A process killed with ``kill -9`` (or a power cut) leaves the files as its last
transactions wrote them: between two rewrites a page's cells, and PostgreSQL's ``xmin``,
heap and index, group the reports of one request (docs/privacy-at-rest.md, "What
remains"). The next app to start on those files rewrites them on its reshuffler's first
turn, at once; before, that turn came only after ``reshuffle_seconds`` (300 s by
default), so with the interval set to an hour here the old code failed both tests.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from sqlalchemy import Engine, text
from tests.aggregator.conftest import ADMIN_TOKEN, ANALYST_TOKEN, TestClient, spec_payload
from tests.aggregator.forensics import Arrival, measure, seeded_requests
from tests.aggregator.forensics.postgres_files import system_columns
from tests.aggregator.forensics.sqlite_files import offset_positions, read_files, reports_tree
from tests.aggregator.test_order_at_rest import canonical
from tests.aggregator.test_postgres import pg_url  # noqa: F401 - the fixture
from tests.engines import POSTGRES_URL

from ldp_aggregator.app import create_app
from ldp_aggregator.collections import create_collection
from ldp_aggregator.ingest import ingest_batch
from ldp_aggregator.routes.reports import writer_of
from ldp_aggregator.settings import Settings
from ldp_aggregator.storage.engine import make_engine
from ldp_aggregator.storage.migrate import upgrade
from ldp_aggregator.writer import ReportWriter
from ldp_shared.schema import CollectionSpec
from ldp_shared.wire.reports import ReportBatch

REQUESTS = 60
SEED = 20240613
INTERVAL = 3600.0  # far longer than the test: only the turn at start-up can rewrite
DEADLINE = 20.0


def left_by_a_killed_process(url: str) -> tuple[Engine, Arrival]:
    """A database whose reports were written one request per transaction and never
    rewritten, as a process killed between rewrites leaves it; its engine (still open,
    to be read) and the arrival."""
    engine = make_engine(url)
    upgrade(engine)
    survey = create_collection(engine, CollectionSpec.model_validate(spec_payload()))
    requests = seeded_requests(survey.config, REQUESTS, SEED)
    writer = ReportWriter(engine)
    for items in requests:
        batch = ReportBatch.model_validate({"reports": items})
        assert ingest_batch(engine, survey, batch, writer=writer).accepted == len(items)
    writer.close()  # its log connection; no rewrite
    return engine, Arrival.of_requests(requests)


def start_and_wait_for_the_first_turn(url: str) -> None:
    settings = Settings(
        database_url=url,
        admin_token=ADMIN_TOKEN,
        analyst_token=ANALYST_TOKEN,
        reshuffle_seconds=INTERVAL,
    )
    with TestClient(create_app(settings)) as client:
        writer = writer_of(client.app)  # type: ignore[arg-type]
        deadline = time.monotonic() + DEADLINE
        while writer.needs_rewrite:
            assert time.monotonic() < deadline, f"no rewrite within {DEADLINE} s of the start"
            time.sleep(0.05)


def test_a_restart_rewrites_the_sqlite_file_at_once(db_path: Path, tmp_path: Path) -> None:
    engine, arrival = left_by_a_killed_process(f"sqlite:///{db_path}")
    known = set(arrival.ids)
    main, wal = read_files(db_path)
    assert wal == b""
    assert reports_tree(main) != canonical(main, tmp_path)
    grouped = measure("by byte offset", arrival, offset_positions(main, known))
    assert grouped.adjacent_same_request > 3 * grouped.base_rate  # the control
    engine.dispose()

    start_and_wait_for_the_first_turn(f"sqlite:///{db_path}")
    main, _ = read_files(db_path)
    assert reports_tree(main) == canonical(main, tmp_path)
    mixed = measure("by byte offset", arrival, offset_positions(main, known))
    assert mixed.adjacent_same_request < 2 * mixed.base_rate


@pytest.mark.skipif(not POSTGRES_URL, reason="no PostgreSQL server answers")
def test_a_restart_rewrites_postgres_at_once(pg_url: str) -> None:  # noqa: F811 - the fixture
    engine, arrival = left_by_a_killed_process(pg_url)
    with engine.connect() as connection:
        _, by_xmin = system_columns(connection)
    assert len(set(by_xmin.values())) == REQUESTS  # one transaction per request
    start_and_wait_for_the_first_turn(pg_url)
    with engine.connect() as connection:
        _, by_xmin = system_columns(connection)
        in_heap = connection.execute(text("SELECT report_id FROM reports ORDER BY ctid"))
        by_key = connection.execute(text("SELECT report_id FROM reports ORDER BY report_id"))
        assert in_heap.scalars().all() == by_key.scalars().all()
    engine.dispose()
    assert len(set(by_xmin.values())) == 1 and set(by_xmin) == set(arrival.ids)
