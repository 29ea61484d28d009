"""10,000 replays of stored reports across two replicas: none counted twice.

Two app instances (replicas) on one database take 10,000 reports, then the same 10,000
again: the same ids and bits, shuffled and mixed into batches with new reports, sent
from two threads, one per replica, at the same time. Every new report is also sent to
the other replica in a second request, as a client retries after a timeout behind a load
balancer. Each replay must answer ``duplicate``, each new report ``accepted`` exactly
once over both replicas, and the statistics must equal a recount of the stored rows.
Runs on SQLite, and on PostgreSQL in the second pass of ``.ci/run``.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from tests.engines import database_url

from ldp_aggregator.app import create_app
from ldp_aggregator.settings import Settings
from ldp_shared.collection import CollectionConfig

from .conftest import (
    ADMIN,
    ADMIN_TOKEN,
    ANALYST_TOKEN,
    assert_stored_and_recounted,
    packed_reports,
    report_dicts,
    snapshot,
    spec_payload,
    state_of,
)

STORED = 10_000
NEW = 2_000
REPLICAS = 2
UPLOAD = "/v1/collections/survey/reports"


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[list[TestClient]]:
    """Two apps on one fresh database, with no upload limit."""
    settings = Settings(
        database_url=database_url(tmp_path / "shared.db"),
        admin_token=ADMIN_TOKEN,
        analyst_token=ANALYST_TOKEN,
        upload_rate_per_collection=0,
    )
    with ExitStack() as stack:
        yield [
            stack.enter_context(TestClient(create_app(settings), raise_server_exceptions=False))
            for _ in range(REPLICAS)
        ]


def statuses(client: TestClient, batch: list[dict[str, str]]) -> list[tuple[str, str]]:
    answer = client.post(UPLOAD, json={"reports": batch})
    assert answer.status_code == 200, answer.text
    return [(outcome["id"], outcome["status"]) for outcome in answer.json()["outcomes"]]


def mixed_batches(
    replays: list[dict[str, str]], new: list[dict[str, str]], seed: int
) -> list[list[list[dict[str, str]]]]:
    """For each replica, its batches: every replay once over all of them, every new
    report once per replica, shuffled together into batches of 1 to 1,000 reports."""
    rng = np.random.default_rng(seed)
    halves = np.array_split(rng.permutation(len(replays)), REPLICAS)
    per_replica: list[list[list[dict[str, str]]]] = []
    for half in halves:
        items: list[dict[str, str]] = [replays[i] for i in half] + new
        items = [items[i] for i in rng.permutation(len(items))]
        batches: list[list[dict[str, str]]] = []
        while items:
            size = int(rng.integers(1, 1001))
            batches.append(items[:size])
            items = items[size:]
        per_replica.append(batches)
    return per_replica


def test_ten_thousand_replays_across_two_replicas_count_nothing_twice(
    replicas: list[TestClient],
) -> None:
    created = replicas[0].post("/v1/collections", json=spec_payload(), headers=ADMIN)
    assert created.status_code == 201, created.text
    config = CollectionConfig.model_validate(created.json())
    stored = report_dicts(config, packed_reports(config, STORED, seed=1))
    for start in range(0, STORED, 1000):
        replica = replicas[(start // 1000) % REPLICAS]
        answered = statuses(replica, stored[start : start + 1000])
        assert {status for _, status in answered} == {"accepted"}
    engine = state_of(replicas[0]).engine
    before = snapshot(engine, "survey")
    assert before.n_reports == before.rows == STORED

    new = report_dicts(config, packed_reports(config, NEW, seed=2))
    plan = mixed_batches(stored, new, seed=3)
    answers: list[list[tuple[str, str]]] = [[] for _ in range(REPLICAS)]
    errors: list[BaseException] = []

    def send(k: int) -> None:
        try:
            for batch in plan[k]:
                answers[k].extend(statuses(replicas[k], batch))
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=send, args=(k,)) for k in range(REPLICAS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []

    replayed = {report["id"] for report in stored}
    fresh = {report["id"] for report in new}
    outcomes: dict[str, Counter[str]] = {}
    for id_, status in (pair for answer in answers for pair in answer):
        outcomes.setdefault(id_, Counter())[status] += 1
    assert {i for i in outcomes if i in replayed} == replayed
    assert all(outcomes[i] == Counter(duplicate=1) for i in replayed)
    assert all(outcomes[i] == Counter(accepted=1, duplicate=1) for i in fresh)

    after = assert_stored_and_recounted(engine, "survey", replayed | fresh)
    assert after == replayed | fresh
    assert snapshot(engine, "survey").n_reports == STORED + NEW
