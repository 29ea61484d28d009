"""The SDK against the real aggregator app (#24 item 9): a job whose layout does not name
both label values is refused before any request (``InvalidQueryError``, as the server would
answer), and a device record whose label is neither value is refused
(``InvalidRecordError``) with its place given back at once, by the sync and the async
client alike."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from tests.aggregator.conftest import ANALYST, ANALYST_TOKEN
from tests.aggregator.training_helpers import LAYOUT, ask, records, spec
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
def test_a_record_whose_label_is_neither_value_gives_its_place_back(
    app: TestClient, label: Any
) -> None:
    sent: list[str] = []
    with _client(app, sent, ANALYST_TOKEN) as analyst:
        job_id = analyst.create_training_job("train", spec(participation_seconds=600)).id
    held = [ask(app, job_id) for _ in range(19)]  # one place of round 0 is left
    record = {**records(1)[0], "y": label}
    places = f"POST /v1/collections/train/training-jobs/{job_id}/participations"
    sent.clear()
    refused = pytest.raises(InvalidRecordError, match="is not one of the layout's values")
    with _client(app, sent) as device, refused:
        device.participate("train", job_id, record, place_deadline=0)
    # it took the last place (the layout came with it), refused the record, gave the place
    # back, and sent nothing: the layout was not read separately
    assert sent[0] == places and len(sent) == 2
    assert sent[1].startswith(f"DELETE {places[len('POST ') :]}/")

    async def async_device() -> None:
        async with _async_client(app, sent) as client:
            with pytest.raises(InvalidRecordError, match="is not one of the layout's values"):
                await client.participate("train", job_id, record, place_deadline=0)

    asyncio.run(async_device())
    assert [line.split(" ", 1)[0] for line in sent] == ["POST", "DELETE"] * 2
    # the place is free again at once: a device gets it without waiting for a hold to end
    last = ask(app, job_id)
    assert last.round == 0 and len({p.token for p in [*held, last]}) == 20
    with _client(app, [], ANALYST_TOKEN) as analyst:
        job = analyst.training_job("train", job_id)
        assert job.received == 0 and job.round == 0


def test_a_give_back_that_fails_does_not_hide_the_refusal(app: TestClient) -> None:
    with _client(app, [], ANALYST_TOKEN) as analyst:
        job_id = analyst.create_training_job("train", spec()).id
    bridge = _bridge(app, [])

    def handle(request: httpx.Request) -> httpx.Response:
        if request.method == "DELETE":  # the give-back fails: the place lapses instead
            return httpx.Response(503, json={"title": "unavailable"})
        return bridge(request)

    transport = httpx.MockTransport(handle)
    with (
        LDPClient(URL, retries=0, transport=transport) as device,
        pytest.raises(InvalidRecordError, match="is not one of the layout's values"),
    ):
        device.participate("train", job_id, {**records(1)[0], "y": "maybe"})
    job = app.get(f"/v1/collections/train/training-jobs/{job_id}", headers=ANALYST)
    assert job.json()["received"] == 0
