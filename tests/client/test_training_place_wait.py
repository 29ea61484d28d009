"""A device waits for a place at a round boundary (#24 item 9): ``participate`` asks
again after each ``Retry-After`` until its ``place_deadline``, then raises
``RateLimitedError`` with nothing spent. The SDK speaks to the real aggregator app
through an ``httpx.MockTransport`` bridge."""

from __future__ import annotations

import types

import httpx
import pytest
from fastapi.testclient import TestClient
from tests.aggregator.conftest import ANALYST
from tests.aggregator.training_helpers import answer, ask, jobs_path, records, spec
from tests.client import training_app

from ldp_aggregator import training_place_wait
from ldp_client import LDPClient, training_methods
from ldp_shared.errors import RateLimitedError
from ldp_shared.rand import seeded_rng
from ldp_shared.wire.training import Participation


@pytest.fixture(autouse=True)
def _short_place_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    """A request for a place at a full round waits 0.2 s here, not 5 s, before its 429."""
    monkeypatch.setattr(training_place_wait, "PLACE_WAIT_SECONDS", 0.2)


app = training_app.app  # the fixture: the real app with a collection to host jobs


def sdk(app: TestClient, asks: list[int]) -> LDPClient:
    """An SDK client (no retries of its own) whose requests the app answers; ``asks``
    collects the status of every ``POST .../participations``."""

    def handle(request: httpx.Request) -> httpx.Response:
        answered = app.request(
            request.method, request.url.path, content=request.content, headers=request.headers
        )
        if request.method == "POST" and request.url.path.endswith("/participations"):
            asks.append(answered.status_code)
        return httpx.Response(
            answered.status_code, headers=answered.headers, content=answered.content
        )

    return LDPClient("http://aggregator", retries=0, transport=httpx.MockTransport(handle))


def full_round(app: TestClient) -> tuple[str, list[Participation]]:
    """A job whose 20 places of round 0 are all held (for 600 s)."""
    response = app.post(jobs_path(), json=spec(participation_seconds=600), headers=ANALYST)
    job_id = str(response.json()["id"])
    return job_id, [ask(app, job_id) for _ in range(20)]


def test_a_device_waits_out_a_round_boundary(
    app: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_id, held = full_round(app)
    rng = seeded_rng(3)
    slept: list[float] = []

    def boundary_passes(seconds: float) -> None:
        """While the device waits, the holders answer and round 0 closes."""
        slept.append(seconds)
        if len(slept) == 2:
            for participation, record in zip(held, records(20, seed=4), strict=True):
                assert answer(app, participation, record, rng).status_code == 200

    monkeypatch.setattr("ldp_client.training_methods.time.sleep", boundary_passes)
    asks: list[int] = []
    with sdk(app, asks) as device:
        result = device.participate("train", job_id, records(1, seed=9)[0])
    assert result.round == 1  # a place of the round that opened while it waited
    assert asks == [429, 429, 201] and slept == [1.0, 1.0]  # the server's Retry-After


def test_past_its_deadline_a_device_raises_rate_limited(
    app: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_id, _ = full_round(app)
    # the SDK's clock, faked: each wait moves it on at once (a device that ignored its
    # deadline would wait for ever: past ten waits the fake sleep fails the test)
    now = [0.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        assert len(slept) <= 10, "the device kept waiting past its deadline"
        now[0] += seconds

    clock = types.SimpleNamespace(monotonic=lambda: now[0], sleep=sleep)
    monkeypatch.setattr(training_methods, "time", clock)
    asks: list[int] = []
    with sdk(app, asks) as device, pytest.raises(RateLimitedError) as info:
        device.participate("train", job_id, records(1, seed=9)[0], place_deadline=2.5)
    assert "no place in training job" in str(info.value) and "within 2.5 s" in str(info.value)
    # it asked at 0, 1 and 2 s (Retry-After: 1) and stopped: a third wait ends past 2.5 s
    assert asks == [429, 429, 429] and slept == [1.0, 1.0] and now == [2.0]
    # nothing was spent: the round still has exactly its 20 held places, no report
    job = app.get(f"{jobs_path()}/{job_id}", headers=ANALYST).json()
    assert job["round"] == 0 and job["curve"] == []
