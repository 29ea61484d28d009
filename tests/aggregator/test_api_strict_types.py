"""Request bodies are validated strictly (``ldp_shared.request_model``): a JSON value of
another type is refused with a 422 problem document, never coerced (``{"days": true}``
once set one day's retention), while a JSON integer is still a number and an integral
float a whole number (as the OpenAPI document's ``integer`` says)."""

from __future__ import annotations

import importlib
import pkgutil
import types
import typing
from typing import Any

import pytest
from fastapi.routing import APIRoute
from pydantic import BaseModel
from tests.aggregator.conftest import ADMIN, ANALYST, TestClient, spec_payload
from tests.aggregator.training_helpers import spec as training_spec

from ldp_aggregator import routes
from ldp_shared.mechanisms.base import AttributeSpec, registered_classes
from ldp_shared.request_model import RequestModel

SURVEY = "/v1/collections/survey"


@pytest.fixture
def survey(client: TestClient) -> TestClient:
    response = client.post("/v1/collections", json=spec_payload(), headers=ADMIN)
    assert response.status_code == 201, response.text
    return client


@pytest.mark.parametrize(
    ("method", "path", "body", "member"),
    [
        ("put", f"{SURVEY}/retention", {"days": True}, "days"),
        ("put", f"{SURVEY}/retention", {"days": "7"}, "days"),
        ("put", f"{SURVEY}/retention", {"days": 7.5}, "days"),
        ("post", f"{SURVEY}/models/naive-bayes", {"alpha": False}, "alpha"),
        ("post", f"{SURVEY}/models/naive-bayes", {"alpha": "1"}, "alpha"),
        ("post", f"{SURVEY}/itemsets", {"min_support": 0.3, "wait_seconds": False}, "wait_seconds"),
        ("post", f"{SURVEY}/itemsets", {"min_support": "0.3"}, "min_support"),
        ("post", f"{SURVEY}/training-jobs", training_spec(epsilon="2"), "epsilon"),
        ("post", f"{SURVEY}/training-jobs", training_spec(rounds=3.5), "rounds"),
        ("post", f"{SURVEY}/knn/classify", {"points": [["1"]]}, "points"),
        ("post", f"{SURVEY}/knn/classify", {"points": [[1.0]], "k": True}, "k"),
    ],
)
def test_a_value_of_another_type_is_refused_not_coerced(
    survey: TestClient, method: str, path: str, body: dict[str, Any], member: str
) -> None:
    headers = ADMIN if path.endswith("retention") else ANALYST
    response = survey.request(method, path, json=body, headers=headers)
    assert response.status_code == 422, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    problem = response.json()
    assert problem["type"].endswith("/invalid-request")
    assert any(member in error["loc"] for error in problem["errors"]), problem
    status = survey.get(f"{SURVEY}/status", headers=ANALYST).json()
    assert status["retention_days"] is None  # nothing was set


def test_a_spec_with_a_bound_as_text_is_refused_and_integers_are_numbers(
    client: TestClient,
) -> None:
    numeric = {"name": "age", "mechanism": "duchi", "lo": "0", "hi": 90}
    refused = client.post(
        "/v1/collections",
        json={"name": "n", "epsilon": 2, "attributes": [numeric]},
        headers=ADMIN,
    )
    assert refused.status_code == 422 and refused.json()["type"].endswith("/invalid-configuration")
    assert "lo" in refused.json()["errors"][0]["loc"]
    for flag in (True, "2"):
        spec = {"name": "n", "epsilon": flag, "attributes": [{**numeric, "lo": 0}]}
        assert client.post("/v1/collections", json=spec, headers=ADMIN).status_code == 422
    taken = {"name": "n", "epsilon": 2, "attributes": [{**numeric, "lo": 0}]}  # ints: numbers
    created = client.post("/v1/collections", json=taken, headers=ADMIN)
    assert created.status_code == 201, created.text
    assert created.json()["spec"]["epsilon"] == 2.0


@pytest.mark.parametrize("days", [7, 7.0])  # JSON Schema's integer takes 7.0: so do we
def test_a_retention_of_whole_days_is_still_taken(survey: TestClient, days: float) -> None:
    response = survey.put(f"{SURVEY}/retention", json={"days": days}, headers=ADMIN)
    assert response.status_code == 200 and response.json()["retention_days"] == 7


def _models(annotation: Any, found: set[type[BaseModel]]) -> None:
    """Every pydantic model an annotation names, with the models its fields name."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if annotation in found:
            return
        found.add(annotation)
        classes = registered_classes() if annotation is AttributeSpec else []
        for model in classes:
            _models(model, found)
        for field in annotation.model_fields.values():
            _models(field.annotation, found)
        return
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is not None:
        for argument in typing.get_args(annotation):
            _models(argument, found)


def request_models() -> set[type[BaseModel]]:
    """The models of every JSON request body of the API's routes, nested ones included."""
    found: set[type[BaseModel]] = set()
    for module_info in pkgutil.iter_modules(routes.__path__):
        module = importlib.import_module(f"{routes.__name__}.{module_info.name}")
        for route in getattr(getattr(module, "router", None), "routes", []):
            if isinstance(route, APIRoute):
                for parameter in route.dependant.body_params:
                    _models(parameter.field_info.annotation, found)
    return found


def test_every_request_model_is_strict() -> None:
    models = request_models()
    names = {model.__name__ for model in models}
    assert {"CollectionSpec", "Retention", "TrainingSpec", "FeatureLayout", "KnnQuery"} <= names
    assert {"ItemsetQuery", "NaiveBayesTrainRequest", "ReportBatch", "PiecewiseSpec"} <= names
    lax = sorted(m.__name__ for m in models if m.model_config.get("strict") is not True)
    assert lax == [], f"request models that coerce types: {lax}"
    other = sorted(m.__name__ for m in models if not issubclass(m, RequestModel))
    assert other == [], f"request models not made from RequestModel: {other}"
