"""Log mode in one process against a real three-node JetStream cluster and PostgreSQL:
the answers' outcomes, the deduplication window, folding, redelivery and readiness."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import nats
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from ldp_aggregator.app import create_app
from ldp_aggregator.ingest_log.fold import CollectionsById, FoldWorker, fold_batch
from ldp_aggregator.ingest_log.fold_metrics import FoldMetrics
from ldp_aggregator.ingest_log.stream import LogChunk, log_settings_of
from ldp_aggregator.settings import Settings
from ldp_aggregator.storage.collections import load_collection
from ldp_aggregator.storage.engine import make_engine
from ldp_aggregator.storage.migrate import upgrade
from ldp_aggregator.storage.reports import count_reports
from ldp_aggregator.writer import ReportWriter
from ldp_shared.collection import CollectionConfig
from ldp_shared.errors import ConfigurationError

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


async def consumer_ack_wait(settings: Settings) -> float | None:
    """The fold workers' consumer's ``ack_wait`` as the stream holds it."""
    log = log_settings_of(settings)
    client = await nats.connect(servers=list(log.servers))
    try:
        info = await client.jetstream().consumer_info(log.stream, log.durable)
        return info.config.ack_wait
    finally:
        await client.close()


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
        # the same batch again, within the stream's deduplication window: the same message
        again = http.post(UPLOAD, json={"reports": [*items, items[1], bad]}).json()
        assert [o["status"] for o in again["outcomes"]] == ["duplicate"] * (len(items) + 1) + [
            "rejected"
        ]
        assert (again["accepted"], again["duplicate"], again["rejected"]) == (0, len(items) + 1, 1)
        assert time.monotonic() - published < DEDUP_SECONDS  # else the lines above cannot hold
        # five of them in another batch: a message the stream has not seen, so accepted,
        # and stored once by the fold
        assert http.post(UPLOAD, json={"reports": items[:5]}).json()["accepted"] == 5
        # one report alone is its own message: a second copy within the window is dropped
        single = {"reports": [items[0]]}
        sent = time.monotonic()
        assert http.post(UPLOAD, json=single).json()["accepted"] == 1
        assert http.post(UPLOAD, json=single).json()["duplicate"] == 1
        assert time.monotonic() - sent < DEDUP_SECONDS  # else the line above cannot hold
        # past the window the stream takes it again (the server forgets ids on a timer
        # of its own: a copy still refused is sent again until taken, at most PATIENCE) ...
        time.sleep(max(0.0, sent + DEDUP_SECONDS - time.monotonic()))
        deadline = time.monotonic() + PATIENCE
        while http.post(UPLOAD, json=single).json()["accepted"] != 1:
            assert time.monotonic() < deadline, "the stream never forgot the report's id"
            time.sleep(0.2)
        copies = 5 + 1 + 1  # the other batch's, the single's, the late single's
        # nothing is killed here: no redelivery may add duplicates to the exact counts
        with folding(settings, engine, ack_wait=30.0) as metrics:
            wait_stored(engine, len(items))
            # the late copies come in the same or a later batch
            deadline = time.monotonic() + PATIENCE
            while fold_counts(metrics) != (len(items), copies) and time.monotonic() < deadline:
                time.sleep(0.1)
        # ... and folding counts each once
        ids = {r["id"] for r in items}
        assert assert_stored_and_recounted(engine, "survey", ids) == ids
        assert fold_counts(metrics) == (len(items), copies)

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

    def chunk(part: list[dict[str, str]]) -> LogChunk:
        made = LogChunk(
            collection.id,
            config.config_hash,
            0,
            date(1970, 1, 1),
            tuple(item["id"] for item in part),
            b"".join(base64.b64decode(item["bits"]) for item in part),
        )
        return LogChunk.decode(made.encode())  # the wire round trip

    # as published: a one-report message, then messages of several
    first_part = [chunk(items[:1]), chunk(items[1:20])]
    rest = [chunk(items[:7]), chunk(items[7:])]  # the first 20 again, then the rest
    wrong = chunk(items[:3])
    wrong = replace(wrong, bits=wrong.bits[:-1])
    writer = ReportWriter(engine)
    by_id = CollectionsById(engine)
    first = fold_batch(writer, by_id, first_part)
    second = fold_batch(writer, by_id, [*rest, wrong])
    writer.close()
    assert (first.written, first.duplicate, first.dropped) == (20, 0, 0)
    # a message whose bits do not fit its ids is dropped whole
    assert (second.written, second.duplicate, second.dropped) == (len(items) - 20, 20, 3)
    ids = {item["id"] for item in items}
    assert assert_stored_and_recounted(engine, "survey", ids) == ids
    engine.dispose()


def test_a_worker_on_another_database_folds_nothing_and_says_so(
    pg_url: str, cluster: NatsCluster, tmp_path: Path
) -> None:
    """A fold worker given another database (a wrong ``--database-url``, or none: then
    ``./ldpcollect.db``) finds none of the messages' collections there. It used to
    acknowledge them as dropped, losing reports answered ``accepted``; each message now
    names its database, and such a worker stops at the first one, acknowledging nothing."""
    settings = log_settings(pg_url, cluster)
    engine = make_engine(pg_url)
    with TestClient(create_app(settings)) as http:
        created = http.post("/v1/collections", json=spec_payload(), headers=ADMIN)
        config = CollectionConfig.model_validate(created.json())
        items = [r for request in seeded_requests(config, 20, seed=5) for r in request]
        assert http.post(UPLOAD, json={"reports": items}).json()["accepted"] == len(items)
    elsewhere = make_engine(f"sqlite:///{tmp_path / 'elsewhere.db'}")
    upgrade(elsewhere)
    stray = FoldWorker(log_settings_of(settings), elsewhere, FoldMetrics(), ack_wait_seconds=2.0)
    with pytest.raises(ConfigurationError, match="another database"):
        asyncio.run(asyncio.wait_for(stray.run(asyncio.Event()), PATIENCE))
    stray.writer.close()
    elsewhere.dispose()
    with folding(settings, engine, ack_wait=30.0):  # no redelivery wait: handed back at once
        wait_stored(engine, len(items))
        # the consumer the stray worker made (ack_wait 2 s) now has this worker's 30 s
        assert asyncio.run(consumer_ack_wait(settings)) == 30.0
    ids = {r["id"] for r in items}
    assert assert_stored_and_recounted(engine, "survey", ids) == ids
    engine.dispose()
