"""Log mode in one process against a real three-node JetStream cluster and PostgreSQL:
the answers' outcomes, the deduplication window, folding, redelivery and readiness."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from fastapi.testclient import TestClient
from sqlalchemy import Engine

from ldp_aggregator.app import create_app
from ldp_aggregator.ingest_log.fold import CollectionsById, FoldWorker, fold_batch
from ldp_aggregator.ingest_log.fold_metrics import FoldMetrics
from ldp_aggregator.ingest_log.stream import LogReport, log_settings_of
from ldp_aggregator.settings import Settings
from ldp_aggregator.storage.collections import load_collection
from ldp_aggregator.storage.engine import make_engine
from ldp_aggregator.storage.reports import count_reports
from ldp_aggregator.writer import ReportWriter
from ldp_shared.collection import CollectionConfig

from ..conftest import ADMIN, ADMIN_TOKEN, ANALYST_TOKEN, assert_stored_and_recounted, spec_payload
from ..forensics import seeded_requests
from .cluster import NatsCluster

UPLOAD = "/v1/collections/survey/reports"
DEDUP_SECONDS = 5.0
"""The outcomes test's deduplication window: a repeat sent at once (milliseconds later,
seconds under load) is inside it; the late copies are sent once it has passed."""
PATIENCE = 30.0
"""How long a test waits at most for the stream or the fold worker to catch up."""


def log_settings(pg_url: str, cluster: NatsCluster, **more: object) -> Settings:
    return Settings(
        database_url=pg_url,
        admin_token=ADMIN_TOKEN,
        analyst_token=ANALYST_TOKEN,
        upload_rate_per_collection=0,
        log_url=cluster.url,
        **more,  # type: ignore[arg-type]
    )


def stored(engine: Engine) -> int:
    with engine.connect() as connection:
        return count_reports(connection, load_collection(engine, "survey").id)


@contextmanager
def folding(settings: Settings, engine: Engine, ack_wait: float = 2.0) -> Iterator[FoldMetrics]:
    """A fold worker in a thread of its own until the block ends."""
    metrics = FoldMetrics()
    worker = FoldWorker(log_settings_of(settings), engine, metrics, ack_wait_seconds=ack_wait)
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()

    def run() -> None:
        loop.run_until_complete(worker.run(stop))

    thread = threading.Thread(target=run)
    thread.start()
    try:
        yield metrics
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(30)
        worker.writer.close()
        loop.close()


def fold_counts(metrics: FoldMetrics) -> tuple[float | None, float | None]:
    """The fold worker's reports written and found duplicate so far."""
    return tuple(  # type: ignore[return-value]
        metrics.registry.get_sample_value("ldpcollect_fold_reports_total", {"outcome": outcome})
        for outcome in ("written", "duplicate")
    )


def wait_stored(engine: Engine, count: int, timeout: float = PATIENCE) -> None:
    deadline = time.monotonic() + timeout
    while stored(engine) < count and time.monotonic() < deadline:
        time.sleep(0.1)
    assert stored(engine) == count


def test_outcomes_promise_what_the_docs_say(pg_url: str, cluster: NatsCluster) -> None:
    settings = log_settings(pg_url, cluster, log_dedup_seconds=DEDUP_SECONDS)
    engine = make_engine(pg_url)
    with TestClient(create_app(settings)) as http:
        assert http.get("/readyz").status_code == 200
        created = http.post("/v1/collections", json=spec_payload(), headers=ADMIN)
        config = CollectionConfig.model_validate(created.json())
        items = [r for request in seeded_requests(config, 20, seed=3) for r in request]
        bad = dict(items[0], config_hash="0" * len(config.config_hash))
        published = time.monotonic()
        first = http.post(UPLOAD, json={"reports": [*items, items[1], bad]}).json()
        statuses = [o["status"] for o in first["outcomes"]]
        assert statuses == ["accepted"] * len(items) + ["duplicate", "rejected"]
        # nothing is in the database before a fold worker runs: accepted = in the log
        assert stored(engine) == 0
        again = http.post(UPLOAD, json={"reports": items[:5]}).json()
        assert time.monotonic() - published < DEDUP_SECONDS  # else the next line cannot hold
        assert again["duplicate"] == 5  # within the stream's deduplication window
        # past the window the stream takes each again (the server forgets ids on a timer
        # of its own: a copy still refused is sent again until taken, at most PATIENCE) ...
        time.sleep(max(0.0, published + DEDUP_SECONDS - time.monotonic()))
        deadline = time.monotonic() + PATIENCE
        waiting, taken = items[:5], 0
        while waiting and time.monotonic() < deadline:
            late = http.post(UPLOAD, json={"reports": waiting}).json()
            taken += late["accepted"]
            waiting = [
                r
                for r, o in zip(waiting, late["outcomes"], strict=True)
                if o["status"] != "accepted"
            ]
            if waiting:
                time.sleep(0.2)
        assert taken == 5 and not waiting
        with folding(settings, engine) as metrics:
            wait_stored(engine, len(items))
            # the late copies come in the same or a later batch
            deadline = time.monotonic() + PATIENCE
            while fold_counts(metrics) != (len(items), 5) and time.monotonic() < deadline:
                time.sleep(0.1)
        # ... and folding counts it once
        ids = {r["id"] for r in items}
        assert assert_stored_and_recounted(engine, "survey", ids) == ids
        assert fold_counts(metrics) == (len(items), 5)

        for node in range(3):  # the whole log gone: not ready, and uploads are 503
            cluster.kill(node)
        assert http.get("/readyz").status_code == 503
        answer = http.post(UPLOAD, json={"reports": seeded_requests(config, 1, seed=9)[0]})
        assert answer.status_code == 503
        assert answer.headers["content-type"].startswith("application/problem+json")
    engine.dispose()


def test_a_batch_folded_twice_counts_once(pg_url: str, cluster: NatsCluster) -> None:
    """What a redelivery after a crash between commit and ack does: nothing."""
    settings = log_settings(pg_url, cluster)
    engine = make_engine(pg_url)
    with TestClient(create_app(settings)) as http:
        created = http.post("/v1/collections", json=spec_payload(), headers=ADMIN)
        config = CollectionConfig.model_validate(created.json())
    collection = load_collection(engine, "survey")
    items = [r for request in seeded_requests(config, 30, seed=4) for r in request]
    import base64
    from datetime import date

    reports = [
        LogReport(
            collection.id,
            config.config_hash,
            0,
            date(1970, 1, 1),
            item["id"],
            base64.b64decode(item["bits"]),
        )
        for item in items
    ]
    reports = [LogReport.decode(report.encode()) for report in reports]  # the wire round trip
    writer = ReportWriter(engine)
    by_id = CollectionsById(engine)
    first = fold_batch(writer, by_id, reports[:20])
    second = fold_batch(writer, by_id, reports)  # the first 20 again, then the rest
    writer.close()
    assert (first.written, first.duplicate) == (20, 0)
    assert (second.written, second.duplicate) == (len(reports) - 20, 20)
    ids = {item["id"] for item in items}
    assert assert_stored_and_recounted(engine, "survey", ids) == ids
    engine.dispose()
