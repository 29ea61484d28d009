"""A mixed gaussian (ε, δ) and categorical collection through the SDK and a real aggregator."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldp_client import LDPClient
from ldp_shared.errors import ConfigurationError, InvalidRecordError
from ldp_shared.rand import seeded_rng

from .conftest import ADMIN, ANALYST

pytestmark = pytest.mark.e2e

SPEC = {
    "name": "mixed",
    "epsilon": 6.0,
    "release": {"min_reports": 1000},
    "attributes": [
        {"name": "age", "mechanism": "gaussian", "lo": 17, "hi": 90, "delta": 1e-6, "weight": 8},
        {
            "name": "hours",
            "mechanism": "gaussian",
            "lo": 1,
            "hi": 99,
            "delta": 1e-5,
            "calibration": "classical",
            "weight": 1,
        },
        {"name": "sex", "domain": ["female", "male"], "mechanism": "grr", "weight": 3},
    ],
}


def test_a_mixed_collection_through_the_sdk(server: str) -> None:
    gen = np.random.default_rng(61)
    n = 20_000
    ages = np.round(gen.normal(39, 14, n))  # some below 17 and above 90: clipped
    hours = np.round(gen.normal(40, 12, n))
    sexes = gen.choice(["female", "male"], n, p=[0.4, 0.6])
    records = [
        {"age": float(a), "hours": int(h), "sex": str(s)}
        for a, h, s in zip(ages, hours, sexes, strict=True)
    ]
    with LDPClient(server, token=ADMIN) as admin:
        with pytest.raises(ConfigurationError, match=r"open interval \(0, 1\)"):
            admin.create_collection(
                {**SPEC, "name": "bad", "attributes": [{**SPEC["attributes"][0], "delta": 1.0}]}
            )
        config = admin.create_collection(SPEC)
        assert admin.list_collections() == ["mixed"]  # the refused one stored nothing
    privacy = {a.name: (a.epsilon, a.delta) for a in config.attributes}
    assert privacy["age"][0] == 4.0 and 0 < privacy["age"][1] <= 1e-6
    assert privacy["hours"][0] == 0.5 and 0 < privacy["hours"][1] < 1e-7  # classical: loose
    assert config.delta == pytest.approx(privacy["age"][1] + privacy["hours"][1])
    with LDPClient(server, rng=seeded_rng(62)) as device:
        for bad in (math.nan, math.inf, "forty"):
            with pytest.raises(InvalidRecordError):
                device.submit("mixed", [{"age": bad, "hours": 40, "sex": "male"}])
        assert device.submit("mixed", records, batch_size=5_000).accepted == n
    with LDPClient(server, token=ANALYST) as analyst:
        results = {name: analyst.means("mixed", name) for name in ("age", "hours")}
        sex = analyst.frequencies("mixed", "sex")
    for name, values, lo, hi in (("age", ages, 17, 90), ("hours", hours, 1, 99)):
        result = results[name]
        truth = float(np.clip(values, lo, hi).mean())
        assert result.n_reports == n and result.mechanism == "gaussian"
        assert result.ci_low < truth < result.ci_high, (name, result, truth)
        assert (result.epsilon, result.delta) == privacy[name]
    assert abs(sex.estimate[1] - float(np.mean(sexes == "male"))) < 4 * sex.stderr[1]
