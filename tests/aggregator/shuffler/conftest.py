"""An aggregator and a shuffler in process, joined by transports that route by host."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from anyio import to_thread
from tests.engines import database_url

from ldp_aggregator.app import create_app
from ldp_aggregator.settings import Settings
from ldp_aggregator.shuffler.app import ShufflerSettings, create_shuffler_app

from ..conftest import ADMIN, ADMIN_TOKEN, ANALYST_TOKEN, spec_payload

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=".*httpx2.*")
    from fastapi.testclient import TestClient

SHUFFLER_TOKEN = "shuffler-token-for-tests-0123456789"
SHUFFLER = {"Authorization": f"Bearer {SHUFFLER_TOKEN}"}
MIN_BATCH = 20


class _ToAggregator(httpx.AsyncBaseTransport):
    """The shuffler's way to the aggregator: the aggregator's TestClient, in a thread;
    every forwarded body is kept, as an attacker on the wire would see it."""

    def __init__(self, aggregator: TestClient, seen: list[dict[str, Any]]) -> None:
        self.aggregator = aggregator
        self.seen = seen

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        if request.url.path.endswith("/shuffled-batches"):
            self.seen.append(httpx.Response(200, content=body).json())
        answer = await to_thread.run_sync(
            lambda: self.aggregator.request(
                request.method, request.url.path, content=body, headers=dict(request.headers)
            )
        )
        return httpx.Response(answer.status_code, content=answer.content, headers=answer.headers)


class _ByHost(httpx.BaseTransport):
    """The device's network: ``http://aggregator`` and ``http://shuffler``."""

    def __init__(self, clients: dict[str, TestClient]) -> None:
        self.clients = clients

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        client = self.clients[request.url.host]
        answer: httpx.Response = client._transport.handle_request(request)
        return answer


@dataclass
class Parties:
    aggregator: TestClient
    shuffler: TestClient
    device_transport: httpx.BaseTransport
    settings: Settings
    forwarded: list[dict[str, Any]] = field(default_factory=list)

    def forward(self) -> int:
        """Run the shuffler's forwarder once, now; the blobs it forwarded."""
        forwarder = self.shuffler.app.state.forwarder  # type: ignore[attr-defined]
        return int(self.shuffler.portal.call(forwarder.forward_ready))  # type: ignore[union-attr]

    def create(self, name: str = "survey", **changes: Any) -> dict[str, Any]:
        answer = self.aggregator.post(
            "/v1/collections", json=spec_payload(name, shuffled=True, **changes), headers=ADMIN
        )
        assert answer.status_code in (200, 201), answer.text
        return dict(answer.json())


@pytest.fixture
def parties(tmp_path: Path) -> Iterator[Parties]:
    """The two parties, the aggregator on the tests' engine (tests/engines.py)."""
    yield from _parties(tmp_path, database_url(tmp_path / "ldp.db"))


@pytest.fixture
def sqlite_parties(tmp_path: Path) -> Iterator[Parties]:
    """The two parties, the aggregator on the SQLite file ``ldp.db`` (its files are read)."""
    yield from _parties(tmp_path, f"sqlite:///{tmp_path / 'ldp.db'}")


def _parties(tmp_path: Path, url: str) -> Iterator[Parties]:
    settings = Settings(
        database_url=url,
        admin_token=ADMIN_TOKEN,
        analyst_token=ANALYST_TOKEN,
        shuffler_token=SHUFFLER_TOKEN,
        sealing_keys_file=str(tmp_path / "keys.json"),
        shuffle_min_batch=MIN_BATCH,
        reshuffle_seconds=0,
    )
    seen: list[dict[str, Any]] = []
    with TestClient(create_app(settings), raise_server_exceptions=False) as aggregator:
        shuffler_settings = ShufflerSettings(
            aggregator_url="http://aggregator",
            token=SHUFFLER_TOKEN,
            database=tmp_path / "shuffler.db",
            min_batch=MIN_BATCH,
            interval=3600.0,  # the tests forward by hand
            transport=_ToAggregator(aggregator, seen),
        )
        app = create_shuffler_app(shuffler_settings)
        with TestClient(app, base_url="http://shuffler") as shuffler:
            shuffler.app.state.forwarder.wake.set = lambda: None  # type: ignore[attr-defined]
            device = _ByHost({"aggregator": aggregator, "shuffler": shuffler})
            yield Parties(aggregator, shuffler, device, settings, seen)
