"""A JSON route's body sent as another media type: 415 with the fix, not a 422 about shape."""

from __future__ import annotations

import json

import pytest
from tests.aggregator.conftest import ADMIN, problem, spec_payload

from ldp_aggregator.media_types import is_json_media_type
from ldp_aggregator.problems import PROBLEM_MEDIA_TYPE

FORM = "application/x-www-form-urlencoded"


@pytest.mark.parametrize("content_type", [FORM, "text/plain", "multipart/form-data; b=x"])
def test_a_spec_sent_as_another_media_type_is_415(client, content_type) -> None:
    body = json.dumps(spec_payload()).encode()
    headers = {**ADMIN, "Content-Type": content_type}
    response = client.post("/v1/collections", content=body, headers=headers)
    detail = problem(response, 415, "unsupported-media-type")
    assert f"Content-Type: {content_type}" in detail
    assert "send it with Content-Type: application/json" in detail
    assert client.get("/v1/collections", headers=ADMIN).json()["collections"] == []


def test_reports_sent_as_a_form_are_415_and_without_a_type_too(client) -> None:
    client.post("/v1/collections", json=spec_payload(), headers=ADMIN)
    body = json.dumps({"reports": []}).encode()
    path = "/v1/collections/survey/reports"
    as_form = client.post(path, content=body, headers={"Content-Type": FORM})
    assert "send it with Content-Type: application/json" in problem(
        as_form, 415, "unsupported-media-type"
    )
    untyped = client.post(path, content=body, headers={"Content-Type": ""})
    assert "no Content-Type" in problem(untyped, 415, "unsupported-media-type")


def test_json_types_an_empty_body_and_bodiless_routes_are_left_alone(client) -> None:
    body = json.dumps(spec_payload()).encode()
    typed = {**ADMIN, "Content-Type": "application/json; charset=utf-8"}
    assert client.post("/v1/collections", content=body, headers=typed).status_code == 201
    empty = client.post("/v1/collections", headers={**ADMIN, "Content-Type": FORM})
    assert "needs a JSON body" in problem(empty, 400, "malformed-request")
    closed = client.post("/v1/collections/survey/close", headers={**ADMIN, "Content-Type": FORM})
    assert closed.status_code == 200


def test_the_openapi_document_states_415_on_json_body_routes_only(client) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    create = paths["/v1/collections"]["post"]["responses"]["415"]
    assert list(create["content"]) == [PROBLEM_MEDIA_TYPE]
    assert "415" in paths["/v1/collections/{name}/reports"]["post"]["responses"]
    assert "415" not in paths["/v1/collections/{name}/close"]["post"]["responses"]
    assert "415" not in paths["/v1/collections"]["get"]["responses"]


@pytest.mark.parametrize(
    ("content_type", "json_"),
    [
        ("application/json", True),
        ("Application/JSON; charset=utf-8", True),
        ("application/problem+json", True),
        ("text/json", False),
        (FORM, False),
        (None, False),
    ],
)
def test_which_media_types_are_json(content_type, json_) -> None:
    assert is_json_media_type(content_type) is json_
