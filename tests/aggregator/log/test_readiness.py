"""``/readyz`` in log mode against a real three-node cluster: with two nodes of three
killed the stream has no leader and every upload fails, so the replica is not ready; and
a probe is answered within the readiness check's own timeout, not the publishes' 10 s."""

from __future__ import annotations

import time
from pathlib import Path

from fastapi.testclient import TestClient

from ldp_aggregator.app import create_app
from ldp_aggregator.ingest_log.publisher import PUBLISH_TIMEOUT, READY_TIMEOUT, LogPublisher
from ldp_aggregator.settings import Settings

from ..conftest import ADMIN_TOKEN, ANALYST_TOKEN
from .cluster import NatsCluster

PATIENCE = 30.0
"""How long the test waits at most for the node left to see it is alone."""
ANSWERED_WITHIN = READY_TIMEOUT + 1.5
"""A probe's answer at most this late (the check's timeout, and the rest of the request
on a loaded machine); the publishes' timeout is far beyond it."""


def test_a_stream_without_a_majority_is_not_ready(tmp_path: Path, cluster: NatsCluster) -> None:
    assert ANSWERED_WITHIN < PUBLISH_TIMEOUT
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'ready.db'}",
        admin_token=ADMIN_TOKEN,
        analyst_token=ANALYST_TOKEN,
        log_url=cluster.url,
    )
    with TestClient(create_app(settings)) as http:
        assert http.get("/readyz").status_code == 200
        log: LogPublisher = http.app.state.ldp_log  # type: ignore[attr-defined]
        connected = log.client._server_info["server_name"]
        for index, node in enumerate(cluster.nodes):  # the replica stays connected
            if node.name != connected:
                cluster.kill(index)
        details: list[str] = []
        deadline = time.monotonic() + PATIENCE
        while time.monotonic() < deadline:
            asked = time.monotonic()
            answer = http.get("/readyz")
            assert time.monotonic() - asked < ANSWERED_WITHIN, answer.text
            if answer.status_code == 503:
                details.append(answer.json()["detail"])
                if "no leader" in details[-1]:
                    break
            else:
                assert answer.status_code == 200
            time.sleep(0.2)
        assert details and "no leader" in details[-1], details
        # and it stays so: the node left answers at once, with no leader
        for _ in range(3):
            asked = time.monotonic()
            assert http.get("/readyz").status_code == 503
            assert time.monotonic() - asked < ANSWERED_WITHIN
