"""A 405 (and an ``OPTIONS``, which no route answers) states in ``Allow`` every method
the path is served with, not only those of the first route that matched it."""

from __future__ import annotations

import pytest
from tests.aggregator.conftest import TestClient, problem


@pytest.mark.parametrize(
    ("path", "allowed"),
    [
        ("/v1/collections", "GET, POST"),
        ("/v1/collections/survey", "DELETE, GET"),
        ("/v1/collections/survey/models/naive-bayes", "GET, POST"),
        ("/v1/collections/survey/retention", "PUT"),
        ("/v1/collections/survey/reports", "POST"),
        ("/healthz", "GET"),
        ("/docs", "GET"),
    ],
)
@pytest.mark.parametrize("method", ["OPTIONS", "PATCH"])
def test_allow_lists_every_method_of_the_path(
    client: TestClient, path: str, allowed: str, method: str
) -> None:
    response = client.request(method, path)
    assert response.status_code == 405
    assert response.headers["allow"] == allowed
    assert response.headers["content-type"].startswith("application/problem+json")


def test_an_unknown_path_is_still_a_404(client: TestClient) -> None:
    problem(client.request("OPTIONS", "/v1/nothing-here"), 404, "not-found")
