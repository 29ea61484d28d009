"""GET /v1/collections/{name}/frequencies: the API's estimate is the mechanism's estimate."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from ldp_shared.codec import decode_reports
from ldp_shared.collection import CollectionConfig

from .conftest import ADMIN, ANALYST, COLORS, packed_reports, report_dicts
from .test_api_collections import slug

URL = "/v1/collections/survey/frequencies"


def fill(client: TestClient, config: CollectionConfig, n: int, seed: int = 0) -> Any:
    packed = packed_reports(config, n, seed)
    for start in range(0, n, 500):
        items = report_dicts(config, packed[start : start + 500])
        response = client.post("/v1/collections/survey/reports", json={"reports": items})
        assert response.json()["accepted"] == len(items)
    return packed


@pytest.mark.parametrize(("index", "attribute"), [(0, "color"), (1, "age"), (2, "basket")])
def test_api_estimate_equals_the_direct_estimate(
    client: TestClient, config: CollectionConfig, index: int, attribute: str
) -> None:
    packed = fill(client, config, 1200, seed=4)
    response = client.get(URL, params={"attribute": attribute, "confidence": 0.9}, headers=ANALYST)
    assert response.status_code == 200, response.text
    body = response.json()

    part = config.attributes[index]
    sums = decode_reports(config, packed).sums[part.stats_offset : part.stats_offset + part.d]
    direct = config.randomizers[index].estimate(sums, 1200, 0.9)
    assert body["n_reports"] == 1200
    assert body["values"] == part.domain
    for key in ("estimate", "counts", "stderr", "ci_low", "ci_high"):
        assert np.allclose(body[key], getattr(direct, key), rtol=1e-12, atol=0), key
    assert body["epsilon"] == part.epsilon and body["record_epsilon"] == config.epsilon
    assert body["postprocess"] == "none" and body["postprocessed"] is None


def test_estimate_is_close_to_the_truth(client: TestClient, config: CollectionConfig) -> None:
    fill(client, config, 3000, seed=8)
    body = client.get(URL, params={"attribute": "color"}, headers=ADMIN).json()
    truth = np.array([0.5, 0.3, 0.15, 0.05])  # conftest.make_records
    z = (np.array(body["estimate"]) - truth) / np.array(body["stderr"])
    assert body["values"] == COLORS
    assert np.all(np.abs(z) < 4.5)


def test_postprocessed(client: TestClient, config: CollectionConfig) -> None:
    fill(client, config, 500)
    body = client.get(
        URL, params={"attribute": "color", "postprocess": "simplex"}, headers=ANALYST
    ).json()
    assert body["postprocess"] == "simplex"
    assert np.isclose(sum(body["postprocessed"]), 1.0) and min(body["postprocessed"]) >= 0


def test_insufficient_reports(client: TestClient, config: CollectionConfig) -> None:
    fill(client, config, 19)  # spec_payload: min_reports = 20
    response = client.get(URL, params={"attribute": "color"}, headers=ANALYST)
    assert response.status_code == 409 and slug(response) == "insufficient-reports"
    fill(client, config, 1, seed=1)
    assert client.get(URL, params={"attribute": "color"}, headers=ANALYST).status_code == 200


@pytest.mark.parametrize(
    ("params", "status", "expected"),
    [
        ({"attribute": "shoe"}, 422, "invalid-query"),
        ({"attribute": "color", "confidence": "1.5"}, 422, "invalid-query"),
        ({"attribute": "color", "confidence": "0"}, 422, "invalid-query"),
        ({"attribute": "color", "confidence": "nan"}, 422, "invalid-query"),
        ({"attribute": "color", "postprocess": "magic"}, 422, "invalid-query"),
        ({"attribute": "basket", "postprocess": "norm-sub"}, 422, "invalid-query"),
        ({"attribute": "color", "confidence": "high"}, 422, "invalid-request"),
        ({}, 422, "invalid-request"),
    ],
)
def test_bad_queries(
    client: TestClient,
    config: CollectionConfig,
    params: dict[str, str],
    status: int,
    expected: str,
) -> None:
    fill(client, config, 20)
    response = client.get(URL, params=params, headers=ANALYST)
    assert response.status_code == status and slug(response) == expected


def test_roles(client: TestClient, config: CollectionConfig) -> None:
    fill(client, config, 20)
    params = {"attribute": "color"}
    assert client.get(URL, params=params, headers=ANALYST).status_code == 200
    assert client.get(URL, params=params, headers=ADMIN).status_code == 200
    assert slug(client.get(URL, params=params)) == "unauthenticated"
    bad = {"Authorization": "Bearer " + "0" * 40}
    assert slug(client.get(URL, params=params, headers=bad)) == "unauthenticated"
    # authentication comes first: nothing is revealed about collections to strangers
    assert slug(client.get("/v1/collections/secret/frequencies?attribute=a")) == "unauthenticated"


def test_unknown_collection(client: TestClient) -> None:
    response = client.get(
        "/v1/collections/nope/frequencies", params={"attribute": "a"}, headers=ANALYST
    )
    assert response.status_code == 404 and slug(response) == "collection-not-found"


def test_named_items_of_a_basket_are_its_full_estimate(
    client: TestClient, config: CollectionConfig
) -> None:
    """``values=`` names a MASK attribute's items as the answer lists them (not records)."""
    fill(client, config, 300)
    full = client.get(URL, params={"attribute": "basket"}, headers=ANALYST).json()
    named = client.get(
        URL, params={"attribute": "basket", "values": "milk,bread"}, headers=ANALYST
    ).json()
    order = [full["values"].index("milk"), full["values"].index("bread")]
    assert named["values"] == ["milk", "bread"]
    for key in ("estimate", "stderr", "ci_low", "ci_high"):
        assert named[key] == [full[key][i] for i in order], key
