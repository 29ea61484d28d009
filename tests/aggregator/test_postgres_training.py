"""A training job on PostgreSQL with two aggregator replicas: devices ask one replica for a
place and answer the other, eight at a time; every round takes exactly its places, each
closes once, and nothing is left behind."""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select
from tests.aggregator.conftest import ADMIN, ADMIN_TOKEN, ANALYST, ANALYST_TOKEN, spec_payload
from tests.aggregator.test_postgres import pg_url, pytestmark  # noqa: F401 - fixture, skip rule
from tests.aggregator.training_helpers import answer, jobs_path, records, spec
from tests.e2e.conftest import serving

from ldp_aggregator.settings import Settings
from ldp_aggregator.storage.engine import make_engine
from ldp_aggregator.storage.training import training_reports, training_tokens
from ldp_shared.rand import seeded_rng
from ldp_shared.wire.training import Participation

ROUNDS = 5
DEVICES = 20 * ROUNDS
THREADS = 8


def _device(
    ask_at: httpx.Client, send_at: httpx.Client, job_id: str, record: Any, seed: int
) -> int:
    """One device: a place from one replica, the report to the other; the final status."""
    while True:
        response = ask_at.post(f"{jobs_path()}/{job_id}/participations")
        if response.status_code != 429:  # every place held by devices still computing
            break
        time.sleep(0.05)
    assert response.status_code == 201, response.text
    participation = Participation.model_validate(response.json())
    sent = answer(send_at, participation, record, seeded_rng(seed))
    return int(sent.status_code)


def test_replicas_share_one_job_on_postgres(pg_url: str) -> None:  # noqa: F811 - the fixture
    settings = Settings(
        database_url=pg_url,
        admin_token=ADMIN_TOKEN,
        analyst_token=ANALYST_TOKEN,
        upload_rate_per_collection=0,
    )
    with serving(settings) as first_url, serving(settings) as second_url:
        first, second = httpx.Client(base_url=first_url), httpx.Client(base_url=second_url)
        assert first.post("/v1/collections", json=spec_payload("train"), headers=ADMIN).is_success
        created = second.post(jobs_path(), json=spec(rounds=ROUNDS), headers=ANALYST)
        assert created.status_code == 201, created.text
        job_id = created.json()["id"]
        data = records(DEVICES, seed=21)
        statuses: list[int] = []
        errors: list[BaseException] = []

        def work(part: int) -> None:
            try:
                for i in range(part, DEVICES, THREADS):
                    pair = (first, second) if i % 2 else (second, first)
                    statuses.append(_device(*pair, job_id, data[i], seed=i))
            except BaseException as error:  # pragma: no cover - reported below
                errors.append(error)

        threads = [threading.Thread(target=work, args=(k,)) for k in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == [] and statuses == [200] * DEVICES
        job = first.get(f"{jobs_path()}/{job_id}", headers=ANALYST).json()
        model = second.get(f"{jobs_path()}/{job_id}/model", headers=ANALYST)
        first.close()
        second.close()
    assert job["status"] == "done" and job["round"] == ROUNDS
    assert [(r["gradient_reports"], r["loss_reports"]) for r in job["curve"]] == [(18, 2)] * ROUNDS
    assert model.status_code == 200 and len(model.json()["weights"]) == 6
    engine = make_engine(pg_url)
    with engine.connect() as connection:
        for table in (training_reports, training_tokens):
            assert connection.execute(select(func.count()).select_from(table)).scalar_one() == 0
    engine.dispose()


@pytest.mark.parametrize("replicas", [2])
def test_a_token_is_single_use_across_replicas(pg_url: str, replicas: int) -> None:  # noqa: F811
    settings = Settings(database_url=pg_url, admin_token=ADMIN_TOKEN, analyst_token=ANALYST_TOKEN)
    with serving(settings) as first_url, serving(settings) as second_url:
        clients = [httpx.Client(base_url=url) for url in (first_url, second_url)[:replicas]]
        assert clients[0].post("/v1/collections", json=spec_payload("train"), headers=ADMIN)
        job_id = clients[0].post(jobs_path(), json=spec(), headers=ANALYST).json()["id"]
        response = clients[1].post(f"{jobs_path()}/{job_id}/participations")
        participation = Participation.model_validate(response.json())
        record = records(1)[0]
        outcomes: list[int] = []
        barrier = threading.Barrier(replicas)

        def send(client: httpx.Client) -> None:
            barrier.wait()
            outcomes.append(answer(client, participation, record, seeded_rng(0)).status_code)

        threads = [threading.Thread(target=send, args=(c,)) for c in clients]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for client in clients:
            client.close()
    assert sorted(outcomes) == [200, 409]
