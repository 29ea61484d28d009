"""A training job over HTTP with the SDK: 1,200 devices holding UCI breast-cancer records
each send one perturbed report; the model beats the majority class on held-out records
(a one-sided binomial test at α = 0.001: a model no better than always answering the
majority class would score this well less than once in a thousand test sets),
and scikit-learn predicts the same with its export. A device's ledger and policy stop a
second participation or an ε over its limit before anything is sent."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binom
from sklearn.linear_model import LogisticRegression
from tests.e2e.conftest import ADMIN, ANALYST

from ldp_client import AsyncLDPClient, DevicePolicy, LDPClient
from ldp_shared.analyses.logistic.training import predict_proba
from ldp_shared.errors import (
    AlreadyParticipatedError,
    InvalidRecordError,
    NotFoundError,
    PrivacyPolicyError,
)
from ldp_shared.rand import seeded_rng
from ldp_shared.wire.training import TrainingSpec
from ldp_simulation.datasets import load_breast_cancer
from ldp_simulation.train_fleet import (
    _collection_spec,
    accuracy_of,
    device_records,
    encoded,
    layout_of,
    split,
)

COLLECTION = "training-demo"
pytestmark = pytest.mark.e2e


def _job(client: LDPClient, **changes: object) -> str:
    data = load_breast_cancer()
    values: dict[str, object] = {
        "layout": layout_of(data),
        "epsilon": 4.0,
        "round_size": 20,
        "rounds": 60,
    }
    values.update(changes)
    return client.create_training_job(COLLECTION, TrainingSpec.model_validate(values)).id


def test_a_fleet_trains_a_model_that_beats_the_majority_class(server: str) -> None:
    data = load_breast_cancer()
    train_rows, test_rows = split(data)
    with LDPClient(server, token=ADMIN) as admin:
        admin.create_collection(_collection_spec())
    with LDPClient(server, token=ANALYST, rng=seeded_rng(5)) as client:
        job_id = _job(client)
        for record in device_records(data, train_rows, 1200):
            client.participate(COLLECTION, job_id, record)
        progress: list[int] = []
        model = client.wait_training_job(
            COLLECTION, job_id, timeout=30, on_progress=lambda job: progress.append(job.round)
        )
    assert progress[-1] == 60 and model.rounds == 60 and len(model.curve) == 60
    assert math.isclose(model.epsilon, 4.0, rel_tol=1e-9) and model.delta == 0.0
    x, y = encoded(data, layout_of(data), test_rows)
    ours = predict_proba(np.asarray(model.weights), x) >= 0.5
    accuracy = accuracy_of(np.asarray(model.weights), x, y)
    majority = float(max(y.mean(), 1 - y.mean()))
    correct = round(accuracy * len(y))
    # P(at least this many right | each right with the majority's chance): below α = 0.001
    p_value = float(binom.sf(correct - 1, len(y), majority))
    assert majority < 0.64 and p_value < 0.001, (accuracy, majority, p_value)
    # the export: a LogisticRegression with these attributes predicts the same
    sk = LogisticRegression()
    sk.coef_ = np.asarray(model.sklearn.coef_)
    sk.intercept_ = np.asarray(model.sklearn.intercept_)
    sk.classes_ = np.asarray(model.sklearn.classes_)
    assert np.array_equal(sk.predict(x[:, 1:]) == 1, ours)
    # one loss report a round (5% of 20): each round's loss is estimated, with its error
    assert all(log.loss_reports == 1 and log.loss_stderr is not None for log in model.curve)


def test_the_device_ledger_and_policy_refuse_before_sending(server: str, tmp_path: Path) -> None:
    data = load_breast_cancer()
    record = device_records(data, split(data)[0], 1)[0]
    with LDPClient(server, token=ADMIN) as admin:
        admin.create_collection(_collection_spec())
    with LDPClient(server, token=ANALYST) as analyst:
        job_id = _job(analyst)
        strict = _job(analyst, epsilon=8.0)
    ledger = tmp_path / "device.ledger"
    with LDPClient(server, ledger=ledger) as device:
        assert device.participate(COLLECTION, job_id, record).round == 0
        with pytest.raises(AlreadyParticipatedError, match="ledger"):
            device.participate(COLLECTION, job_id, record)
        assert device.ledger is not None
        spent = device.ledger.spending(COLLECTION)
        assert spent.reports == 1 and math.isclose(spent.epsilon, 4.0, rel_tol=1e-9)
        with pytest.raises(PrivacyPolicyError, match="ε = 8"):
            LDPClient(server, policy=DevicePolicy(max_epsilon_per_record=4.0)).participate(
                COLLECTION, strict, record
            )
        with pytest.raises(InvalidRecordError):
            device.participate(COLLECTION, strict, {**record, "mean_radius": float("nan")})
        assert not device.ledger.participated(COLLECTION, strict)
    with LDPClient(server, token=ANALYST) as analyst:
        # one report from the first job; none reached the second
        assert analyst.training_job(COLLECTION, job_id).received == 1
        assert analyst.training_job(COLLECTION, strict).received == 0


def test_a_record_that_cannot_be_encoded_takes_no_place(server: str) -> None:
    data = load_breast_cancer()
    good = device_records(data, split(data)[0], 20)
    with LDPClient(server, token=ADMIN) as admin:
        admin.create_collection(_collection_spec())
    with LDPClient(server, token=ANALYST, rng=seeded_rng(9)) as client:
        job_id = _job(client, participation_seconds=600)
        unlabelled = {key: value for key, value in good[0].items() if key != "diagnosis"}
        assert len(unlabelled) == len(good[0]) - 1
        with pytest.raises(InvalidRecordError, match="no label 'diagnosis'"):
            client.participate(COLLECTION, job_id, unlabelled)
        for label in ("PD", 1.0):  # neither of the layout's values (benign, malignant)
            with pytest.raises(InvalidRecordError, match="is not one of the layout's values"):
                client.participate(COLLECTION, job_id, {**good[0], "diagnosis": label})
        with pytest.raises(NotFoundError, match="no training job can have the id 'nope'"):
            client.participate(COLLECTION, "nope", good[0])
        # the round's 20 places are all free for good records: the 20th closes round 0
        results = [client.participate(COLLECTION, job_id, record) for record in good]
        assert results[-1].round_closed and client.training_job(COLLECTION, job_id).round == 1


def test_the_async_device_checks_its_record_before_taking_a_place(server: str) -> None:
    """The async SDK's participate (layout read, record encoded, then a place): the same
    refusals as the sync one, and a bad record leaves every place to the good ones."""
    data = load_breast_cancer()
    good = device_records(data, split(data)[0], 20)
    with LDPClient(server, token=ADMIN) as admin:
        admin.create_collection(_collection_spec())
    with LDPClient(server, token=ANALYST) as analyst:
        job_id = _job(analyst, participation_seconds=600)
    unlabelled = {key: value for key, value in good[0].items() if key != "diagnosis"}

    async def devices() -> list[bool]:
        async with AsyncLDPClient(server, rng=seeded_rng(9)) as client:
            with pytest.raises(InvalidRecordError, match="no label 'diagnosis'"):
                await client.participate(COLLECTION, job_id, unlabelled)
            with pytest.raises(InvalidRecordError, match="is not one of the layout's values"):
                await client.participate(COLLECTION, job_id, {**good[0], "diagnosis": "PD"})
            with pytest.raises(NotFoundError, match="no training job can have the id 'nope'"):
                await client.participate(COLLECTION, "nope", good[0])
            return [
                (await client.participate(COLLECTION, job_id, record)).round_closed
                for record in good
            ]

    closed = asyncio.run(devices())
    assert closed == [False] * 19 + [True]
    with LDPClient(server, token=ANALYST) as analyst:
        assert analyst.training_job(COLLECTION, job_id).round == 1
