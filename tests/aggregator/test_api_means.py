"""GET /v1/collections/{name}/means: numeric attributes beside categorical ones."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from ldp_shared.codec import Privatizer
from ldp_shared.collection import CollectionConfig
from ldp_shared.kernel import z_value
from ldp_shared.mechanisms import DuchiRandomizer
from ldp_shared.rand import seeded_rng

from .conftest import ADMIN, ANALYST, report_dicts
from .test_api_collections import slug

URL = "/v1/collections/people/means"
SPEC: dict[str, Any] = {
    "name": "people",
    "epsilon": 2.0,
    "release": {"min_reports": 500},
    "attributes": [
        {"name": "age", "mechanism": "duchi", "lo": 17, "hi": 90},
        {"name": "hours", "mechanism": "duchi", "lo": 1, "hi": 99, "weight": 2.0},
        {"name": "sex", "domain": ["f", "m"], "mechanism": "grr"},
    ],
}


def create(client: TestClient, **changes: Any) -> CollectionConfig:
    response = client.post("/v1/collections", json={**SPEC, **changes}, headers=ADMIN)
    assert response.status_code == 201, response.text
    return CollectionConfig.model_validate(response.json())


def fill(client: TestClient, config: CollectionConfig, n: int) -> dict[str, np.ndarray]:
    gen = np.random.default_rng(11)
    columns = {
        "age": np.clip(gen.normal(40, 13, n), 10, 95),  # some below 17, some above 90
        "hours": np.clip(gen.normal(40, 12, n), 1, 99),
        "sex": gen.choice(["f", "m"], n).tolist(),
    }
    packed = Privatizer(config).privatize_columns(columns, seeded_rng(12))
    for start in range(0, n, 2_000):
        items = report_dicts(config, packed[start : start + 2_000])
        response = client.post("/v1/collections/people/reports", json={"reports": items})
        assert response.json()["accepted"] == len(items)
    return columns


def test_means_of_clipped_values_with_their_errors(client: TestClient) -> None:
    config = create(client)
    columns = fill(client, config, 20_000)
    for name, lo, hi in (("age", 17, 90), ("hours", 1, 99)):
        response = client.get(URL, params={"attribute": name}, headers=ANALYST)
        assert response.status_code == 200, response.text
        body = response.json()
        truth = float(np.clip(columns[name], lo, hi).mean())
        assert body["n_reports"] == 20_000 and (body["lo"], body["hi"]) == (lo, hi)
        assert abs(body["mean"] - truth) < 4 * body["stderr"], (body, truth)
        z = z_value(0.95)
        assert body["ci_low"] == pytest.approx(body["mean"] - z * body["stderr"])
        assert body["epsilon"] == config.attribute(name).epsilon
        assert body["record_epsilon"] == config.epsilon == pytest.approx(2.0)
    # the weights split ε 1 : 2 : 1
    assert config.attribute("hours").epsilon == pytest.approx(1.0)
    # the categorical attribute is still released as frequencies
    freq = client.get(
        "/v1/collections/people/frequencies", params={"attribute": "sex"}, headers=ANALYST
    )
    assert freq.status_code == 200


def test_standard_error_is_the_mechanism_s(client: TestClient) -> None:
    config = create(client)
    fill(client, config, 1_000)
    body = client.get(URL, params={"attribute": "age"}, headers=ANALYST).json()
    m = DuchiRandomizer(epsilon=config.attribute("age").epsilon, lo=17, hi=90)
    t_hat = 2 * (body["mean"] - 17) / 73 - 1
    assert body["stderr"] == pytest.approx(m.variance_t(t_hat, 1_000) ** 0.5 * 36.5, rel=1e-9)


@pytest.mark.parametrize(
    ("params", "status", "problem"),
    [
        ({"attribute": "sex"}, 422, "invalid-query"),  # categorical: frequencies
        ({"attribute": "nope"}, 422, "invalid-query"),
        ({"attribute": "age", "confidence": 1.0}, 422, "invalid-query"),
        ({"attribute": "age"}, 409, "insufficient-reports"),  # below the minimum
    ],
)
def test_bad_mean_queries(
    client: TestClient, params: dict[str, Any], status: int, problem: str
) -> None:
    create(client)
    response = client.get(URL, params=params, headers=ANALYST)
    assert response.status_code == status, response.text
    assert slug(response) == problem


def test_frequencies_of_a_numeric_attribute_point_to_means(client: TestClient) -> None:
    create(client)
    response = client.get(
        "/v1/collections/people/frequencies", params={"attribute": "age"}, headers=ANALYST
    )
    assert response.status_code == 422
    assert "GET /v1/collections/people/means" in response.json()["detail"]


def test_under_sample_the_minimum_counts_the_reports_carrying_it(client: TestClient) -> None:
    attributes = [dict(a) for a in SPEC["attributes"]]
    attributes[1].pop("weight")
    config = create(client, budget="sample", attributes=attributes)
    fill(client, config, 1_200)  # about 400 reports per attribute, below 500
    response = client.get(URL, params={"attribute": "age"}, headers=ANALYST)
    assert response.status_code == 409 and "carried by" in response.json()["detail"]


def test_bad_numeric_specs_create_nothing(client: TestClient) -> None:
    for bad in ({"lo": 5, "hi": 5}, {"lo": "x"}, {"hi": None}, {"lo": "-inf"}):
        attributes = [{**SPEC["attributes"][0], **bad}]
        response = client.post(
            "/v1/collections", json={**SPEC, "attributes": attributes}, headers=ADMIN
        )
        assert response.status_code == 422, (bad, response.text)
    assert client.get("/v1/collections", headers=ANALYST).json()["collections"] == []
