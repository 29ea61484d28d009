"""Health, readiness, problem documents for every failure, OpenAPI (metrics: test_metrics.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from ldp_aggregator.app import create_app
from ldp_aggregator.problems import HTTP_STATUS, http_status
from ldp_aggregator.settings import Settings
from ldp_shared.errors import (
    ALL_ERRORS,
    CollectionNotFoundError,
    ConfigurationError,
    CorruptStatisticsError,
    InvalidQueryError,
    InvalidRecordError,
    InvalidReportError,
    JobCancelledError,
    LDPError,
    MissingDependencyError,
    StorageFullError,
    TransportError,
)

from .conftest import spec_payload
from .test_api_collections import slug


def test_healthz(client: TestClient) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


def test_readyz(client: TestClient) -> None:
    response = client.get("/readyz")
    assert response.status_code == 200 and response.json() == {"status": "ready"}


def test_readyz_when_the_database_is_unreachable(tmp_path: Path) -> None:
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'missing-dir' / 'x.db'}", migrate_on_startup=False
    )
    with TestClient(create_app(settings)) as down:
        assert down.get("/healthz").status_code == 200
        response = down.get("/readyz")
        assert response.status_code == 503 and slug(response) == "transport"
        # any route that needs the database answers 503 as well, not a bare 500
        failing = down.get("/v1/collections/anything")
        assert failing.status_code == 503 and slug(failing) == "transport"


def test_unknown_route_and_method_are_problems(client: TestClient) -> None:
    missing = client.get("/v2/whatever")
    assert missing.status_code == 404 and slug(missing) == "not-found"
    wrong = client.delete("/v1/collections")
    assert wrong.status_code == 405
    assert wrong.headers["content-type"] == "application/problem+json"
    assert wrong.json()["type"] == "about:blank" and wrong.json()["status"] == 405
    assert "allow" in wrong.headers


def test_an_unexpected_error_is_a_500_that_leaks_nothing(client: TestClient) -> None:
    def explode() -> None:
        raise RuntimeError("secret internals: password=hunter2")

    client.app.add_api_route("/boom", explode)  # type: ignore[attr-defined]
    response = client.get("/boom")
    assert response.status_code == 500
    assert slug(response) == "error"
    assert "hunter2" not in response.text and "RuntimeError" not in response.text


def test_openapi_and_docs(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    paths = schema["paths"]
    assert {
        "/healthz",
        "/readyz",
        "/metrics",
        "/v1/collections",
        "/v1/collections/{name}",
        "/v1/collections/{name}/reports",
        "/v1/collections/{name}/frequencies",
    } <= set(paths)
    components = schema["components"]["schemas"]
    assert {"CollectionSpec", "CollectionConfig", "ReportBatch", "BatchResult"} <= set(components)
    assert {"FrequencyResult", "Problem"} <= set(components)
    assert "HTTPBearer" in schema["components"]["securitySchemes"]
    docs = client.get("/docs")
    assert docs.status_code == 200 and "swagger" in docs.text.lower()


def test_apps_share_nothing(tmp_path: Path) -> None:
    first = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'a.db'}", admin_token="one"))
    second = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'b.db'}", admin_token="two"))
    with TestClient(first) as a, TestClient(second) as b:
        created = a.post(
            "/v1/collections", json=spec_payload(), headers={"Authorization": "Bearer one"}
        )
        assert created.status_code == 201
        assert b.get("/v1/collections/survey").status_code == 404
        assert (
            b.post(
                "/v1/collections", json=spec_payload(), headers={"Authorization": "Bearer one"}
            ).status_code
            == 401
        )


def test_every_error_class_has_an_http_status() -> None:
    server_side = {
        LDPError,
        TransportError,
        StorageFullError,
        JobCancelledError,
        CorruptStatisticsError,
        MissingDependencyError,  # never answered: a package the server lacks is its fault
    }
    for error in ALL_ERRORS:
        assert error in HTTP_STATUS or error.__mro__[1] in HTTP_STATUS
        # only the server's own failures answer 5xx; every refusal of input is a 4xx
        assert (http_status(error) >= 500) == (error in server_side), error
    assert http_status(CollectionNotFoundError) == 404  # by its base class


@pytest.mark.parametrize(
    "error", [ConfigurationError, InvalidRecordError, InvalidReportError, InvalidQueryError]
)
def test_input_errors_answer_422(error: type[LDPError]) -> None:
    assert http_status(error) == 422


def test_openapi_states_every_error_as_a_problem_document(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    errors = [
        (path, method, status, set(response.get("content", {})))
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
        for status, response in operation["responses"].items()
        if status[0] in "45"
    ]
    assert errors and all(types == {"application/problem+json"} for *_, types in errors), [
        e for e in errors if e[3] != {"application/problem+json"}
    ]
