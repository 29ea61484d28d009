"""The OpenAPI document says what the app does: schemathesis over every operation, and
every stated bound checked at its edge against the live app.

The schemathesis run is bounded: at most ``EXAMPLES`` cases per operation
(``LDPCOLLECT_SCHEMATHESIS_EXAMPLES``, default 60: about 900 cases in 15 s; 150 makes
about 2,250 in 40 s); half of the cases name the collection that exists, so that the analyses
are reached, not only their 404. Checks: no 5xx, only the statuses, media types, headers
and bodies the document declares, schema-invalid requests refused with a 4xx, and a
schema-valid request never refused by a rule the schema states (a type, bound, length or
member: the document and the validation would disagree). A schema-valid request may
still be refused for what no schema can state (an attribute the collection does not
have, ``lo`` not below ``hi``, two features of one name).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import schemathesis
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    ignored_auth,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from tests.engines import database_url

from ldp_aggregator.app import create_app
from ldp_aggregator.settings import Settings
from ldp_shared.codec import Privatizer
from ldp_shared.collection import CollectionConfig
from ldp_shared.rand import seeded_rng

from .conftest import ADMIN, ADMIN_TOKEN, ANALYST_TOKEN, COLORS, report_dicts

EXAMPLES = int(os.environ.get("LDPCOLLECT_SCHEMATHESIS_EXAMPLES", "60"))
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    negative_data_rejection,
    ignored_auth,
]
NAME = "survey"
SPEC = {
    "name": NAME,
    "epsilon": 4.0,
    "attributes": [
        {"name": "color", "domain": COLORS, "mechanism": "oue"},
        {"name": "hours", "mechanism": "duchi", "lo": 0, "hi": 99},
        {"name": "size", "mechanism": "histogram", "edges": [0, 10, 20, 40]},
        {"name": "basket", "domain": ["a", "b", "c"], "mechanism": "mask", "keep_probability": 0.8},
    ],
    "release": {"min_reports": 20},
}


def _fill(client: TestClient, n: int) -> None:
    created = client.post("/v1/collections", json=SPEC, headers=ADMIN)
    assert created.status_code == 201, created.text
    config = CollectionConfig.model_validate(created.json())
    gen = np.random.default_rng(3)
    columns = {
        "color": [COLORS[i] for i in gen.integers(0, len(COLORS), n)],
        "hours": gen.uniform(0, 99, n).tolist(),
        "size": gen.uniform(0, 40, n).tolist(),
        "basket": [[item for item in "abc" if gen.random() < 0.5] for _ in range(n)],
    }
    packed = Privatizer(config).privatize_columns(columns, rng=seeded_rng(3))
    body = {"reports": report_dicts(config, packed)}
    assert client.post(f"/v1/collections/{NAME}/reports", json=body).json()["accepted"] == n


@pytest.fixture
def app(tmp_path: Path) -> Iterator[FastAPI]:
    settings_ = Settings(
        database_url=database_url(tmp_path / "openapi.db"),
        admin_token=ADMIN_TOKEN,
        analyst_token=ANALYST_TOKEN,
        max_body_bytes=1_000_000,
    )
    the_app = create_app(settings_)
    with TestClient(the_app) as client:
        _fill(client, 60)
    yield the_app


def _naming_the_collection(case: Any, pick: bool) -> Any:
    if pick and case.path_parameters and "name" in case.path_parameters:
        case.path_parameters = {**case.path_parameters, "name": NAME}
    return case


def test_schemathesis_finds_no_server_error_and_no_misstatement(app: FastAPI) -> None:
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    failures: list[str] = []
    sent: list[str] = []
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1
        cases = st.builds(_naming_the_collection, operation.as_strategy(), st.booleans())

        @given(case=cases)
        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def run(case: Any) -> None:
            sent.append(case.operation.label)
            response = case.call(headers=ADMIN)
            case.validate_response(response, checks=CHECKS, headers=ADMIN)
            meta = case.meta
            if meta is not None and meta.generation.mode.is_positive:
                refused_by_the_schema_s_own_rules(response)

        try:
            run()
        except BaseException as error:  # every operation is tried, then all are reported
            failures.append(f"{operation.label}: {error}")
    assert operations >= 15 and len(sent) >= 10 * operations
    assert not failures, "\n\n".join(failures)


SCHEMA_RULE_MESSAGES = (
    "Input should",
    "List should",
    "String should",
    "Dictionary should",
    "Value should",
    "Field required",
    "Extra inputs",
)
"""How pydantic words a refusal by a type, bound, length or member the schema states
(a validator's own rule, which no schema can state, words its refusal itself)."""


def refused_by_the_schema_s_own_rules(response: Any) -> None:
    """Fail when a schema-valid request was refused by a rule the schema states: the
    document and the validation then disagree."""
    if response.status_code != 422:
        return
    problem = response.json()
    if not str(problem.get("type", "")).endswith("/invalid-request"):
        return
    for error in problem.get("errors", []):
        assert not str(error["msg"]).startswith(SCHEMA_RULE_MESSAGES), (
            f"a schema-valid request was refused by a rule the schema states: {response.text}"
        )


def _edges(bounds: dict[str, float]) -> Iterator[tuple[float, bool]]:
    """(value, whether the app must take it) just inside and just outside each bound."""
    for key, bound in bounds.items():
        below, above = math.nextafter(bound, -math.inf), math.nextafter(bound, math.inf)
        if key == "minimum":
            yield from ((bound, True), (below, False))
        elif key == "exclusiveMinimum":
            yield from ((above, True), (bound, False))
        elif key == "maximum":
            yield from ((bound, True), (above, False))
        elif key == "exclusiveMaximum":
            yield from ((below, True), (bound, False))


BOUND_KEYS = ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum")

BASE_REQUESTS: dict[tuple[str, str], dict[str, Any]] = {
    ("get", "/v1/collections/{name}/frequencies"): {"params": {"attribute": "color"}},
    ("get", "/v1/collections/{name}/means"): {"params": {"attribute": "hours"}},
    ("get", "/v1/collections/{name}/quantiles"): {"params": {"attribute": "size"}},
    ("get", "/v1/collections/{name}/privacy"): {"params": {"average_support": 0.3}},
    ("post", "/v1/collections/{name}/itemsets"): {"json": {"min_support": 0.3}},
    ("get", "/v1/collections"): {},
    ("get", "/v1/collections/{name}/itemsets"): {},
    ("get", "/v1/collections/{name}/training-jobs"): {},
    ("get", "/v1/collections/{name}/models/naive-bayes"): {},
}
"""A request each operation answers with 2xx; one number at a time is moved to its edges."""


UNBOUNDED_PROBES = (-1e9, 0, 1e9)
"""What a number the document states no bound for must be taken at."""


def _is_number(schema: dict[str, Any]) -> bool:
    kinds = [schema.get("type")] + [branch.get("type") for branch in schema.get("anyOf", [])]
    return "number" in kinds or "integer" in kinds


def _numbers(document: dict[str, Any], method: str, path: str) -> dict[str, dict[str, Any]]:
    """Every number the operation takes (``params.x`` or ``json.x``), with its bounds."""
    operation = document["paths"][path][method]
    members = {
        f"params.{parameter['name']}": parameter["schema"]
        for parameter in operation.get("parameters", [])
    }
    body = operation.get("requestBody", {}).get("content", {}).get("application/json")
    if body is not None:
        ref = body["schema"]["$ref"].rsplit("/", 1)[-1]
        properties = document["components"]["schemas"][ref]["properties"]
        members.update({f"json.{member}": schema for member, schema in properties.items()})
    return {
        where: {k: v for k, v in schema.items() if k in BOUND_KEYS}
        for where, schema in members.items()
        if _is_number(schema)
    }


def test_every_stated_bound_is_the_one_the_app_checks(app: FastAPI) -> None:
    with TestClient(app) as client:
        document = client.get("/openapi.json").json()
        tried = 0
        for (method, path), base in BASE_REQUESTS.items():
            numbers = _numbers(document, method, path)
            assert any(numbers.values()), f"{method} {path} states no bound"
            for where, bounds in numbers.items():
                part, member = where.split(".", 1)
                probes = _edges(bounds) if bounds else ((v, True) for v in UNBOUNDED_PROBES)
                for value, taken in probes:
                    request = {key: dict(part_of) for key, part_of in base.items()}
                    request.setdefault(part, {})[member] = value
                    response = client.request(
                        method, path.format(name=NAME), headers=ADMIN, **request
                    )
                    accepted = response.status_code < 300
                    assert accepted == taken, (method, path, member, value, response.text)
                    if not taken:
                        assert response.status_code == 422
                    tried += 1
        assert tried >= 40
