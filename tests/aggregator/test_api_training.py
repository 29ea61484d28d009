"""Training jobs over the API: rounds close as their places fill, the model is released
with its exact ε and a scikit-learn export, and bad input is refused with nothing kept."""

from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import Engine, func, select, update
from tests.aggregator.conftest import ADMIN, ANALYST, TestClient, problem
from tests.aggregator.training_helpers import (
    LAYOUT,
    answer,
    ask,
    jobs_path,
    records,
    spec,
    take_part,
)

from ldp_aggregator.storage.jobs import jobs
from ldp_aggregator.storage.training import training_reports, training_tokens
from ldp_shared.analyses.logistic.planning import plan_training
from ldp_shared.learning.layout import FeatureLayout
from ldp_shared.rand import seeded_rng
from ldp_shared.wire.reports import encode_bits
from ldp_shared.wire.training import TrainedModel, TrainingJob

pytestmark = pytest.mark.usefixtures("short_place_wait")


def create(client: TestClient, **changes: Any) -> TrainingJob:
    response = client.post(jobs_path(), json=spec(**changes), headers=ANALYST)
    assert response.status_code == 201, response.text
    assert response.headers["Location"].endswith(response.json()["id"])
    return TrainingJob.model_validate(response.json())


def rows(engine: Engine, table: Any) -> int:
    with engine.connect() as connection:
        return int(connection.execute(select(func.count()).select_from(table)).scalar_one())


def test_a_job_closes_its_rounds_and_releases_its_model(train: TestClient, engine: Engine) -> None:
    job = create(train)
    assert job.status == "running" and job.round == 0 and job.weights == [0.0] * 6
    # the planned values are filled in: step 1/S and half the layout's L∞ bound
    assert job.spec.learning_rate == pytest.approx(1 / (4 / 4 + 1e-4))
    assert job.spec.bound == 0.5 and job.loss is not None
    assert math.isclose(job.gradient.exact_epsilon, 2.0, rel_tol=1e-9)
    rng = seeded_rng(1)
    closed = [take_part(train, job.id, r, rng)["round_closed"] for r in records(60)]
    assert closed.count(True) == 3 and closed[19] and closed[39] and closed[59]
    done = TrainingJob.model_validate(train.get(f"{jobs_path()}/{job.id}", headers=ANALYST).json())
    assert done.status == "done" and done.round == 3 and len(done.curve) == 3
    for log in done.curve:
        assert (log.gradient_reports, log.loss_reports) == (18, 2)
        assert log.loss is not None and log.loss_stderr is not None and log.noise_norm > 0
    model = TrainedModel.model_validate(
        train.get(f"{jobs_path()}/{job.id}/model", headers=ANALYST).json()
    )
    assert model.coordinates == ["intercept", "x1", "x2", "color=red", "color=green", "color=blue"]
    assert len(model.weights) == 6 and model.rounds == 3 and model.delta == 0.0
    assert model.epsilon == pytest.approx(2.0, rel=1e-9)
    assert model.sklearn.intercept_ == [model.weights[0]]
    assert model.sklearn.coef_ == [model.weights[1:]] and model.sklearn.classes_ == [0, 1]
    # the same model as CSV, one row per coordinate, as TrainedModel.to_frame() gives it
    table = train.get(f"{jobs_path()}/{job.id}/model?format=csv", headers=ANALYST)
    assert table.status_code == 200 and table.headers["content-type"].startswith("text/csv")
    lines = table.text.strip().splitlines()
    assert len(lines) == 1 + 6 and "intercept" in lines[1] and "color=blue" in lines[6]
    # the reports are gone with their rounds, the tokens with the job
    assert rows(engine, training_reports) == 0 and rows(engine, training_tokens) == 0
    late = train.post(f"{jobs_path()}/{job.id}/participations")
    assert late.status_code == 409 and late.json()["type"].endswith("/round-closed")


def test_the_model_is_not_released_before_the_last_round(train: TestClient) -> None:
    job = create(train)
    response = train.get(f"{jobs_path()}/{job.id}/model", headers=ANALYST)
    assert response.status_code == 409
    assert "round 0 of 3" in response.json()["detail"]


def test_a_report_for_a_closed_round_is_refused_and_not_kept(
    train: TestClient, engine: Engine
) -> None:
    job = create(train)
    rng = seeded_rng(2)
    early = ask(train, job.id)
    with engine.begin() as connection:  # its place expires: others may take it
        connection.execute(
            update(training_tokens).values(held_until=training_tokens.c.held_until - 10_000)
        )
    results = [take_part(train, job.id, record, rng) for record in records(20, seed=3)]
    assert results[-1]["round_closed"] and results[-1]["round"] == 0
    response = answer(train, early, records(1)[0], rng)
    assert response.status_code == 409 and response.json()["type"].endswith("/round-closed")
    assert "round 0" in response.json()["detail"]
    assert rows(engine, training_reports) == 0  # round 1 has nothing; round 0's are gone


def test_a_full_round_states_when_its_first_held_place_is_freed(
    train: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [1_800_000_000.0]
    monkeypatch.setattr(time, "time", lambda: clock[0])
    job = create(train, participation_seconds=120)
    ask(train, job.id)
    clock[0] += 30
    for _ in range(19):
        ask(train, job.id)
    clock[0] += 70  # the first place was issued 100 s ago: freed after its 120 s, at 121 s
    full = train.post(f"{jobs_path()}/{job.id}/participations")
    assert full.status_code == 429 and full.headers["Retry-After"] == "1"  # ask again soon
    assert "the first held place is freed in 21 s at the latest" in full.json()["detail"]
    clock[0] += 20
    assert train.post(f"{jobs_path()}/{job.id}/participations").status_code == 429
    clock[0] += 1
    assert ask(train, job.id).round == 0  # the expired place is taken again


def test_a_round_never_takes_more_reports_than_its_places(
    train: TestClient, engine: Engine
) -> None:
    job = create(train, participation_seconds=600)
    held = [ask(train, job.id) for _ in range(20)]
    roles = sorted(p.role for p in held)
    assert roles.count("loss") == 2 and roles.count("gradient") == 18
    full = train.post(f"{jobs_path()}/{job.id}/participations")
    assert full.status_code == 429 and full.json()["type"].endswith("/rate-limited")
    # the places are held for 600 s, their end rounded up to a multiple of 600 s (the
    # tokens keep no finer time): the detail states when, Retry-After asks again soon
    assert full.headers["Retry-After"] == "1"
    wait = re.search(r"freed in (\d+) s at the latest", full.json()["detail"])
    assert wait is not None and 599 <= int(wait.group(1)) <= 1200
    rng = seeded_rng(4)
    for participation, record in zip(held, records(20, seed=5), strict=True):
        assert answer(train, participation, record, rng).status_code == 200
    # round 0 closed: a report on one of its tokens is for a closed round
    again = answer(train, held[0], records(1)[0], rng)
    assert again.status_code == 409 and again.json()["type"].endswith("/already-participated")
    assert ask(train, job.id).round == 1


def test_a_token_is_single_use(train: TestClient, engine: Engine) -> None:
    job = create(train)
    rng = seeded_rng(6)
    participation = ask(train, job.id)
    record = records(1)[0]
    assert answer(train, participation, record, rng).status_code == 200
    second = answer(train, participation, record, rng)
    assert second.status_code == 409
    assert second.json()["type"].endswith("/already-participated")
    assert rows(engine, training_reports) == 1


@pytest.mark.parametrize(
    ("report", "status", "slug"),
    [
        ("AAA=", 422, "invalid-report"),  # 2 bytes: neither report size (3 and 1)
        ("AAB=", 422, "invalid-report"),  # not canonical base64
        ("not base64!", 422, "invalid-report"),
        (float("nan"), 422, "invalid-request"),
    ],
)
def test_a_malformed_report_is_refused_and_not_kept(
    train: TestClient, engine: Engine, report: Any, status: int, slug: str
) -> None:
    job = create(train)
    participation = ask(train, job.id)
    url = f"{jobs_path()}/{job.id}/participations/{participation.token}"
    body = {"report": report} if isinstance(report, str) else '{"report": NaN}'
    if isinstance(report, str):
        response = train.put(url, json=body)
    else:
        response = train.put(url, content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == status, response.text
    assert response.json()["type"].endswith(slug)
    assert rows(engine, training_reports) == 0
    # the token was not used up: the device may still answer properly
    assert answer(train, participation, records(1)[0], seeded_rng(7)).status_code == 200


def test_a_report_of_the_wrong_dimension_is_refused(train: TestClient, engine: Engine) -> None:
    job = create(train)
    participation = ask(train, job.id)
    size = participation.loss if participation.role == "loss" else participation.gradient
    assert size is not None
    wrong = np.zeros(size.report_bytes + 3, dtype=np.uint8).tobytes()
    url = f"{jobs_path()}/{job.id}/participations/{participation.token}"
    response = train.put(url, json={"report": encode_bits(wrong)})
    assert response.status_code == 422 and "bytes" in response.json()["detail"]
    assert rows(engine, training_reports) == 0


def test_an_unknown_token_or_job_is_not_found(train: TestClient) -> None:
    job = create(train)
    token = "A" * 43
    response = train.put(f"{jobs_path()}/{job.id}/participations/{token}", json={"report": ""})
    assert response.status_code == 404
    missing = train.post(f"{jobs_path()}/{'B' * 22}/participations")
    assert missing.status_code == 404 and "no training job" in missing.json()["detail"]


@pytest.mark.parametrize("job_id", ["abc", "x" * 33, "not%20an%20id!!!!!!!!"])
def test_an_id_no_job_can_have_is_a_404_that_says_so(train: TestClient, job_id: str) -> None:
    for response in (
        train.get(f"{jobs_path()}/{job_id}", headers=ANALYST),
        train.get(f"{jobs_path()}/{job_id}/layout"),
        train.post(f"{jobs_path()}/{job_id}/participations"),
    ):
        assert response.status_code == 404, response.text
        assert response.json()["type"].endswith("/not-found")
        assert response.json()["detail"].startswith("no training job can have the id ")


def test_a_jobs_layout_is_public(train: TestClient) -> None:
    job = create(train)
    layout = train.get(f"{jobs_path()}/{job.id}/layout")
    assert layout.status_code == 200
    assert FeatureLayout.model_validate(layout.json()) == FeatureLayout.model_validate(LAYOUT)
    assert train.get(f"{jobs_path()}/{'B' * 22}/layout").status_code == 404


@pytest.mark.parametrize(
    "changes",
    [
        {"epsilon": 0.0},
        {"epsilon": -1.0},
        {"epsilon": float("inf")},
        {"mechanism": "no-such-mechanism"},
        {"round_size": None, "rounds": None},  # neither devices nor a plan
        {"round_size": None, "rounds": None, "devices": 50},  # too few devices to plan
        {"l2": -1.0},
        {"loss_share": 1.0},
        {"layout": {"label": "y", "positive": "yes"}},  # no feature
    ],
)
def test_a_bad_spec_is_refused_and_nothing_stored(
    train: TestClient, engine: Engine, changes: dict[str, Any]
) -> None:
    body = json.dumps(spec(**changes))  # Infinity travels as Python's JSON writes it
    headers = {**ANALYST, "Content-Type": "application/json"}
    response = train.post(jobs_path(), content=body, headers=headers)
    assert response.status_code == 422, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert rows(engine, jobs) == 0


@pytest.mark.parametrize(
    ("mechanism", "epsilon", "limit"),
    [
        ("sampled-piecewise", 5_000.0, "sampled-piecewise on 6 coordinates takes ε up to 457.44"),
        ("sampled-hybrid", 1e308, "sampled-hybrid on 6 coordinates takes ε up to 457.44"),
        ("l1-laplace", 1e308, "l1-laplace takes ε from 0.0019 to 16.75"),
        ("sampled-piecewise", 700.0, "sampled-piecewise on 6 coordinates takes ε up to 457.44"),
        ("sampled-piecewise", 100.0, "the loss mechanism (loss_share > 0) takes ε up to 76.24"),
    ],
)
def test_a_job_at_too_large_an_epsilon_is_refused_by_the_rule(
    train: TestClient, engine: Engine, mechanism: str, epsilon: float, limit: str
) -> None:
    body = spec(mechanism=mechanism, epsilon=epsilon)
    detail = problem(
        train.post(jobs_path(), json=body, headers=ANALYST), 422, "invalid-configuration"
    )
    assert detail.startswith(f"ε = {epsilon:g} is too large: {limit};"), detail
    assert "116.6" not in detail and "residual" not in detail  # what was asked, not ε/k
    assert rows(engine, jobs) == 0


def test_creating_and_reading_jobs_needs_the_analyst_token(train: TestClient) -> None:
    assert train.post(jobs_path(), json=spec()).status_code == 401
    job = create(train)
    assert train.get(f"{jobs_path()}/{job.id}").status_code == 401
    assert train.get(f"{jobs_path()}/{job.id}/model").status_code == 401
    # devices need no token
    assert train.post(f"{jobs_path()}/{job.id}/participations").status_code == 201


def test_a_job_planned_from_its_devices_follows_the_library_plan(train: TestClient) -> None:

    job = create(train, round_size=None, rounds=None, devices=50_000, epsilon=1.0, l2=0.01)
    plan = plan_training(
        FeatureLayout.model_validate(LAYOUT), 50_000, "sampled-piecewise", 1.0, l2=0.01
    )
    assert (job.spec.round_size, job.spec.rounds) == (plan.round_size, plan.rounds)
    assert job.spec.learning_rate == plan.learning_rate and job.spec.bound == plan.bound


def test_a_closed_round_leaves_no_write_ahead_log(train: TestClient, engine: Engine) -> None:
    if engine.dialect.name != "sqlite":
        pytest.skip("a SQLite file's write-ahead log (the PostgreSQL pass has none)")
    job = create(train)
    rng = seeded_rng(8)
    path = engine.url.database
    assert path is not None
    for record in records(20, seed=9):
        take_part(train, job.id, record, rng)
    wal = Path(f"{path}-wal")
    assert not wal.exists() or wal.stat().st_size == 0  # round 0 closed: its order is gone


def test_a_gaussian_job_states_its_delta_and_needs_one(train: TestClient) -> None:
    job = create(train, mechanism="l2-gaussian", delta=1e-6)
    assert job.gradient.delta == 1e-6 and 0.0 < job.gradient.exact_delta <= 1e-6
    rng = seeded_rng(10)
    for record in records(60, seed=11):
        take_part(train, job.id, record, rng)
    model = TrainedModel.model_validate(
        train.get(f"{jobs_path()}/{job.id}/model", headers=ANALYST).json()
    )
    assert model.delta == job.gradient.exact_delta and model.rounds == 3
    assert model.epsilon <= 2.0 * (1 + 1e-9)
    refused = train.post(jobs_path(), json=spec(mechanism="l2-gaussian"), headers=ANALYST)
    assert refused.status_code == 422 and "δ" in refused.json()["detail"]


def test_a_plan_with_rounds_over_the_limit_is_refused(train: TestClient, engine: Engine) -> None:
    huge = spec(round_size=None, rounds=None, devices=1_000_000_000)
    response = train.post(jobs_path(), json=huge, headers=ANALYST)
    assert response.status_code == 422 and "over the 1,000,000 a round takes" in response.text
    assert rows(engine, jobs) == 0


def test_a_closed_collection_takes_no_participation_or_report(
    train: TestClient, engine: Engine
) -> None:
    job = create(train)
    participation = ask(train, job.id)
    assert train.post("/v1/collections/train/close", headers=ADMIN).is_success
    refused = train.post(f"{jobs_path()}/{job.id}/participations")
    assert refused.status_code == 409 and refused.json()["type"].endswith("/collection-closed")
    late = answer(train, participation, records(1)[0], seeded_rng(12))
    assert late.status_code == 409 and late.json()["type"].endswith("/collection-closed")
    assert rows(engine, training_reports) == 0
    assert train.post("/v1/collections/train/reopen", headers=ADMIN).is_success
    assert answer(train, participation, records(1)[0], seeded_rng(12)).status_code == 200
