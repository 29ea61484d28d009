"""A mixed numeric and categorical collection through the SDK and a real aggregator."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldp_client import LDPClient
from ldp_shared.errors import InvalidQueryError, InvalidRecordError
from ldp_shared.rand import seeded_rng

from .conftest import ADMIN, ANALYST

pytestmark = pytest.mark.e2e

SPEC = {
    "name": "people",
    "epsilon": 3.0,
    "release": {"min_reports": 1000},
    "attributes": [
        {"name": "age", "mechanism": "duchi", "lo": 17, "hi": 90},
        {"name": "hours", "mechanism": "duchi", "lo": 1, "hi": 99},
        {"name": "sex", "domain": ["female", "male"], "mechanism": "grr"},
    ],
}


def test_means_and_frequencies_of_one_collection(server: str) -> None:
    gen = np.random.default_rng(21)
    n = 30_000
    ages = np.round(gen.normal(39, 14, n))  # some below 17 and above 90: clipped
    hours = np.round(gen.normal(40, 12, n))
    sexes = gen.choice(["female", "male"], n, p=[0.33, 0.67])
    records = [
        {"age": float(a), "hours": int(h), "sex": str(s)}
        for a, h, s in zip(ages, hours, sexes, strict=True)
    ]
    with LDPClient(server, token=ADMIN) as admin:
        admin.create_collection(SPEC)
    with LDPClient(server, rng=seeded_rng(22)) as device:
        with pytest.raises(InvalidRecordError, match="finite"):
            device.submit("people", [{"age": math.nan, "hours": 40, "sex": "male"}])
        assert device.submit("people", records, batch_size=5_000).accepted == n
    with LDPClient(server, token=ANALYST) as analyst:
        age = analyst.means("people", "age")
        hours_result = analyst.means("people", "hours", confidence=0.99)
        sex = analyst.frequencies("people", "sex")
        with pytest.raises(InvalidQueryError, match="means"):
            analyst.frequencies("people", "age")
    assert age.n_reports == n  # the NaN record sent nothing
    for result, values, lo, hi in ((age, ages, 17, 90), (hours_result, hours, 1, 99)):
        truth = float(np.clip(values, lo, hi).mean())
        assert result.ci_low < truth < result.ci_high, (result, truth)
        assert result.epsilon == pytest.approx(1.0)
    assert hours_result.confidence == 0.99
    assert abs(sex.estimate[1] - float(np.mean(sexes == "male"))) < 4 * sex.stderr[1]
