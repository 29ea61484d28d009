"""The kNN classification endpoint: answers, and a problem document for every bad input.

Covers: a kNN collection created over the API (its 'knn' section published in the
config), classification of points with scores and standard errors; a point outside the
bounds clipped onto them as a device's values are, and flagged per point; the problems for
a point of the wrong dimension, with NaN or with a bad category (plain numbers, the point
named), ``k`` outside 1 … 10⁹, a collection below its release minimum, a collection that
is not a kNN one, no token, an unknown collection.
"""

from __future__ import annotations

import numpy as np
import pytest

from ldp_shared.analyses.knn.collection import collection_spec
from ldp_shared.codec import Privatizer
from ldp_shared.collection import CollectionConfig
from ldp_shared.knn_cells import KnnCells, device_columns
from ldp_shared.rand import seeded_rng

from .conftest import ADMIN, ANALYST, TestClient, problem, report_dicts, spec_payload

CELLS = KnnCells.model_validate(
    {
        "features": [
            {"name": "height", "lo": 100, "hi": 220, "centre": 170, "spread": 10},
            {"name": "colour", "domain": ["red", "green", "blue"]},
        ],
        "tables": 2,
        "bits": 4,
    }
)
URL = "/v1/collections/people/knn/classify"


def create(client: TestClient, min_reports: int) -> CollectionConfig:
    spec = collection_spec("people", CELLS, 3.0, "tall", ["no", "yes"], min_reports)
    response = client.post("/v1/collections", json=spec.model_dump(mode="json"), headers=ADMIN)
    assert response.status_code == 201, response.text
    config = CollectionConfig.model_validate(response.json())
    assert config.spec.knn == CELLS
    return config


def upload(client: TestClient, config: CollectionConfig, n: int) -> None:
    rng = seeded_rng(8)
    points = np.column_stack([rng.uniform(140, 200, n), rng.integers(0, 3, n)])
    labels = ["yes" if h > 175 else "no" for h in points[:, 0]]
    columns = device_columns(CELLS, "tall", points, labels)
    packed = Privatizer(config).privatize_columns(columns, seeded_rng(9))
    body = {"reports": report_dicts(config, packed)}
    response = client.post("/v1/collections/people/reports", json=body)
    assert response.status_code == 200 and response.json()["accepted"] == n


@pytest.fixture
def people(client: TestClient) -> CollectionConfig:
    config = create(client, min_reports=500)
    upload(client, config, 4000)
    return config


def test_classifies_with_scores_and_standard_errors(
    client: TestClient, people: CollectionConfig
) -> None:
    response = client.post(URL, json={"points": [[150, 0], [195, 2]], "k": 50}, headers=ANALYST)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["classes"] == ["no", "yes"] and body["n_reports"] == 4000
    assert body["epsilon"] == pytest.approx(3.0) and body["config_hash"] == people.config_hash
    assert "central" not in body  # unshuffled (shuffler/test_central_of_mining.py: shuffled)
    low, high = body["predictions"]
    assert (low["predicted"], high["predicted"]) == ("no", "yes")
    for answer in body["predictions"]:
        assert len(answer["scores"]) == len(answer["stderr"]) == 2
        assert all(s > 0 for s in answer["stderr"])


def test_a_point_outside_the_bounds_is_clipped_like_a_device_value_and_flagged(
    client: TestClient, people: CollectionConfig
) -> None:
    """One out-of-range point no longer sinks the batch: it is answered as the boundary
    point a device with that value would have reported, and its answer says so."""
    points = [[150, 0], [400, 0], [220, 0], [-1e9, 2]]
    response = client.post(URL, json={"points": points, "k": 50}, headers=ANALYST)
    assert response.status_code == 200, response.text
    answers = response.json()["predictions"]
    assert [a["clipped"] for a in answers] == [[], ["height"], [], ["height"]]
    clipped, boundary = answers[1], answers[2]
    assert (clipped["scores"], clipped["predicted"]) == (boundary["scores"], boundary["predicted"])
    assert "np." not in response.text


@pytest.mark.parametrize(
    ("points", "k", "detail"),
    [
        ([[150]], 5, "2 coordinates"),
        ([[150, 0, 1]], 5, "2 coordinates"),
        ([[150, 0], [160]], 5, "rows of numbers"),
        ([[150, 3]], 5, "point 0: colour = 3 is not a value index"),
        ([[150, 0]], 0, "k must be a whole number from 1 to 1,000,000,000"),
        ([[150, 0]], -3, "k must be a whole number from 1 to 1,000,000,000"),
        ([[150, 0]], 10**30, "got 1,000,000,000,000,000,000,000,000,000,000"),
    ],
)
def test_bad_queries_are_problems(
    client: TestClient, people: CollectionConfig, points: list[list[float]], k: int, detail: str
) -> None:
    response = client.post(URL, json={"points": points, "k": k}, headers=ANALYST)
    assert detail in problem(response, 422, "invalid-query")


def test_nan_and_malformed_bodies_are_problems(
    client: TestClient, people: CollectionConfig
) -> None:
    headers = {**ANALYST, "Content-Type": "application/json"}
    nan = client.post(URL, content=b'{"points": [[NaN, 0]], "k": 5}', headers=headers)
    assert "NaN" in problem(nan, 422, "invalid-query")
    huge = client.post(URL, content=b'{"points": [[150, 0], [1e400, 0]]}', headers=headers)
    assert "point 1 has a coordinate that is NaN, infinite or beyond" in problem(
        huge, 422, "invalid-query"
    )
    problem(
        client.post(URL, json={"points": [[]], "k": 5}, headers=ANALYST), 422, "invalid-request"
    )
    problem(client.post(URL, json={"points": [], "k": 5}, headers=ANALYST), 422, "invalid-request")
    problem(client.post(URL, json={"points": [["a", 0]]}, headers=ANALYST), 422, "invalid-request")


def test_release_minimum_kind_and_access(client: TestClient) -> None:
    config = create(client, min_reports=5000)
    upload(client, config, 100)
    query = {"points": [[150, 0]], "k": 5}
    assert "at least 5000" in problem(
        client.post(URL, json=query, headers=ANALYST), 409, "insufficient-reports"
    )
    problem(client.post(URL, json=query), 401, "unauthenticated")
    survey = client.post("/v1/collections", json=spec_payload(), headers=ADMIN)
    assert survey.status_code == 201
    assert "not a kNN collection" in problem(
        client.post("/v1/collections/survey/knn/classify", json=query, headers=ANALYST),
        422,
        "invalid-query",
    )
    problem(
        client.post("/v1/collections/nobody/knn/classify", json=query, headers=ANALYST),
        404,
        "collection-not-found",
    )
