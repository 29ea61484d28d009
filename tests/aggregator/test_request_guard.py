"""The one middleware of every request: metrics, body limit and last-resort 500 together."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from starlette.types import Message, Receive, Scope, Send
from tests.aggregator.test_limits import Recorder, run

from ldp_aggregator.app import create_app
from ldp_aggregator.metrics import Metrics
from ldp_aggregator.request_guard import RequestGuardMiddleware
from ldp_aggregator.routes.device_shortcut import DeviceShortcut
from ldp_aggregator.settings import Settings


def requests_counted(metrics: Metrics, route: str, status: int) -> float:
    value = metrics.registry.get_sample_value(
        "ldpcollect_http_requests_total",
        {"method": "POST", "route": route, "status": str(status)},
    )
    return value or 0.0


class Failing:
    """An ASGI app that raises before (or, ``after_start``, after) it answers."""

    def __init__(self, after_start: bool = False) -> None:
        self.after_start = after_start

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.after_start:
            await send({"type": "http.response.start", "status": 200, "headers": []})
        raise RuntimeError("a bug")


def test_a_body_under_the_limit_reaches_the_app_whole_and_is_counted() -> None:
    metrics, inner = Metrics(), Recorder()
    sent = run(RequestGuardMiddleware(inner, metrics, 10), [b"abc", b"def", b"ghij"])
    assert inner.bodies == [b"abcdefghij"]
    assert sent[0]["status"] == 204
    assert requests_counted(metrics, "unmatched", 204) == 1


@pytest.mark.parametrize(
    ("chunks", "headers"),
    [([b"abcdef", b"ghijk"], []), ([b"x"], [(b"content-length", b"11")]), ([b"x" * 11], [])],
)
def test_over_the_limit_413_is_answered_counted_and_nothing_reaches_the_app(
    chunks: list[bytes], headers: list[tuple[bytes, bytes]]
) -> None:
    metrics, inner = Metrics(), Recorder()
    sent = run(RequestGuardMiddleware(inner, metrics, 10), chunks, headers)
    assert inner.bodies == []
    assert sent[0]["status"] == 413
    problem = json.loads(sent[1]["body"])
    assert problem["type"].endswith("/payload-too-large")
    assert requests_counted(metrics, "unmatched", 413) == 1


def test_an_unhandled_error_is_a_500_problem_counted_not_reraised() -> None:
    metrics = Metrics()
    sent = run(RequestGuardMiddleware(Failing(), metrics, 10), [b"{}"])
    assert sent[0]["status"] == 500
    headers = dict(sent[0]["headers"])
    assert headers[b"content-type"] == b"application/problem+json"
    assert "logged as" in json.loads(sent[1]["body"])["detail"]
    assert requests_counted(metrics, "unmatched", 500) == 1


def test_an_error_after_the_answer_started_is_reraised_and_counted() -> None:
    metrics = Metrics()
    with pytest.raises(RuntimeError, match="a bug"):
        run(RequestGuardMiddleware(Failing(after_start=True), metrics, 10), [b"{}"])
    assert requests_counted(metrics, "unmatched", 200) == 1


def test_a_client_gone_before_its_body_ended_reaches_nothing() -> None:
    metrics, inner = Metrics(), Recorder()
    sent: list[Message] = []
    messages: list[Message] = [
        {"type": "http.request", "body": b"ab", "more_body": True},
        {"type": "http.disconnect"},
    ]

    async def receive() -> Message:
        return messages.pop(0)

    async def send(message: Message) -> None:
        sent.append(message)

    scope: dict[str, Any] = {"type": "http", "method": "POST", "path": "/", "headers": []}
    asyncio.run(RequestGuardMiddleware(inner, metrics, 10)(scope, receive, send))
    assert inner.bodies == [] and sent == []


def test_the_app_has_the_guard_around_the_upload_shortcut_and_no_separate_500_layer(
    settings: Settings,
) -> None:
    layers = [m.cls for m in create_app(settings).user_middleware]
    assert layers == [RequestGuardMiddleware, DeviceShortcut]


def test_a_limit_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        RequestGuardMiddleware(Recorder(), Metrics(), 0)


@pytest.mark.parametrize("encoded", ["%FF%FE", "%ED%A0%80", "a%C3", "ok=1&values=%E6%97"])
def test_a_query_not_utf8_once_decoded_is_a_422_before_any_route(
    client: TestClient, encoded: str
) -> None:
    """Starlette would read it with replacement characters: ``values=%FF`` estimated
    "\\ufffd", a string the analyst never named."""
    response = client.get(f"/v1/collections/nowhere/frequencies?attribute=w&values={encoded}")
    assert response.status_code == 422
    assert response.json()["type"].endswith("/invalid-query")
    assert "UTF-8" in response.json()["detail"]


def test_a_query_of_utf8_percent_encoded_passes_the_guard(client: TestClient) -> None:
    response = client.get(
        "/v1/collections/nowhere/frequencies?attribute=w&values=caf%C3%A9,%E6%97%A5"
    )
    assert response.status_code == 401  # the route answered: it asks for a token
