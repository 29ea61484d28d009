"""GET /v1/collections/{name}/quantiles: histogram attributes' quantiles, every release
rule, and bad queries as problem documents."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from ldp_shared.analyses.quantiles import binned_quantiles
from ldp_shared.codec import Privatizer, decode_reports
from ldp_shared.collection import CollectionConfig
from ldp_shared.rand import seeded_rng

from .conftest import ADMIN, ANALYST, report_dicts
from .test_api_collections import slug

URL = "/v1/collections/people/quantiles"
EDGES = [17.0, 25.0, 35.0, 45.0, 55.0, 65.0, 90.0]
SPEC: dict[str, Any] = {
    "name": "people",
    "epsilon": 4.0,
    "release": {"min_reports": 500},
    "attributes": [
        {"name": "age", "mechanism": "histogram", "edges": EDGES},
        {
            "name": "income",
            "mechanism": "histogram",
            "edges": [0, 10, 20, 50, 100],
            "channel": "oue",
        },
        {"name": "hours", "mechanism": "duchi", "lo": 0, "hi": 99},
        {"name": "sex", "domain": ["f", "m"], "mechanism": "grr"},
    ],
}


def create(client: TestClient, **changes: Any) -> CollectionConfig:
    response = client.post("/v1/collections", json={**SPEC, **changes}, headers=ADMIN)
    assert response.status_code == 201, response.text
    return CollectionConfig.model_validate(response.json())


def fill(client: TestClient, config: CollectionConfig, n: int) -> Any:
    gen = np.random.default_rng(21)
    columns = {
        "age": gen.normal(40, 14, n),  # some outside [17, 90]: clipped on the device
        "income": gen.exponential(25, n),
        "hours": gen.uniform(0, 99, n),
        "sex": gen.choice(["f", "m"], n).tolist(),
    }
    packed = Privatizer(config).privatize_columns(columns, seeded_rng(22))
    for start in range(0, n, 2_000):
        items = report_dicts(config, packed[start : start + 2_000])
        response = client.post("/v1/collections/people/reports", json={"reports": items})
        assert response.json()["accepted"] == len(items)
    return decode_reports(config, packed)


@pytest.mark.parametrize("name", ["age", "income"])
def test_quantiles_are_the_library_s(client: TestClient, name: str) -> None:
    config = create(client)
    batch = fill(client, config, 4_000)
    params = {"attribute": name, "q": "0.1,0.5,0.9", "confidence": "0.9"}
    response = client.get(URL, params=params, headers=ANALYST)
    assert response.status_code == 200, response.text
    body = response.json()
    attribute = config.attribute(name)
    stats = {"counts": batch.sums[attribute.stats_offset : attribute.stats_offset + attribute.d]}
    randomizer = config.randomizer(attribute)
    estimate = randomizer.estimate_stats(stats, 4_000, 0.95).estimate
    covariance = randomizer.frequency_covariance(stats, 4_000)
    edges = config.spec_of(attribute).bin_edges
    expected = binned_quantiles(edges, estimate, covariance, [0.1, 0.5, 0.9], 0.9)
    assert body["edges"] == edges and body["interval"] == "inverted-cdf-band"
    assert (body["n_reports"], body["confidence"], body["mechanism"]) == (4_000, 0.9, "histogram")
    assert body["epsilon"] == attribute.epsilon and body["record_epsilon"] == config.epsilon
    for got, want in zip(body["quantiles"], expected, strict=True):
        assert got == {
            "probability": want.probability,
            "value": want.value,
            "ci_low": want.ci_low,
            "ci_high": want.ci_high,
            "bin": want.bin,
        }
    assert "attribute_reports" not in body


def test_default_levels_are_the_quartiles(client: TestClient) -> None:
    fill(client, create(client), 600)
    body = client.get(URL, params={"attribute": "age"}, headers=ANALYST).json()
    assert [q["probability"] for q in body["quantiles"]] == [0.25, 0.5, 0.75]


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"attribute": "age", "q": ""}, "comma-separated"),
        ({"attribute": "age", "q": "0.5,"}, "comma-separated"),
        ({"attribute": "age", "q": "half"}, "comma-separated"),
        ({"attribute": "age", "q": "0"}, "in (0, 1)"),
        ({"attribute": "age", "q": "1"}, "in (0, 1)"),
        ({"attribute": "age", "q": "0.5,1.5"}, "in (0, 1)"),
        ({"attribute": "age", "q": "-0.1"}, "in (0, 1)"),
        ({"attribute": "age", "q": "nan"}, "in (0, 1)"),
        ({"attribute": "age", "q": "0.5,NaN"}, "in (0, 1)"),
        ({"attribute": "age", "q": "inf"}, "in (0, 1)"),
        ({"attribute": "age", "q": ",".join(["0.5"] * 100)}, "1 to 99"),
        ({"attribute": "age", "confidence": "1"}, "confidence"),
        ({"attribute": "sex"}, "histogram"),
        ({"attribute": "hours"}, "GET /v1/collections/people/means"),
        ({"attribute": "shoe"}, "no attribute 'shoe'"),
    ],
)
def test_bad_queries_are_422(client: TestClient, params: dict[str, str], expected: str) -> None:
    fill(client, create(client), 10)  # checked before the release minimum
    response = client.get(URL, params=params, headers=ANALYST)
    assert response.status_code == 422 and slug(response) == "invalid-query"
    assert expected in response.json()["detail"]


def test_malformed_parameters_are_invalid_requests(client: TestClient) -> None:
    create(client)
    for params in ({}, {"attribute": "age", "confidence": "high"}):
        response = client.get(URL, params=params, headers=ANALYST)
        assert response.status_code == 422 and slug(response) == "invalid-request"


def test_release_minimum_roles_and_unknown_collection(client: TestClient) -> None:
    config = create(client)
    fill(client, config, 499)
    params = {"attribute": "age"}
    response = client.get(URL, params=params, headers=ANALYST)
    assert response.status_code == 409 and slug(response) == "insufficient-reports"
    assert slug(client.get(URL, params=params)) == "unauthenticated"
    missing = client.get("/v1/collections/nope/quantiles", params=params, headers=ANALYST)
    assert missing.status_code == 404 and slug(missing) == "collection-not-found"


def test_under_sample_the_minimum_counts_the_reports_carrying_it(client: TestClient) -> None:
    config = create(client, budget="sample")
    fill(client, config, 1_600)  # about 400 reports per attribute, below 500
    response = client.get(URL, params={"attribute": "age"}, headers=ANALYST)
    assert response.status_code == 409 and "carried by" in response.json()["detail"]
    fill(client, config, 1_600)
    body = client.get(URL, params={"attribute": "age"}, headers=ANALYST).json()
    assert 500 <= body["attribute_reports"] < 3_200 and body["n_reports"] == 3_200
