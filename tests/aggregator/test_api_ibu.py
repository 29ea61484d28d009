"""GET .../frequencies with postprocess=ibu, and the ordinal summaries of ordered values:
the API's numbers are the library's on the same statistics."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from ldp_shared.analyses.ibu import DEFAULT_TOLERANCE, bayesian_update
from ldp_shared.analyses.ordinal import ordinal_summary
from ldp_shared.codec import Privatizer, decode_reports
from ldp_shared.collection import CollectionConfig
from ldp_shared.kernel import z_value
from ldp_shared.rand import seeded_rng

from .conftest import ADMIN, ANALYST, report_dicts
from .test_api_collections import slug

URL = "/v1/collections/mixed/frequencies"
LEVELS = ["awful", "poor", "fair", "good", "great"]
ATTRIBUTES: list[dict[str, Any]] = [
    {"name": "color", "domain": ["r", "g", "b", "y"], "mechanism": "oue"},
    {"name": "size", "domain": ["s", "m", "l"], "mechanism": "grr"},
    {"name": "rating", "domain": LEVELS, "mechanism": "exponential", "utility": "ordinal"},
    {"name": "same", "domain": LEVELS, "mechanism": "exponential", "utility": "equality"},
    {"name": "age", "mechanism": "histogram", "edges": [17, 25, 35, 45, 55, 65, 90]},
    {"name": "basket", "domain": ["x", "y", "z"], "mechanism": "mask", "keep_probability": 0.8},
]


def create(client: TestClient, name: str = "mixed", **changes: Any) -> CollectionConfig:
    spec = {"name": name, "epsilon": 6.0, "attributes": ATTRIBUTES, "release": {"min_reports": 50}}
    response = client.post("/v1/collections", json={**spec, **changes}, headers=ADMIN)
    assert response.status_code == 201, response.text
    return CollectionConfig.model_validate(response.json())


def upload(client: TestClient, config: CollectionConfig, records: list[dict[str, Any]]) -> Any:
    packed = Privatizer(config).privatize_many(records, rng=seeded_rng(3))
    for start in range(0, len(records), 2_000):
        items = report_dicts(config, packed[start : start + 2_000])
        response = client.post(f"/v1/collections/{config.name}/reports", json={"reports": items})
        assert response.json()["accepted"] == len(items), response.text
    return decode_reports(config, packed)


def records(n: int) -> list[dict[str, Any]]:
    gen = np.random.default_rng(8)
    return [
        {
            "color": str(gen.choice(["r", "g", "b", "y"], p=[0.4, 0.3, 0.2, 0.1])),
            "size": str(gen.choice(["s", "m", "l"])),
            "rating": str(gen.choice(LEVELS, p=[0.05, 0.15, 0.3, 0.35, 0.15])),
            "same": str(gen.choice(LEVELS)),
            "age": float(gen.normal(40, 14)),
            "basket": {"x"} if gen.random() < 0.5 else set(),
        }
        for _ in range(n)
    ]


def _stats(config: CollectionConfig, sums: np.ndarray, name: str) -> dict[str, np.ndarray]:
    attribute = config.attribute(name)
    block = sums[attribute.stats_offset : attribute.stats_offset + attribute.d]
    return {"counts": np.asarray(block, dtype=np.float64)}


@pytest.mark.parametrize("name", ["color", "size", "rating", "same", "age"])
def test_ibu_is_the_library_s_beside_the_raw_estimate(client: TestClient, name: str) -> None:
    config = create(client)
    batch = upload(client, config, records(3_000))
    raw = client.get(URL, params={"attribute": name}, headers=ANALYST).json()
    body = client.get(URL, params={"attribute": name, "postprocess": "ibu"}, headers=ANALYST)
    assert body.status_code == 200, body.text
    result = body.json()
    assert result["postprocess"] == "ibu" and result["estimate"] == raw["estimate"]
    randomizer = config.randomizer(config.attribute(name))
    channel = randomizer.report_channel(_stats(config, batch.sums, name), 3_000)
    assert channel is not None
    fit = bayesian_update(channel)
    np.testing.assert_allclose(result["postprocessed"], fit.estimate, rtol=1e-12, atol=1e-15)
    assert result["ibu"] == {
        "iterations": fit.iterations,
        "converged": fit.converged,
        "change": fit.change,
        "tolerance": DEFAULT_TOLERANCE,
    }
    assert min(result["postprocessed"]) >= 0 and sum(result["postprocessed"]) == pytest.approx(1)
    assert "ibu" not in raw and raw["postprocessed"] is None


@pytest.mark.parametrize(
    ("name", "ordered"),
    [("rating", True), ("age", True), ("same", False), ("color", False), ("size", False)],
)
def test_ordinal_summaries_of_ordered_values_only(
    client: TestClient, name: str, ordered: bool
) -> None:
    config = create(client)
    batch = upload(client, config, records(2_000))
    result = client.get(URL, params={"attribute": name, "confidence": 0.9}, headers=ANALYST).json()
    if not ordered:
        assert "ordinal" not in result
        return
    randomizer = config.randomizer(config.attribute(name))
    stats = _stats(config, batch.sums, name)
    covariance = randomizer.frequency_covariance(stats, 2_000)
    expected = ordinal_summary(result["estimate"], covariance)
    ordinal, z = result["ordinal"], z_value(0.9)
    np.testing.assert_allclose(ordinal["cdf"], expected.cdf.cdf, rtol=1e-12)
    np.testing.assert_allclose(ordinal["cdf_stderr"], expected.cdf.stderr, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(
        ordinal["cdf_ci_high"], expected.cdf.cdf + z * expected.cdf.stderr, rtol=1e-12
    )
    for key in ("mean_rank", "median_rank"):
        value = getattr(expected, key)
        assert ordinal[key]["value"] == pytest.approx(value.value, rel=1e-12)
        assert ordinal[key]["stderr"] == pytest.approx(value.stderr, rel=1e-9)
        assert ordinal[key]["ci_low"] == pytest.approx(value.value - z * value.stderr)


def test_ibu_of_a_feature_sums_its_joint_cells(client: TestClient) -> None:
    attributes = [
        {"name": "color", "domain": ["r", "g", "b", "y"]},
        {"name": "cls", "domain": ["yes", "no"]},
    ]
    config = create(client, name="labelled", attributes=attributes, label="cls")
    gen = np.random.default_rng(2)
    rows = [
        {"color": str(gen.choice(["r", "g", "b", "y"])), "cls": str(gen.choice(["yes", "no"]))}
        for _ in range(1_000)
    ]
    batch = upload(client, config, rows)
    url = "/v1/collections/labelled/frequencies"
    result = client.get(url, params={"attribute": "color", "postprocess": "ibu"}, headers=ANALYST)
    assert result.status_code == 200, result.text
    feature = config.attribute("color")
    channel = config.randomizer(feature).report_channel(_stats_joint(feature, batch.sums), 1_000)
    assert channel is not None
    joint = bayesian_update(channel).estimate.reshape(4, 2).sum(axis=1)
    np.testing.assert_allclose(result.json()["postprocessed"], joint, rtol=1e-12)
    label = client.get(url, params={"attribute": "cls", "postprocess": "ibu"}, headers=ANALYST)
    assert label.status_code == 422 and slug(label) == "invalid-query"
    assert "no single channel" in label.json()["detail"]


def _stats_joint(feature: Any, sums: np.ndarray) -> dict[str, np.ndarray]:
    block = sums[feature.stats_offset : feature.stats_offset + feature.cells]
    return {"counts": np.asarray(block, dtype=np.float64)}


def test_ibu_of_a_basket_is_refused(client: TestClient) -> None:
    config = create(client)
    upload(client, config, records(60))
    response = client.get(
        URL, params={"attribute": "basket", "postprocess": "ibu"}, headers=ANALYST
    )
    assert response.status_code == 422 and slug(response) == "invalid-query"
    assert "basket" in response.json()["detail"]


def test_ibu_respects_the_release_minimum(client: TestClient) -> None:
    config = create(client)
    upload(client, config, records(49))
    response = client.get(URL, params={"attribute": "age", "postprocess": "ibu"}, headers=ANALYST)
    assert response.status_code == 409 and slug(response) == "insufficient-reports"
