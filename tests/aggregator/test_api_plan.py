"""``GET /v1/plan``: the planner over HTTP, public, with 422 problem documents."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from tests.aggregator.conftest import problem

from ldp_shared.planner import plan
from ldp_shared.wire.plan import Plan


def test_plan_answers_the_pure_planner_without_a_token(client: TestClient) -> None:
    response = client.get("/v1/plan", params={"domain_size": 64, "epsilon": 2, "n": 50_000})
    assert response.status_code == 200, response.text
    answered = Plan.model_validate(response.json())
    assert answered == plan(epsilon=2.0, domain_size=64, n=50_000)
    assert answered.mechanisms[0].stderr <= answered.mechanisms[-1].stderr


def test_target_query_for_a_numeric_attribute(client: TestClient) -> None:
    params = {"lo": 0, "hi": 10, "epsilon": 1, "target_width": 0.5}
    response = client.get("/v1/plan", params=params)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["n"] is None and body["kind"] == "numeric"
    assert all(entry["interval_width"] <= 0.5 for entry in body["mechanisms"])


def test_impossible_target_is_an_infeasible_plan_problem(client: TestClient) -> None:
    params = {"lo": 0, "hi": 1, "epsilon": 1, "target_stderr": 1e-9}
    detail = problem(client.get("/v1/plan", params=params), 422, "infeasible-plan")
    assert "raise epsilon" in detail


@pytest.mark.parametrize(
    "params",
    [
        {"domain_size": 8, "epsilon": -1, "n": 10},
        {"domain_size": 8, "epsilon": "inf", "n": 10},
        {"domain_size": 8, "epsilon": 1},
        {"domain_size": 8, "epsilon": 1, "n": 10, "target_stderr": 0.1},
        {"lo": 0, "epsilon": 1, "n": 10},
    ],
)
def test_malformed_query_is_an_invalid_query_problem(
    client: TestClient, params: dict[str, object]
) -> None:
    problem(client.get("/v1/plan", params=params), 422, "invalid-query")


def test_missing_epsilon_is_a_validation_problem(client: TestClient) -> None:
    response = client.get("/v1/plan", params={"domain_size": 8, "n": 10})
    assert response.status_code == 422
    assert response.headers["content-type"].startswith("application/problem+json")


def test_open_domain_plan_states_its_collision_assumption(client: TestClient) -> None:
    response = client.get("/v1/plan", params={"epsilon": 1, "n": 1_000_000})
    assert response.status_code == 200, response.text
    body = response.json()
    assert {e["mechanism"] for e in body["mechanisms"]} == {"flh", "hcms", "pem"}
    assert body["second_moment"] == 1.0
    for entry in body["mechanisms"]:
        assert entry["second_moment"] == 1.0 and entry["parameters"]["hashes"] >= 1
        assert entry["local_delta"] == 0.0 and entry["heavy_hitter_threshold"] > 0


def test_numeric_plan_lists_bin_frequencies_after_the_means(client: TestClient) -> None:
    response = client.get("/v1/plan", params={"lo": 0, "hi": 10, "epsilon": 1, "n": 5000})
    assert response.status_code == 200, response.text
    kinds = [entry["released_as"] for entry in response.json()["mechanisms"]]
    assert kinds == sorted(kinds, key=lambda kind: kind != "mean") and "frequencies" in kinds


def test_second_moment_states_the_collision_term_at_the_query_f2(client: TestClient) -> None:
    params = {"epsilon": 2, "n": 1_000_000, "second_moment": 0.01}
    response = client.get("/v1/plan", params=params)
    assert response.status_code == 200, response.text
    answered = Plan.model_validate(response.json())
    assert answered == plan(epsilon=2.0, n=1_000_000, second_moment=0.01)
    assert answered.second_moment == 0.01
    worst = {e.mechanism: e.stderr for e in plan(epsilon=2.0, n=1_000_000).mechanisms}
    for entry in answered.mechanisms:  # the floor falls with F₂: smaller errors than at 1
        assert entry.second_moment == 0.01 and entry.stderr < worst[entry.mechanism]


@pytest.mark.parametrize("value", ["0", "-0.5", "1.5", "nan", "inf"])
def test_second_moment_outside_its_range_is_an_invalid_query(
    client: TestClient, value: str
) -> None:
    params = {"epsilon": 1, "n": 1000, "second_moment": value}
    detail = problem(client.get("/v1/plan", params=params), 422, "invalid-query")
    assert "second_moment (F₂) must be in (0, 1]" in detail


def test_second_moment_that_is_no_number_is_a_validation_problem(client: TestClient) -> None:
    params = {"epsilon": 1, "n": 1000, "second_moment": "half"}
    detail = problem(client.get("/v1/plan", params=params), 422, "invalid-request")
    assert "second_moment" in detail


def test_the_openapi_document_states_the_range_of_second_moment(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()["paths"]["/v1/plan"]["get"]["parameters"]
    schema = next(p["schema"] for p in spec if p["name"] == "second_moment")
    assert schema["exclusiveMinimum"] == 0 and schema["maximum"] == 1
    assert schema["default"] == 1.0
