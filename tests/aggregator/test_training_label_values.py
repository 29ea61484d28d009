"""A new training job's layout names both label values (#24 item 9), and a job stored
before that rule still runs as it did.

With ``positive`` alone, every other text label counted as class 0: a typo or ``"PD"``
made a device a negative without a word. The aggregator now refuses to create a job whose
layout lacks ``negative`` (a 422 problem naming the label and the values expected), and a
device refuses a record whose label is neither value, before it asks for a place. Specs
stored without ``negative`` (older databases) are read as they were.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import Engine, func, select, update
from tests.aggregator.conftest import ANALYST, TestClient, problem
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
from ldp_client import training as device
from ldp_shared.errors import InvalidRecordError
from ldp_shared.learning.layout import FeatureLayout
from ldp_shared.rand import seeded_rng
from ldp_shared.wire.training import TrainedModel, TrainingJob

POSITIVE_ONLY = {key: value for key, value in LAYOUT.items() if key != "negative"}


def stored_jobs(engine: Engine) -> int:
    with engine.connect() as connection:
        return int(connection.execute(select(func.count()).select_from(jobs)).scalar_one())


def test_a_job_without_the_negative_value_is_refused_naming_the_values(
    train: TestClient, engine: Engine
) -> None:
    response = train.post(jobs_path(), json=spec(layout=POSITIVE_ONLY), headers=ANALYST)
    detail = problem(response, 422, "invalid-query")
    assert detail.startswith("layout.negative: a new training job names both values of its")
    assert "label 'y': positive ('yes', class 1) and negative" in detail
    assert stored_jobs(engine) == 0
    # the same spec naming both values is taken
    assert train.post(jobs_path(), json=spec(), headers=ANALYST).status_code == 201


def test_a_label_that_is_neither_value_is_refused_on_the_device(train: TestClient) -> None:
    created = train.post(jobs_path(), json=spec(), headers=ANALYST)
    job = TrainingJob.model_validate(created.json())
    layout = FeatureLayout.model_validate(train.get(f"{jobs_path()}/{job.id}/layout").json())
    assert (layout.positive, layout.negative) == ("yes", "no")
    participation = ask(train, job.id)
    mechanisms = device.rebuild_mechanisms(participation)
    record = records(1)[0]
    for label in ("maybe", 1.0, True, "YES"):
        with pytest.raises(InvalidRecordError, match="is not one of the layout's values"):
            device.make_report(participation, mechanisms, {**record, "y": label}, seeded_rng(0))
    assert device.make_report(participation, mechanisms, record, seeded_rng(0))


def _as_stored_before_the_rule(engine: Engine, job_id: str) -> None:
    """Rewrite the stored spec as an older aggregator wrote it: no ``negative``."""
    with engine.begin() as connection:
        stored = connection.execute(select(jobs.c.request_json).where(jobs.c.id == job_id))
        values: dict[str, Any] = json.loads(stored.scalar_one())
        del values["layout"]["negative"]
        connection.execute(
            update(jobs).where(jobs.c.id == job_id).values(request_json=json.dumps(values))
        )


def test_a_job_stored_without_the_negative_value_still_runs(
    train: TestClient, engine: Engine
) -> None:
    created = train.post(jobs_path(), json=spec(), headers=ANALYST)
    job_id = str(created.json()["id"])
    _as_stored_before_the_rule(engine, job_id)
    job = TrainingJob.model_validate(train.get(f"{jobs_path()}/{job_id}", headers=ANALYST).json())
    assert job.spec.layout.negative is None and job.status == "running"
    published = train.get(f"{jobs_path()}/{job_id}/layout").json()
    assert "negative" not in published and published["positive"] == "yes"
    # as before the rule: any other text is class 0, a label that is not text is refused
    old = FeatureLayout.model_validate(published)
    assert old.labels(["yes", "no", "maybe"]).tolist() == [1.0, 0.0, 0.0]
    devices = [
        {**record, "y": "yes" if record["y"] == "yes" else "maybe"} for record in records(60)
    ]
    rng = seeded_rng(2)
    participation = ask(train, job_id)
    with pytest.raises(InvalidRecordError, match="is not text"):
        device.make_report(
            participation,
            device.rebuild_mechanisms(participation),
            {**devices[0], "y": 1.0},
            seeded_rng(0),
        )
    # the same place answered with a text label; then the job runs to its end
    assert answer(train, participation, devices[0], rng).status_code == 200
    closed = [take_part(train, job_id, record, rng)["round_closed"] for record in devices[1:]]
    assert closed.count(True) == 3 and closed[-1]
    model = TrainedModel.model_validate(
        train.get(f"{jobs_path()}/{job_id}/model", headers=ANALYST).json()
    )
    assert model.rounds == 3 and model.layout.negative is None
