"""The gaussian mechanism over the API: its (ε, δ) in the config and the released mean,
and bad specs refused with one problem document, nothing stored."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from ldp_shared.collection import CollectionConfig

from .conftest import ADMIN, ANALYST
from .test_api_collections import names, slug
from .test_api_means import fill

URL = "/v1/collections/people/means"
GAUSSIAN = {"mechanism": "gaussian", "lo": 17, "hi": 90, "delta": 1e-5}
SPEC: dict[str, Any] = {
    "name": "people",
    "epsilon": 3.0,
    "release": {"min_reports": 500},
    "attributes": [
        {"name": "age", **GAUSSIAN, "weight": 4.0},  # ε = 2, analytic
        {"name": "hours", **GAUSSIAN, "calibration": "classical", "lo": 1, "hi": 99},  # ε = 0.5
        {"name": "sex", "domain": ["f", "m"], "mechanism": "grr"},  # ε = 0.5
    ],
}


def test_the_mean_states_its_delta(client: TestClient) -> None:
    response = client.post("/v1/collections", json=SPEC, headers=ADMIN)
    assert response.status_code == 201, response.text
    config = CollectionConfig.model_validate(response.json())
    published = {a.name: a.model_dump() for a in config.attributes}
    assert published["age"]["calibration"] == "analytic"
    assert published["hours"]["calibration"] == "classical"
    assert 0 < published["hours"]["delta"] < published["age"]["delta"] <= 1e-5
    assert "delta" not in published["sex"]
    assert config.delta == pytest.approx(published["age"]["delta"] + published["hours"]["delta"])
    columns = fill(client, config, 20_000)  # age, hours and sex, as the duchi tests'
    for name, bounds in {"age": (17, 90), "hours": (1, 99)}.items():
        body = client.get(URL, params={"attribute": name}, headers=ANALYST).json()
        truth = float(np.clip(columns[name], *bounds).mean())
        assert abs(body["mean"] - truth) < 4 * body["stderr"], (body, truth)
        assert body["delta"] == published[name]["delta"]
        assert body["epsilon"] == published[name]["epsilon"]
        assert "variance" not in body  # K < 16 at these ε
    frequencies = client.get(
        "/v1/collections/people/frequencies", params={"attribute": "sex"}, headers=ANALYST
    ).json()
    assert "delta" not in frequencies


def _with(**change: Any) -> dict[str, Any]:
    attributes = [{**SPEC["attributes"][0], **change}, SPEC["attributes"][2]]
    return {**SPEC, "attributes": attributes}


BAD: dict[str, tuple[dict[str, Any], str]] = {
    "delta zero": (_with(delta=0), "delta must be in the open interval (0, 1)"),
    "delta one": (_with(delta=1), "delta must be in the open interval (0, 1)"),
    "delta negative": (_with(delta=-1e-5), "delta must be in the open interval (0, 1)"),
    "delta above one": (_with(delta=1.5), "delta must be in the open interval (0, 1)"),
    "delta a string": (_with(delta="small"), "valid number"),
    "delta missing": (
        {**SPEC, "attributes": [{k: v for k, v in SPEC["attributes"][0].items() if k != "delta"}]},
        "delta",
    ),
    "calibration unknown": (_with(calibration="exact"), "'analytic' or 'classical'"),
    "classical at epsilon 2": (_with(calibration="classical"), "only for ε < 1"),
    "lo = hi": (_with(lo=5, hi=5), "lo must be below hi"),
    "epsilon too small": (
        {**_with(), "epsilon": 0.02, "attributes": [_with()["attributes"][0]]},
        "more than 2048 cells",
    ),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_gaussian_specs_are_one_problem_and_store_nothing(
    client: TestClient, case: str
) -> None:
    payload, message = BAD[case]
    response = client.post("/v1/collections", json=payload, headers=ADMIN)
    assert response.status_code == 422, response.text
    assert slug(response) == "invalid-configuration"
    body = response.json()
    assert message in body["detail"], body
    assert len(body.get("errors", [None])) == 1
    assert names(client) == []


@pytest.mark.parametrize("raw", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_a_non_finite_delta_in_raw_json(client: TestClient, raw: str) -> None:
    text = json.dumps(_with(delta=123.0)).replace("123.0", raw)
    response = client.post(
        "/v1/collections", content=text, headers={**ADMIN, "content-type": "application/json"}
    )
    assert response.status_code == 422 and slug(response) == "invalid-configuration"
    assert "delta" in response.json()["detail"]
    assert names(client) == []
