"""The device shortcut (``routes/device_shortcut.py``): it answers plainly valid uploads
itself, every other request reaches the route, and every request is answered as the app
without the shortcut answers it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any, cast

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from starlette.types import ASGIApp, Receive, Scope, Send
from tests.engines import database_url

from ldp_aggregator.app import create_app
from ldp_aggregator.routes.device_shortcut import DeviceShortcut
from ldp_aggregator.settings import Settings
from ldp_shared.collection import CollectionConfig, build_config
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import CollectionSpec

from .conftest import (
    ADMIN,
    ANALYST,
    packed_reports,
    report_dicts,
    snapshot,
    spec_payload,
    state_of,
)
from .training_helpers import answer, ask, jobs_path, records
from .training_helpers import spec as training_spec

PATH = "/v1/collections/{}/reports"
JSON = {"content-type": "application/json"}


class PassedOn:
    """Wraps the shortcut's inner app and counts the requests the shortcut passed on."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.requests = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.requests += 1
        await self.app(scope, receive, send)


def _shortcut_of(app: FastAPI) -> DeviceShortcut:
    layer: Any = app.middleware_stack
    while not isinstance(layer, DeviceShortcut):
        layer = layer.app
    return layer


def _started(stack: ExitStack, settings: Settings, shortcut: bool) -> TestClient:
    app = create_app(settings)
    if not shortcut:
        app.user_middleware = [
            m for m in app.user_middleware if m.cls is not cast(Any, DeviceShortcut)
        ]
    client = stack.enter_context(TestClient(app, raise_server_exceptions=False))
    for name, changes in (
        ("survey", {}),
        ("shut", {}),
        ("sealed", {"shuffled": True}),
        ("train", {}),
    ):
        created = client.post("/v1/collections", json=spec_payload(name, **changes), headers=ADMIN)
        assert created.status_code == 201, created.text
    assert client.post("/v1/collections/shut/close", headers=ADMIN).status_code == 200
    return client


@pytest.fixture
def pair(settings: Settings, tmp_path: Any) -> Iterator[tuple[TestClient, TestClient]]:
    """The app with its shortcut and without, each on a database of its own."""
    without = replace_database(settings, tmp_path / "without.db")
    with ExitStack() as stack:
        yield _started(stack, settings, True), _started(stack, without, False)


def replace_database(settings: Settings, path: Any) -> Settings:
    return settings.model_copy(update={"database_url": database_url(path)})


def _config(name: str = "survey") -> CollectionConfig:
    return build_config(CollectionSpec.model_validate(spec_payload(name)))


def _answer(response: Any) -> tuple[int, str, Any, str | None]:
    body = response.json() if response.content else None
    return (
        response.status_code,
        response.headers.get("content-type", ""),
        body,
        response.headers.get("retry-after"),
    )


def _cases() -> list[tuple[str, str, bytes, dict[str, str]]]:
    config = _config()
    one = report_dicts(config, packed_reports(config, 1, seed=1))
    some = report_dicts(config, packed_reports(config, 5, seed=2))
    bad_hash = [{**one[0], "config_hash": "0" * 64}]
    bad_bits = [{**one[0], "bits": "!!!"}]
    extra = [{**one[0], "extra": "x"}]
    plain = json.dumps({"reports": one}).encode()
    return [
        ("one report", PATH.format("survey"), plain, JSON),
        ("the same again", PATH.format("survey"), plain, JSON),
        ("five", PATH.format("survey"), json.dumps({"reports": some}).encode(), JSON),
        (
            "charset",
            PATH.format("survey"),
            plain,
            {"content-type": "application/json; charset=utf-8"},
        ),
        ("+json", PATH.format("survey"), plain, {"content-type": "application/vnd.x+json"}),
        ("other config", PATH.format("survey"), json.dumps({"reports": bad_hash}).encode(), JSON),
        ("not base64", PATH.format("survey"), json.dumps({"reports": bad_bits}).encode(), JSON),
        ("extra member", PATH.format("survey"), json.dumps({"reports": extra}).encode(), JSON),
        ("no reports", PATH.format("survey"), b'{"reports": []}', JSON),
        ("not JSON", PATH.format("survey"), b'{"reports": [', JSON),
        ("not UTF-8", PATH.format("survey"), b'{"reports": "\xff"}', JSON),
        ("too deep", PATH.format("survey"), b"[" * 100_000 + b"]" * 100_000, JSON),
        ("empty", PATH.format("survey"), b"", JSON),
        (
            "form",
            PATH.format("survey"),
            plain,
            {"content-type": "application/x-www-form-urlencoded"},
        ),
        ("no type", PATH.format("survey"), plain, {}),
        ("query", PATH.format("survey") + "?x=1", plain, JSON),
        ("slash", PATH.format("survey") + "/", plain, JSON),
        ("unknown", PATH.format("nobody"), plain, JSON),
        ("closed", PATH.format("shut"), plain, JSON),
        ("shuffled", PATH.format("sealed"), plain, JSON),
        ("encoded name", "/v1/collections/sur%2Fvey/reports", plain, JSON),
    ]


def _training_cases() -> list[tuple[str, str, str, bytes, dict[str, str]]]:
    """Device requests to jobs nobody created (a job's id is random: the answers to a
    real job are compared in the test below)."""
    jobs = "/v1/collections/{}/training-jobs/{}/participations"
    no_job = jobs.format("train", "B" * 22)
    report = json.dumps({"report": "AAA="}).encode()
    return [
        ("place, no job", "POST", no_job, b"", {}),
        ("place, no collection", "POST", jobs.format("nobody", "B" * 22), b"", {}),
        ("place, no job can have it", "POST", jobs.format("train", "abc"), b"", {}),
        ("place, query", "POST", no_job + "?x=1", b"", {}),
        ("place, closed", "POST", jobs.format("shut", "B" * 22), b"", {}),
        ("report, no job", "PUT", f"{no_job}/{'A' * 43}", report, JSON),
        ("report, short token", "PUT", f"{no_job}/{'A' * 42}", report, JSON),
        ("report, token and newline", "PUT", f"{no_job}/{'A' * 43}%0A", report, JSON),
        ("report, not JSON", "PUT", f"{no_job}/{'A' * 43}", b"{", JSON),
        ("report, NaN", "PUT", f"{no_job}/{'A' * 43}", b'{"report": NaN}', JSON),
        ("report, form", "PUT", f"{no_job}/{'A' * 43}", report, {"content-type": "text/plain"}),
        ("report, no body", "PUT", f"{no_job}/{'A' * 43}", b"", JSON),
    ]


def test_every_request_is_answered_as_without_the_shortcut(
    pair: tuple[TestClient, TestClient],
) -> None:
    fast, slow = pair
    for label, path, body, headers in _cases():
        got = _answer(fast.post(path, content=body, headers=headers))
        expected = _answer(slow.post(path, content=body, headers=headers))
        assert got == expected, label
    for label, method, path, body, headers in _training_cases():
        got = _answer(fast.request(method, path, content=body, headers=headers))
        expected = _answer(slow.request(method, path, content=body, headers=headers))
        assert got == expected, label
    engine_fast, engine_slow = state_of(fast).engine, state_of(slow).engine
    assert snapshot(engine_fast, "survey") == snapshot(engine_slow, "survey")
    assert snapshot(engine_fast, "survey").rows == 6  # one report, then five


def test_the_shortcut_answers_plain_uploads_and_passes_on_the_rest(
    client: TestClient,
) -> None:
    config = _config()
    assert client.post("/v1/collections", json=spec_payload(), headers=ADMIN).status_code == 201
    shortcut = _shortcut_of(client.app)  # type: ignore[arg-type]
    shortcut.app = passed = PassedOn(shortcut.app)
    plain = {"reports": report_dicts(config, packed_reports(config, 3))}
    assert client.post(PATH.format("survey"), json=plain).status_code == 200
    assert client.post(PATH.format("nobody"), json=plain).status_code == 404
    assert passed.requests == 0
    assert client.post(PATH.format("survey"), content=b"{", headers=JSON).status_code == 400
    assert client.post(PATH.format("survey") + "?a=b", json=plain).status_code == 422
    assert client.get("/v1/collections/survey", headers=ADMIN).status_code == 200
    assert passed.requests == 3


def test_rate_limited_uploads_are_answered_as_without_the_shortcut(
    settings: Settings, tmp_path: Any
) -> None:
    limited = settings.model_copy(
        update={"upload_rate_per_collection": 0.001, "upload_burst_per_collection": 2}
    )
    config = _config()
    with ExitStack() as stack:
        fast = _started(stack, limited, True)
        slow = _started(stack, replace_database(limited, tmp_path / "without.db"), False)
        for n in (1, 1, 1, 3):
            body = json.dumps({"reports": report_dicts(config, packed_reports(config, n))})
            got = _answer(fast.post(PATH.format("survey"), content=body, headers=JSON))
            expected = _answer(slow.post(PATH.format("survey"), content=body, headers=JSON))
            assert got[:3] == expected[:3]
            assert (got[3] is None) == (expected[3] is None)
        assert got[0] == 429


@pytest.mark.usefixtures("short_place_wait")
def test_a_training_device_is_answered_as_without_the_shortcut(
    pair: tuple[TestClient, TestClient],
) -> None:
    answers = []
    for http in pair:
        created = http.post(jobs_path(), json=training_spec(), headers=ANALYST)
        assert created.status_code == 201, created.text
        job_id = created.json()["id"]
        place = http.post(f"{jobs_path()}/{job_id}/participations")
        participation = ask(http, job_id)
        sent = answer(http, participation, records(1)[0], seeded_rng(3))
        again = answer(http, participation, records(1)[0], seeded_rng(3))
        answers.append(
            (
                place.status_code,
                sorted(place.json()),
                sent.status_code,
                sorted(sent.json()),
                _answer(again)[:2],
                again.json()["type"],
            )
        )
    assert answers[0] == answers[1]
    assert answers[0][0] == 201 and answers[0][2] == 200 and answers[0][4][0] == 409


class TeapotError(Exception):
    """An error an app's own sync handler answers (Starlette runs it in a thread)."""


def _teapot(_request: Any, _exc: Exception) -> Any:
    from starlette.responses import PlainTextResponse

    return PlainTextResponse("short and stout", status_code=418)


def test_a_sync_handler_answers_as_without_the_shortcut(
    pair: tuple[TestClient, TestClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    from ldp_aggregator.routes import reports

    async def boiling(*_: Any) -> Any:
        raise TeapotError("boiling")

    monkeypatch.setattr(reports, "ingest_batch_async", boiling)
    config = _config()
    body = json.dumps({"reports": report_dicts(config, packed_reports(config, 1))})
    answers = []
    for http in pair:
        http.app.exception_handlers[TeapotError] = _teapot  # type: ignore[attr-defined]
        http.app.middleware_stack = None  # type: ignore[attr-defined]  # rebuilt with it
        answers.append(_answer_text(http.post(PATH.format("survey"), content=body, headers=JSON)))
    assert answers[0] == answers[1] == (418, "short and stout")


def _answer_text(response: Any) -> tuple[int, str]:
    return response.status_code, response.text
