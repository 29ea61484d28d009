"""Rules the server enforces that the OpenAPI document once left out are stated in it:
each request below is invalid against the document's own schema, and the app refuses it
with a 422 problem document."""

from __future__ import annotations

from typing import Any

import jsonschema_rs
import pytest
from tests.aggregator.conftest import ADMIN, ANALYST, TestClient, spec_payload
from tests.aggregator.training_helpers import spec as training_spec

from ldp_shared.wire.knn import MAX_NEIGHBOURS


def component(document: dict[str, Any], name: str) -> Any:
    """A validator of ``#/components/schemas/{name}`` (its references resolved)."""
    schema = {"$ref": f"#/components/schemas/{name}", "components": document["components"]}
    return jsonschema_rs.validator_for(schema)


def parameter(document: dict[str, Any], path: str, method: str, name: str) -> Any:
    operation = document["paths"][path][method]
    (found,) = [p for p in operation["parameters"] if p["name"] == name]
    return jsonschema_rs.validator_for(found["schema"])


@pytest.fixture
def survey(client: TestClient) -> tuple[TestClient, dict[str, Any]]:
    assert client.post("/v1/collections", json=spec_payload(), headers=ADMIN).status_code == 201
    return client, client.get("/openapi.json").json()


HISTOGRAM = {"name": "h", "mechanism": "histogram", "edges": [0, 0, 0]}
KNN = "/v1/collections/survey/knn/classify"


@pytest.mark.parametrize(
    ("schema", "path", "body"),
    [
        ("CollectionSpec", "/v1/collections", spec_payload(name="h", attributes=[HISTOGRAM])),
        (
            "TrainingSpec",
            "/v1/collections/survey/training-jobs",
            training_spec(layout={"label": "y", "positive": "yes"}),
        ),
        ("KnnQuery", KNN, {"points": [[]]}),
        ("KnnQuery", KNN, {"points": [[1.0]], "k": 10**30}),
        ("KnnQuery", KNN, {"points": [[1.0]], "k": MAX_NEIGHBOURS + 1}),
        ("ItemsetQuery", "/v1/collections/survey/itemsets", {"min_support": 0.5, "attribute": ""}),
    ],
)
def test_a_body_the_document_refuses_is_refused(
    survey: tuple[TestClient, dict[str, Any]], schema: str, path: str, body: dict[str, Any]
) -> None:
    client, document = survey
    assert not component(document, schema).is_valid(body)
    response = client.post(
        path, json=body, headers=ADMIN if schema == "CollectionSpec" else ANALYST
    )
    assert response.status_code == 422, response.text
    assert response.headers["content-type"].startswith("application/problem+json")


@pytest.mark.parametrize(
    ("method", "path", "name", "query"),
    [
        ("delete", "/v1/collections/{name}", "confirm", {"confirm": ""}),
        ("get", "/v1/collections/{name}/frequencies", "attribute", {"attribute": ""}),
        ("get", "/v1/collections/{name}/means", "attribute", {"attribute": ""}),
        ("get", "/v1/collections/{name}/quantiles", "attribute", {"attribute": ""}),
        ("get", "/v1/collections/{name}/heavy-hitters", "attribute", {"attribute": ""}),
        (
            "get",
            "/v1/collections/{name}/privacy",
            "attribute",
            {"average_support": 0.3, "attribute": ""},
        ),
    ],
)
def test_a_query_the_document_refuses_is_refused(
    survey: tuple[TestClient, dict[str, Any]],
    method: str,
    path: str,
    name: str,
    query: dict[str, Any],
) -> None:
    client, document = survey
    assert not parameter(document, path, method, name).is_valid(query[name])
    url = path.format(name="survey")
    response = client.request(method.upper(), url, params=query, headers=ADMIN)
    assert response.status_code == 422, response.text
    assert client.get("/v1/collections/survey").status_code == 200  # nothing was deleted


def test_the_rules_do_not_refuse_what_the_server_takes(
    survey: tuple[TestClient, dict[str, Any]],
) -> None:
    _, document = survey
    taken = spec_payload(name="h", attributes=[{**HISTOGRAM, "edges": [0, 1, 5]}])
    assert component(document, "CollectionSpec").is_valid(taken)
    layout = {"label": "y", "positive": "yes", "categorical": [{"name": "c", "domain": ["a", "b"]}]}
    assert component(document, "TrainingSpec").is_valid(training_spec(layout=layout))
    assert component(document, "KnnQuery").is_valid({"points": [[1.0, 2]], "k": MAX_NEIGHBOURS})
