"""An aggregator killed with SIGKILL mid-ingestion, then its files read as they are.

Every acknowledged report is stored and counted once, the statistics equal a recount of
the stored rows, and the write-ahead log holds at most the one transaction that was
committing when the process died (none when it died between requests).
"""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path

import httpx

from ldp_aggregator.storage.engine import make_engine
from ldp_shared.collection import CollectionConfig
from ldp_simulation.fleet import AggregatorProcess, aggregator_process

from .conftest import ADMIN, ADMIN_TOKEN, ANALYST_TOKEN, assert_stored_and_recounted, spec_payload
from .forensics import seeded_requests
from .forensics.sqlite_files import read_files, wal_frames, wal_positions

CLIENTS = 6
RUN_SECONDS = 1.5
"""At least this long under load; then until :data:`MIN_ACKNOWLEDGED` reports were
acknowledged (a loaded machine's fsyncs are slow), at most :data:`MAX_RUN_SECONDS`."""
MIN_ACKNOWLEDGED = 60
MAX_RUN_SECONDS = 60.0


def kill(server: AggregatorProcess) -> None:
    server.process.send_signal(signal.SIGKILL)
    assert server.process.wait(timeout=30) == -signal.SIGKILL


def create(base_url: str) -> CollectionConfig:
    response = httpx.post(f"{base_url}/v1/collections", json=spec_payload(), headers=ADMIN)
    assert response.status_code == 201, response.text
    return CollectionConfig.model_validate(response.json())


def reopen_and_recount(path: Path, acknowledged: set[str]) -> set[str]:
    engine = make_engine(f"sqlite:///{path}")
    try:
        return assert_stored_and_recounted(engine, "survey", acknowledged)
    finally:
        engine.dispose()


def test_killed_between_requests_the_log_holds_one_transaction_at_most(tmp_path: Path) -> None:
    """The last group is answered before the log's truncation after it: a kill in between
    leaves that one transaction, as a kill during its commit always did."""
    path = tmp_path / "agg.db"
    with aggregator_process(f"sqlite:///{path}", ADMIN_TOKEN, ANALYST_TOKEN) as server:
        config = create(server.base_url)
        requests = seeded_requests(config, 30, seed=5)
        with httpx.Client(base_url=server.base_url, timeout=60) as http:
            for items in requests:
                answer = http.post("/v1/collections/survey/reports", json={"reports": items})
                assert answer.json()["accepted"] == len(items)
        kill(server)
    _, wal = read_files(path)
    assert len({(salt, commit) for salt, commit, _ in wal_frames(wal)}) <= 1
    reopen_and_recount(path, {r["id"] for items in requests for r in items})


def load_then_kill(server: AggregatorProcess, config: CollectionConfig) -> set[str]:
    """``CLIENTS`` clients send single-report requests until the server is killed with
    SIGKILL, ``RUN_SECONDS`` in or later, once ``MIN_ACKNOWLEDGED`` reports were
    acknowledged (at most ``MAX_RUN_SECONDS``); the ids it acknowledged (200,
    ``accepted``)."""
    acknowledged: set[str] = set()
    lock = threading.Lock()
    stop = threading.Event()
    queues = [seeded_requests(config, 1500, seed, largest=1) for seed in range(CLIENTS)]

    def client(seed: int) -> None:
        with httpx.Client(base_url=server.base_url, timeout=60) as http:
            for items in queues[seed]:
                if stop.is_set():
                    return
                try:
                    answer = http.post("/v1/collections/survey/reports", json={"reports": items})
                except httpx.HTTPError:
                    return  # the server died under this request: not acknowledged
                if answer.status_code == 200 and answer.json()["accepted"] == 1:
                    with lock:
                        acknowledged.add(items[0]["id"])

    threads = [threading.Thread(target=client, args=(seed,)) for seed in range(CLIENTS)]
    for thread in threads:
        thread.start()
    time.sleep(RUN_SECONDS)
    deadline = time.monotonic() + MAX_RUN_SECONDS
    while time.monotonic() < deadline:
        with lock:
            if len(acknowledged) >= MIN_ACKNOWLEDGED:
                break
        time.sleep(0.05)
    kill(server)  # whatever is in flight
    stop.set()
    for thread in threads:
        thread.join(60)
    assert len(acknowledged) >= MIN_ACKNOWLEDGED, f"only {len(acknowledged)} acknowledged"
    return acknowledged


def test_killed_mid_ingestion_acknowledged_reports_survive(tmp_path: Path) -> None:
    path = tmp_path / "agg.db"
    with aggregator_process(f"sqlite:///{path}", ADMIN_TOKEN, ANALYST_TOKEN) as server:
        acknowledged = load_then_kill(server, create(server.base_url))
    _, wal = read_files(path)  # before anything opens the database again
    stored = reopen_and_recount(path, acknowledged)
    in_log = wal_positions(wal, stored)
    assert len(set(in_log.values())) <= 1, "the log holds more than one transaction"
