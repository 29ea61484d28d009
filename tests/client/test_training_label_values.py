"""The SDK against the real aggregator app (#24 item 9): a job whose layout does not name
both label values is refused before any request (``InvalidQueryError``, as the server would
answer), and a device record whose label is neither value is refused before a place is
asked for (``InvalidRecordError``), by the sync and the async client alike."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from tests.aggregator.conftest import ANALYST_TOKEN
from tests.aggregator.training_helpers import LAYOUT, records, spec
from tests.client import training_app

from ldp_client import AsyncLDPClient, LDPClient
from ldp_shared.errors import InvalidQueryError, InvalidRecordError
from ldp_shared.rand import seeded_rng
from ldp_shared.wire.training import TrainingSpec

app = training_app.app  # the fixture: the real app with a collection to host jobs

POSITIVE_ONLY = {key: value for key, value in LAYOUT.items() if key != "negative"}
URL = "http://aggregator"


def _bridge(app: TestClient, sent: list[str]) -> Callable[[httpx.Request], httpx.Response]:
    """A handler answering the SDK's requests with the app; ``sent`` logs each one."""

    def handle(request: httpx.Request) -> httpx.Response:
        sent.append(f"{request.method} {request.url.path}")
        answered = app.request(
            request.method, request.url.path, content=request.content, headers=request.headers
        )
        return httpx.Response(
            answered.status_code, headers=answered.headers, content=answered.content
        )

    return handle


def _client(app: TestClient, sent: list[str], token: str | None = None) -> LDPClient:
    transport = httpx.MockTransport(_bridge(app, sent))
    return LDPClient(URL, token=token, retries=0, rng=seeded_rng(4), transport=transport)


def _async_client(app: TestClient, sent: list[str]) -> AsyncLDPClient:
    handle = _bridge(app, sent)

    async def async_handle(request: httpx.Request) -> httpx.Response:
        await request.aread()
        return handle(request)

    transport = httpx.MockTransport(async_handle)
    return AsyncLDPClient(URL, retries=0, rng=seeded_rng(4), transport=transport)


@pytest.mark.parametrize("form", ["mapping", "model"])
def test_a_job_without_the_negative_value_is_refused_before_any_request(
    app: TestClient, form: str
) -> None:
    body = spec(layout=POSITIVE_ONLY)
    given = body if form == "mapping" else TrainingSpec.model_validate(body)
    sent: list[str] = []
    with _client(app, sent, ANALYST_TOKEN) as analyst:
        with pytest.raises(InvalidQueryError) as caught:
            analyst.create_training_job("train", given)
        assert sent == []
        message = str(caught.value)
        assert message.startswith("layout.negative: a new training job names both values")
        assert "positive ('yes', class 1) and negative" in message
        assert analyst.create_training_job("train", spec()).status == "running"
    assert sent == ["POST /v1/collections/train/training-jobs"]


@pytest.mark.parametrize("label", ["maybe", 1.0, True])
def test_a_record_whose_label_is_neither_value_takes_no_place(app: TestClient, label: Any) -> None:
    sent: list[str] = []
    with _client(app, sent, ANALYST_TOKEN) as analyst:
        job_id = analyst.create_training_job("train", spec()).id
    record = {**records(1)[0], "y": label}
    sent.clear()
    refused = pytest.raises(InvalidRecordError, match="is not one of the layout's values")
    with _client(app, sent) as device, refused:
        device.participate("train", job_id, record)
    # the layout was read; no place was asked for and nothing was sent
    assert sent == [f"GET /v1/collections/train/training-jobs/{job_id}/layout"]

    async def async_device() -> None:
        async with _async_client(app, sent) as client:
            with pytest.raises(InvalidRecordError, match="is not one of the layout's values"):
                await client.participate("train", job_id, record)

    asyncio.run(async_device())
    assert sent == [f"GET /v1/collections/train/training-jobs/{job_id}/layout"] * 2
    with _client(app, [], ANALYST_TOKEN) as analyst:
        job = analyst.training_job("train", job_id)
        assert job.received == 0 and job.round == 0
