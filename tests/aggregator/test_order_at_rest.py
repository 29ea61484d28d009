"""Arrival order in SQLite's files, read byte by byte as an attacker would.

A known sequence of requests is ingested one after the other; the readers of
``forensics.sqlite_files`` then recover what they can from the main file and the
``-wal`` file. Without the fix the log gives away every commit (a control test shows the
reader at work on the log left as it was); with it the log is empty after every commit,
and a rewrite leaves pages in key order with no stray copies.
"""

from __future__ import annotations

import sqlite3
import time
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Engine

from ldp_aggregator.app import create_app
from ldp_aggregator.collections import create_collection
from ldp_aggregator.ingest import ingest_batch
from ldp_aggregator.routes.reports import writer_of
from ldp_aggregator.settings import Settings
from ldp_aggregator.storage.at_rest import WalTruncator, truncate_wal
from ldp_aggregator.storage.collections import StoredCollection
from ldp_aggregator.storage.engine import make_engine
from ldp_aggregator.storage.migrate import upgrade
from ldp_aggregator.writer import ReportWriter
from ldp_shared.collection import CollectionConfig
from ldp_shared.schema import CollectionSpec
from ldp_shared.wire.reports import ReportBatch

from .conftest import ADMIN, ADMIN_TOKEN, ANALYST_TOKEN, TestClient, snapshot, spec_payload
from .forensics import Arrival, measure, seeded_requests
from .forensics.sqlite_files import (
    live_ids,
    page_positions,
    read_files,
    reports_tree,
    residue,
    wal_frames,
    wal_positions,
)

REQUESTS = 60
SEED = 20240611
# |ρ| under no association has standard deviation 1/√(N−1) ≈ 0.03 for the ~1,200 reports
# here; 0.15 is five of them
NO_ORDER = 0.15


ACCEPTED = datetime(2024, 6, 11, 9, 30, tzinfo=UTC)


@pytest.fixture
def store(sqlite_store: Engine) -> Engine:
    """This file reads SQLite's own files: its store is SQLite on either test engine."""
    return sqlite_store


def ingest_in_order(
    writer: ReportWriter, survey: StoredCollection, requests: list[list[dict[str, str]]]
) -> Arrival:
    for items in requests:
        batch = ReportBatch.model_validate({"reports": items})
        result = ingest_batch(writer.engine, survey, batch, at=ACCEPTED, writer=writer)
        assert result.accepted == len(items)
    return Arrival.of_requests(requests)


def test_control_a_log_left_alone_gives_away_every_request_in_order(
    store: Engine, store_survey: StoredCollection, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reader's power: with the log never truncated (as before the fix), it recovers
    the commit of every report, hence arrival order and who came together."""
    monkeypatch.setattr(WalTruncator, "truncate", lambda _self: True)
    arrival = ingest_in_order(
        ReportWriter(store), store_survey, seeded_requests(store_survey.config, REQUESTS, SEED)
    )
    _, wal = read_files(db_path)
    leak = measure("wal", arrival, wal_positions(wal, set(arrival.ids)))
    assert leak.recovered == len(arrival.ids)
    assert leak.spearman > 0.99 and leak.adjacent_same_request > 0.9 > 10 * leak.base_rate


def test_the_log_is_empty_after_every_commit(
    store: Engine, store_survey: StoredCollection, db_path: Path
) -> None:
    writer = ReportWriter(store)
    requests = seeded_requests(store_survey.config, REQUESTS, SEED)
    assert truncate_wal(store)  # the collection's creation, committed outside the writer
    for k, items in enumerate(requests):
        ingest_in_order(writer, store_survey, [items])
        # answered, the log being truncated: it holds this request's transaction at most
        _, wal = read_files(db_path)  # the server still runs: as after kill -9
        transactions = {(salt, commit) for salt, commit, _ in wal_frames(wal)}
        assert len(transactions) <= 1, f"after request {k} the log holds {transactions}"
        writer.wait_idle()
        main, wal = read_files(db_path)
        assert wal == b"", f"after request {k} the log holds {len(wal)} bytes"
        ids = {report["id"] for report in items}
        assert live_ids(main, ids) == ids  # they are in the main file itself


def test_after_a_rewrite_the_pages_depend_on_the_reports_alone(
    store: Engine, store_survey: StoredCollection, db_path: Path, tmp_path: Path
) -> None:
    """The same reports arriving in another order and other requests give, once rewritten,
    byte-identical pages: the file cannot tell the two histories apart."""
    requests = seeded_requests(store_survey.config, REQUESTS, SEED)
    writer = ReportWriter(store)
    arrival = ingest_in_order(writer, store_survey, requests)
    backwards = [report for items in requests for report in items][::-1]
    other_path = tmp_path / "other.db"
    other = make_engine(f"sqlite:///{other_path}")
    upgrade(other)
    other_survey = create_collection(other, CollectionSpec.model_validate(spec_payload()))
    other_writer = ReportWriter(other)
    ingest_in_order(
        other_writer, other_survey, [backwards[k : k + 7] for k in range(0, len(backwards), 7)]
    )
    assert reports_tree(read_files(db_path)[0]) != reports_tree(read_files(other_path)[0])

    assert writer.needs_rewrite and writer.rewrite() and not writer.needs_rewrite
    assert other_writer.rewrite()
    other.dispose()
    main, wal = read_files(db_path)
    assert wal == b""
    assert reports_tree(main) == reports_tree(read_files(other_path)[0])
    known = set(arrival.ids)
    assert residue(main, known) == 0
    leak = measure("pages", arrival, page_positions(main, known))
    assert leak.recovered > 0.95 * len(arrival.ids)  # the others are on interior pages
    assert abs(leak.spearman) < NO_ORDER
    assert leak.adjacent_same_request < 3 * leak.base_rate
    state = snapshot(store, "survey")
    assert state.n_reports == state.rows == len(arrival.ids)


def canonical(main: bytes, tmp_path: Path) -> list[tuple[int, bytes]]:
    """The reports pages of ``main`` once SQLite has rebuilt it (``VACUUM`` of a copy)."""
    copy = tmp_path / "copy.db"
    copy.write_bytes(main)
    with closing(sqlite3.connect(copy)) as connection:
        connection.execute("VACUUM")
    return reports_tree(copy.read_bytes())


def app_settings(path: Path, reshuffle_seconds: float) -> Settings:
    return Settings(
        database_url=f"sqlite:///{path}",
        admin_token=ADMIN_TOKEN,
        analyst_token=ANALYST_TOKEN,
        reshuffle_seconds=reshuffle_seconds,
    )


def post_requests(client: TestClient, count: int) -> Arrival:
    created = client.post("/v1/collections", json=spec_payload(), headers=ADMIN)
    config = CollectionConfig.model_validate(created.json())
    requests = seeded_requests(config, count, SEED)
    for items in requests:
        answer = client.post("/v1/collections/survey/reports", json={"reports": items})
        assert answer.json()["accepted"] == len(items)
    return Arrival.of_requests(requests)


def test_a_clean_shutdown_leaves_the_files_rewritten(db_path: Path, tmp_path: Path) -> None:
    with TestClient(create_app(app_settings(db_path, reshuffle_seconds=0))) as client:
        arrival = post_requests(client, 20)
        main, _ = read_files(db_path)
        assert reports_tree(main) != canonical(main, tmp_path)
    main, wal = read_files(db_path)
    assert wal == b"" and residue(main, set(arrival.ids)) == 0
    assert reports_tree(main) == canonical(main, tmp_path)


def test_the_reports_are_rewritten_periodically(db_path: Path, tmp_path: Path) -> None:
    with TestClient(create_app(app_settings(db_path, reshuffle_seconds=0.2))) as client:
        post_requests(client, 20)
        writer = writer_of(client.app)  # type: ignore[arg-type]
        deadline = time.monotonic() + 30
        while writer.needs_rewrite:
            assert time.monotonic() < deadline, "no rewrite within 30 s"
            time.sleep(0.05)
        main, _ = read_files(db_path)
        assert reports_tree(main) == canonical(main, tmp_path)


def test_the_files_hold_no_time_finer_than_the_period(store: Engine, db_path: Path) -> None:
    """Reports accepted at 13:47:29 into an hourly collection: the files hold the hour's
    start once per row (as a 4-byte big-endian integer, SQLite's encoding of it), and no
    other second of that hour as often as a stored time would appear; no clock text."""
    hourly = create_collection(
        store, CollectionSpec.model_validate(spec_payload(name="hourly", period="hour"))
    )
    accepted = datetime(2026, 11, 26, 13, 47, 29, tzinfo=UTC)
    writer = ReportWriter(store)
    for items in seeded_requests(hourly.config, 6, SEED):
        batch = ReportBatch.model_validate({"reports": items})
        assert ingest_batch(store, hourly, batch, at=accepted, writer=writer).accepted
    writer.close()
    rows = snapshot(store, "hourly").rows
    main, wal = read_files(db_path)
    files = main + wal
    hour = int(accepted.replace(minute=0, second=0).timestamp())

    def count(second: int) -> int:
        return files.count(second.to_bytes(4, "big"))

    assert count(hour) >= rows  # the control: the reader finds what is stored
    assert max(count(second) for second in range(hour + 1, hour + 3600)) < 3
    for clock in (b"13:47", b"47:29", b"T13:"):
        assert clock not in files
