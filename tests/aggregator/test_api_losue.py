"""L-OSUE over the API: created through the registry with its published parameters, bad
parameters refused as problem documents, reports of fresh and of memoised devices
uploaded, decoded and estimated within their intervals."""

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

PAGES = [f"page-{i}" for i in range(50)]
SHARE = np.r_[np.full(5, 0.1), np.full(45, 0.5 / 45)]
INFINITY = 5.0


def payload(**changes: Any) -> dict[str, Any]:
    page = {"name": "page", "mechanism": "l-osue", "domain": PAGES, "permanent_epsilon": INFINITY}
    base = {"name": "pages", "epsilon": 2.0, "attributes": [page]}
    return {**base, "release": {"min_reports": 50}, **changes}


def create(client: TestClient) -> CollectionConfig:
    response = client.post("/v1/collections", json=payload(), headers=ADMIN)
    assert response.status_code == 201, response.text
    return CollectionConfig.model_validate(response.json())


def test_created_through_the_registry(client: TestClient) -> None:
    response = client.post("/v1/collections", json=payload(), headers=ADMIN)
    assert response.status_code == 201, response.text
    expected = build_config(CollectionSpec.model_validate(payload()))
    assert response.json() == expected.model_dump(mode="json")
    page = response.json()["attributes"][0]
    assert page["permanent_epsilon"] == pytest.approx(INFINITY, rel=1e-9)
    assert page["epsilon"] == pytest.approx(2.0, rel=1e-9)
    assert (page["encoding"], page["byte_length"]) == ("bits", 7)


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"permanent_epsilon": 1.5}, "exceeds ε∞"),
        ({"permanent_epsilon": None}, "permanent_epsilon"),
    ],
)
def test_bad_parameters_are_problem_documents(
    client: TestClient, changes: dict[str, Any], words: str
) -> None:
    page = {"name": "page", "mechanism": "l-osue", "domain": PAGES, **changes}
    if page.get("permanent_epsilon") is None:
        page.pop("permanent_epsilon", None)
    response = client.post("/v1/collections", json=payload(attributes=[page]), headers=ADMIN)
    assert response.status_code == 422 and slug(response) == ConfigurationError.type_slug
    assert words in response.json()["detail"]


def send(client: TestClient, config: CollectionConfig, packed: np.ndarray) -> None:
    for start in range(0, len(packed), 2_000):
        items = report_dicts(config, packed[start : start + 2_000])
        response = client.post("/v1/collections/pages/reports", json={"reports": items})
        assert response.json()["accepted"] == len(items), response.text


def test_fresh_and_memoised_devices_are_estimated(client: TestClient) -> None:
    config = create(client)
    gen = np.random.default_rng(5)
    fresh = gen.choice(PAGES, size=8_000, p=SHARE)
    send(client, config, Privatizer(config).privatize_columns({"page": fresh}, seeded_rng(6)))
    devices = gen.choice(PAGES, size=400, p=SHARE)  # each with its own secret
    memoised = np.concatenate(
        [
            Privatizer(config, secret=gen.bytes(32)).privatize_columns({"page": [page]}, gen)
            for page in devices
        ]
    )
    send(client, config, memoised)
    truth = np.array([np.sum(fresh == p) + np.sum(devices == p) for p in PAGES]) / 8_400
    response = client.get(
        "/v1/collections/pages/frequencies", params={"attribute": "page"}, headers=ANALYST
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["n_reports"] == 8_400 and body["values"] == PAGES
    z = (np.array(body["estimate"]) - truth) / np.array(body["stderr"])
    assert np.all(np.abs(z) < 4.5), z
    covered = (np.array(body["ci_low"]) <= truth) & (truth <= np.array(body["ci_high"]))
    assert covered.sum() >= 43, covered  # 95% intervals over 50 values


def test_a_report_with_padding_bits_is_rejected(client: TestClient) -> None:
    config = create(client)
    packed = Privatizer(config).privatize_columns({"page": ["page-3"]}, seeded_rng(1))
    packed[0, -1] |= 0x01  # 50 bits: the last 6 of the 7th byte are padding
    response = client.post(
        "/v1/collections/pages/reports", json={"reports": report_dicts(config, packed)}
    )
    body = response.json()
    assert body["rejected"] == 1 and "padding" in body["outcomes"][0]["reason"]
