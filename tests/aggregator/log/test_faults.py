"""Log mode under faults: 10^5 reports from concurrent clients through two ingest
replicas, a three-node JetStream cluster and two fold workers into PostgreSQL, while one
NATS node, one fold worker and one ingest replica are killed with SIGKILL.

Clients retry a failed request on the other replica with the same ids (as the SDK
does). Afterwards: every acknowledged report is stored exactly once (none lost, none
counted twice) and the statistics equal a recount of the stored rows.
"""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from sqlalchemy import Engine

from ldp_aggregator.storage.collections import load_collection
from ldp_aggregator.storage.engine import make_engine
from ldp_aggregator.storage.reports import count_reports
from ldp_simulation.fleet import aggregator_process, stop_process

from ..conftest import ADMIN_TOKEN, ANALYST_TOKEN, assert_stored_and_recounted
from ..forensics import seeded_requests
from ..test_kill9 import create
from .cluster import NatsCluster, fold_process

TOTAL = 100_000
PER_REQUEST = 100
CLIENTS = 8
DEADLINE_SECONDS = 240.0
UPLOAD = "/v1/collections/survey/reports"


def stored(engine: Engine) -> int:
    with engine.connect() as connection:
        return count_reports(connection, load_collection(engine, "survey").id)


def test_kill9_of_a_node_a_fold_worker_and_a_replica_loses_and_doubles_nothing(
    pg_url: str, cluster: NatsCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LDPCOLLECT_LOG_URL", cluster.url)
    with (
        aggregator_process(
            pg_url, ADMIN_TOKEN, ANALYST_TOKEN, log_path=tmp_path / "ingest0.log"
        ) as first,
        aggregator_process(
            pg_url, ADMIN_TOKEN, ANALYST_TOKEN, log_path=tmp_path / "ingest1.log"
        ) as second,
    ):
        replicas = [first.base_url, second.base_url]
        config = create(first.base_url)
        folds = [fold_process(pg_url, cluster.url, tmp_path / f"fold{k}.log") for k in range(2)]
        requests = seeded_requests(
            config, TOTAL // PER_REQUEST, seed=11, largest=PER_REQUEST, smallest=PER_REQUEST
        )
        acknowledged: set[str] = set()
        lock = threading.Lock()
        done = [0]
        failures = [0]
        started = time.monotonic()

        def client(k: int) -> None:
            with httpx.Client(timeout=30) as http:
                for n, items in enumerate(requests[k::CLIENTS]):
                    replica = (k + n) % 2
                    while time.monotonic() - started < DEADLINE_SECONDS:
                        try:
                            answer = http.post(replicas[replica] + UPLOAD, json={"reports": items})
                            if answer.status_code == 200:
                                break
                        except httpx.HTTPError:
                            pass
                        with lock:
                            failures[0] += 1
                        replica = 1 - replica  # the same ids, on the other replica
                        time.sleep(0.1)
                    else:
                        return
                    outcomes = answer.json()["outcomes"]
                    with lock:
                        acknowledged.update(
                            o["id"] for o in outcomes if o["status"] in ("accepted", "duplicate")
                        )
                        done[0] += 1

        threads = [threading.Thread(target=client, args=(k,)) for k in range(CLIENTS)]
        for thread in threads:
            thread.start()
        faults: list[tuple[float, Callable[[], None]]] = [
            (0.2, lambda: cluster.kill(2)),
            (0.4, lambda: _kill(folds[0])),
            (0.6, lambda: _kill(first.process)),
        ]
        for share, fault in faults:
            while done[0] < share * len(requests) and any(t.is_alive() for t in threads):
                time.sleep(0.05)
            fault()
        for thread in threads:
            thread.join(DEADLINE_SECONDS)
        sent = time.monotonic() - started

        engine = make_engine(pg_url)
        try:
            deadline = time.monotonic() + 120
            while stored(engine) < len(acknowledged) and time.monotonic() < deadline:
                time.sleep(0.5)
            time.sleep(4.0)  # a redelivery due now would be counted by now
            folded = time.monotonic() - started
            every = {r["id"] for items in requests for r in items}
            assert done[0] == len(requests), f"only {done[0]} requests answered"
            assert acknowledged == every
            assert assert_stored_and_recounted(engine, "survey", acknowledged) == every
        finally:
            engine.dispose()
            for fold in folds[1:]:
                stop_process(fold)
        print(
            f"{TOTAL} reports: sent in {sent:.1f}s, folded by {folded:.1f}s,"
            f" {failures[0]} failed requests retried"
        )


def _kill(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGKILL)
    assert process.wait(timeout=30) == -signal.SIGKILL
