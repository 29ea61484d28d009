"""The longitudinal mechanisms over the API: created through the registry, bad parameters
refused as problem documents, reports decoded and estimated like any other mechanism."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from ldp_shared.codec import Privatizer
from ldp_shared.collection import CollectionConfig, build_config
from ldp_shared.errors import ConfigurationError
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import CollectionSpec

from .conftest import ADMIN, ANALYST, report_dicts
from .test_api_collections import slug

APPS = ["mail", "maps", "music", "news"]
APP_SHARE = np.array([0.4, 0.3, 0.2, 0.1])
ATTRIBUTES: list[dict[str, Any]] = [
    {"name": "app", "mechanism": "l-grr", "domain": APPS, "permanent_epsilon": 4.0},
    {"name": "minutes", "mechanism": "dbitflippm", "lo": 0, "hi": 120, "buckets": 4, "bits": 2},
]


def payload(**changes: Any) -> dict[str, Any]:
    base = {"name": "daily", "epsilon": 4.0, "attributes": ATTRIBUTES}
    return {**base, "release": {"min_reports": 50}, **changes}


def test_created_through_the_registry(client: TestClient) -> None:
    response = client.post("/v1/collections", json=payload(), headers=ADMIN)
    assert response.status_code == 201, response.text
    expected = build_config(CollectionSpec.model_validate(payload()))
    assert response.json() == expected.model_dump(mode="json")
    app = response.json()["attributes"][0]
    assert app["permanent_epsilon"] == pytest.approx(4.0) and app["epsilon"] == pytest.approx(2.0)


def _with(index: int, **changes: Any) -> list[dict[str, Any]]:
    attributes = [dict(a) for a in ATTRIBUTES]
    attributes[index].update(changes)
    return attributes


@pytest.mark.parametrize(
    ("attributes", "words"),
    [
        (_with(0, permanent_epsilon=1.5), "exceeds ε∞"),
        (_with(0, permanent_epsilon=None), "permanent_epsilon"),
        (_with(1, bits=5), "bits must be at most buckets"),
        (_with(1, hi=-1), "minutes"),
    ],
)
def test_bad_parameters_are_problem_documents(
    client: TestClient, attributes: list[dict[str, Any]], words: str
) -> None:
    response = client.post("/v1/collections", json=payload(attributes=attributes), headers=ADMIN)
    assert response.status_code == 422 and slug(response) == ConfigurationError.type_slug
    assert words in response.json()["detail"]


def upload(client: TestClient, config: CollectionConfig, n: int) -> dict[str, np.ndarray]:
    """``n`` fresh devices' reports (no device secret: each record is its own device)."""
    gen = np.random.default_rng(5)
    columns = {
        "app": gen.choice(APPS, size=n, p=APP_SHARE),
        "minutes": gen.uniform(0, 120, size=n),
    }
    packed = Privatizer(config).privatize_columns(columns, seeded_rng(6))
    for start in range(0, n, 2_000):
        items = report_dicts(config, packed[start : start + 2_000])
        response = client.post("/v1/collections/daily/reports", json={"reports": items})
        assert response.json()["accepted"] == len(items), response.text
    return columns


def test_reports_are_estimated(client: TestClient) -> None:
    config = CollectionConfig.model_validate(
        client.post("/v1/collections", json=payload(), headers=ADMIN).json()
    )
    n = 6_000
    columns = upload(client, config, n)
    truths = {
        "app": np.array([np.mean(columns["app"] == a) for a in APPS]),
        "minutes": np.bincount(np.minimum(columns["minutes"] // 30, 3).astype(int), minlength=4)
        / n,
    }
    for name, truth in truths.items():
        response = client.get(
            "/v1/collections/daily/frequencies", params={"attribute": name}, headers=ANALYST
        )
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["n_reports"] == n and body["interval"] == "score"
        z = (np.array(body["estimate"]) - truth) / np.array(body["stderr"])
        assert np.all(np.abs(z) < 4.0), (name, z)


def test_a_report_no_device_sends_is_rejected(client: TestClient) -> None:
    config = CollectionConfig.model_validate(
        client.post("/v1/collections", json=payload(), headers=ADMIN).json()
    )
    packed = Privatizer(config).privatize_columns({"app": ["maps"], "minutes": [10.0]})
    minutes = config.attribute("minutes")
    packed[0, minutes.byte_offset : minutes.byte_offset + 2] = [3, 1]  # buckets not increasing
    response = client.post(
        "/v1/collections/daily/reports", json={"reports": report_dicts(config, packed)}
    )
    body = response.json()
    assert body["rejected"] == 1
    assert "strictly increasing" in body["outcomes"][0]["reason"]
