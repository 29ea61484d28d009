"""FastAPI's own OpenTelemetry stays off: a request never asks for a provider, even when
one would be configured, so no span or log record of an upload can exist."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from ldp_aggregator.app import create_app
from ldp_aggregator.settings import Settings
from ldp_aggregator.telemetry import no_telemetry

pytest.importorskip("fastapi.telemetry", reason="this FastAPI has no telemetry to switch off")
from opentelemetry import _logs, metrics, trace


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The providers requests ask OpenTelemetry for (each answered with a configured one)."""
    calls: list[str] = []

    def provider(name: str, configured: object) -> Callable[..., Any]:
        def get(*args: Any, **kwargs: Any) -> object:
            calls.append(name)
            return configured  # not the default proxy: as if an operator had set one

        return get

    monkeypatch.setattr(
        trace, "get_tracer_provider", provider("tracer", trace.NoOpTracerProvider())
    )
    monkeypatch.setattr(
        metrics, "get_meter_provider", provider("meter", metrics.NoOpMeterProvider())
    )
    monkeypatch.setattr(
        _logs, "get_logger_provider", provider("logger", _logs.NoOpLoggerProvider())
    )
    return calls


def test_the_aggregator_never_asks_for_a_provider(tmp_path: Any, asked: list[str]) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 't.db'}")
    with TestClient(create_app(settings)) as client:
        assert client.get("/healthz").status_code == 200
        assert client.get("/v1/collections/none/reports").status_code in (404, 405)
    assert asked == []


def test_fastapi_left_alone_would_ask(asked: list[str]) -> None:
    """The control: the same request to an app without :func:`no_telemetry` asks."""
    plain = FastAPI()
    plain.get("/ping")(lambda: {"ok": True})
    with TestClient(plain) as client:
        client.get("/ping")
    assert asked
    asked.clear()
    quiet = FastAPI(**no_telemetry())
    quiet.get("/ping")(lambda: {"ok": True})
    with TestClient(quiet) as client:
        client.get("/ping")
    assert asked == []
