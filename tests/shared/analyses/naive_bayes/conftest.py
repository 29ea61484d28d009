"""The noisy car model that several naive Bayes tests read."""

from __future__ import annotations

import pytest

from ldp_shared.analyses import naive_bayes as nb
from ldp_shared.codec import Privatizer, decode_reports
from ldp_shared.collection import build_config
from ldp_shared.rand import seeded_rng
from ldp_shared.wire.naive_bayes import NaiveBayesTrainRequest

from ._car import CAR, car_spec


@pytest.fixture(scope="module")
def noisy_model() -> nb.NaiveBayesModel:
    config = build_config(car_spec("sample", epsilon=1.0))
    reports = Privatizer(config).privatize_many(CAR.records * 20, seeded_rng(11))
    sums = decode_reports(config, reports).sums
    return nb.build_model(
        config,
        len(reports),
        sums,
        NaiveBayesTrainRequest(),
        model_id="noisy-0001",
        created_day="2025-01-01",
    )
