"""An API query is read whole (``query_params.py``): a parameter given twice, or one the
route does not take, is 422 ``invalid-query``; the dashboard's links are left alone."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from .conftest import ADMIN, ANALYST, problem, spec_payload


@pytest.fixture
def survey(client: TestClient) -> TestClient:
    assert client.post("/v1/collections", json=spec_payload(), headers=ADMIN).status_code == 201
    return client


@pytest.mark.parametrize(
    ("query", "detail"),
    [
        ("attribute=colour&attribute=colour", "'attribute' is given 2 times; give it once"),
        ("attribute=colour&values=red&values=blue", "'values' is given 2 times"),
        ("attribute=colour&postprocess=none&k=5", "takes no query parameter 'k'"),
        ("attribute=colour&colour=red", "takes no query parameter 'colour' (it takes: "),
    ],
)
def test_a_parameter_twice_or_unknown_is_refused(
    survey: TestClient, query: str, detail: str
) -> None:
    answer = survey.get(f"/v1/collections/survey/frequencies?{query}", headers=ANALYST)
    text = problem(answer, 422, "invalid-query")
    assert detail in text, text


def test_every_parameter_a_route_takes_is_known_its_dependencies_included(
    survey: TestClient,
) -> None:
    """``from`` (the window) and ``limit`` (a page) come from dependencies."""
    answers = [
        survey.get(
            "/v1/collections/survey/frequencies?attribute=colour&from=2026-01-01", headers=ANALYST
        ),
        survey.get("/v1/collections?limit=5", headers=ANALYST),
    ]
    assert ["invalid-query" in a.text and "takes no" in a.text for a in answers] == [False, False]


def test_the_dashboard_reads_its_links_as_before(survey: TestClient) -> None:
    answer = survey.get("/ui/sign-in?next=/ui&next=/ui&whatever=1")
    assert answer.status_code == 200
