"""GET /v1/collections/{name}/means for the lattice mechanisms, next to duchi."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from ldp_shared.analyses.joint import attribute_estimate
from ldp_shared.codec import Privatizer, decode_reports
from ldp_shared.collection import CollectionConfig
from ldp_shared.kernel import z_value
from ldp_shared.mechanisms.lattice import LatticeRandomizer
from ldp_shared.rand import seeded_rng

from .conftest import ADMIN, ANALYST, report_dicts

URL = "/v1/collections/people/means"
NAMES = ("duchi", "piecewise", "hybrid", "laplace")
SPEC: dict[str, Any] = {
    "name": "people",
    "epsilon": 8.0,
    "release": {"min_reports": 500},
    "attributes": [{"name": m, "mechanism": m, "lo": 17, "hi": 90} for m in NAMES],
}


def create(client: TestClient, **changes: Any) -> CollectionConfig:
    response = client.post("/v1/collections", json={**SPEC, **changes}, headers=ADMIN)
    assert response.status_code == 201, response.text
    return CollectionConfig.model_validate(response.json())


def fill(client: TestClient, config: CollectionConfig, n: int) -> np.ndarray:
    ages = np.clip(np.random.default_rng(31).normal(40, 13, n), 10, 95)
    packed = Privatizer(config).privatize_columns(dict.fromkeys(NAMES, ages), seeded_rng(32))
    for start in range(0, n, 2_000):
        items = report_dicts(config, packed[start : start + 2_000])
        response = client.post("/v1/collections/people/reports", json={"reports": items})
        assert response.json()["accepted"] == len(items)
    return np.clip(ages, 17, 90)


def test_each_mechanism_s_mean_comes_through_the_endpoint(client: TestClient) -> None:
    config = create(client)
    ages = fill(client, config, 20_000)
    truth = float(ages.mean())
    z = z_value(0.95)
    for name in NAMES:
        response = client.get(URL, params={"attribute": name}, headers=ANALYST)
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["mechanism"] == name and body["n_reports"] == 20_000
        assert abs(body["mean"] - truth) < 4 * body["stderr"], (body, truth)
        assert body["ci_high"] == pytest.approx(body["mean"] + z * body["stderr"])
        assert body["epsilon"] == config.attribute(name).epsilon
        assert body["epsilon"] == pytest.approx(2.0, rel=1e-9)
        randomizer = config.randomizers[[a.name for a in config.attributes].index(name)]
        if name == "duchi" or not isinstance(randomizer, LatticeRandomizer):
            assert "variance" not in body  # the JSON of other results is unchanged
            continue
        if randomizer.channel.levels >= 16:  # piecewise and hybrid at ε = 2
            assert abs(body["variance"] - float(ages.var())) < 0.25 * float(ages.var())
        else:  # laplace at ε = 2 rounds to K = 2 levels: no spread released
            assert "variance" not in body
    assert {a.name: a.model_dump().get("cells") for a in config.attributes} == {
        "duchi": None,
        "piecewise": 256,
        "hybrid": 256,
        "laplace": 25,
    }


def test_the_release_is_the_mechanism_s_estimate_from_the_counts(client: TestClient) -> None:
    config = create(client)
    ages = fill(client, config, 1_000)
    packed = Privatizer(config).privatize_columns(dict.fromkeys(NAMES, ages), seeded_rng(32))
    sums = decode_reports(config, packed).sums  # the same reports, recounted here
    for index, name in enumerate(NAMES[1:], start=1):
        body = client.get(URL, params={"attribute": name}, headers=ANALYST).json()
        own = attribute_estimate(config, config.attributes[index], 1_000, sums, 0.95)
        assert body["mean"] == pytest.approx(float(own.estimate[0]), rel=1e-12)
        assert body["stderr"] == pytest.approx(float(own.stderr[0]), rel=1e-12)


def test_under_sample_the_variance_is_the_attribute_s_own(client: TestClient) -> None:
    config = create(client, budget="sample")
    ages = fill(client, config, 8_000)
    body = client.get(URL, params={"attribute": "piecewise"}, headers=ANALYST).json()
    assert 1_500 < body["attribute_reports"] < 2_500
    assert body["epsilon"] == pytest.approx(8.0, rel=1e-9)
    assert abs(body["mean"] - float(ages.mean())) < 4 * body["stderr"]
    assert abs(body["variance"] - float(ages.var())) < 0.25 * float(ages.var())
