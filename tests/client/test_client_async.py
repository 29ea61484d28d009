"""AsyncLDPClient used natively (asyncio.run, async with, gather) and the waits of both clients."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from ldp_client import AsyncLDPClient, LDPClient, TransportError

from .conftest import BASE_URL, make_records
from .fake_aggregator import FakeAggregator, raise_, status

REPORTS = "/v1/collections/survey/reports"


def test_async_context_manager_closes_and_submits(server: FakeAggregator):
    async def main() -> AsyncLDPClient:
        async with AsyncLDPClient(BASE_URL, transport=server.transport) as client:
            summary = await client.submit("survey", make_records(25), batch_size=10)
            assert summary.accepted == 25
        return client

    client = asyncio.run(main())
    assert client._http.is_closed
    assert [len(ids) for ids in server.report_posts()] == [10, 10, 5]


def test_sync_context_manager_closes(server: FakeAggregator):
    with LDPClient(BASE_URL, transport=server.transport) as client:
        client.get_config("survey")
    assert client._http.is_closed


def test_concurrent_async_submits(server: FakeAggregator):
    server.fail("POST", REPORTS, status(503), raise_(httpx.ConnectError))

    async def main() -> list[int]:
        async with AsyncLDPClient(BASE_URL, transport=server.transport, backoff=0) as client:
            summaries = await asyncio.gather(
                *(client.submit("survey", make_records(20, seed=s)) for s in range(5))
            )
        return [s.accepted + s.duplicate for s in summaries]

    assert asyncio.run(main()) == [20] * 5
    assert len(server.stored["survey"]) == 100


def test_an_async_handler_works_too(server: FakeAggregator):
    async def handler(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(0)
        return server(request)

    async def main() -> int:
        async with AsyncLDPClient(BASE_URL, transport=httpx.MockTransport(handler)) as client:
            return (await client.submit("survey", make_records(3))).accepted

    assert asyncio.run(main()) == 3


def test_sync_waits_grow_exponentially(server: FakeAggregator, monkeypatch: pytest.MonkeyPatch):
    waits: list[float] = []
    monkeypatch.setattr("ldp_client.client.time.sleep", waits.append)
    server.fail("GET", "/v1/collections/survey", *[status(503)] * 4)
    with (
        LDPClient(BASE_URL, transport=server.transport, retries=3, backoff=0.2) as client,
        pytest.raises(TransportError),
    ):
        client.get_config("survey")
    assert len(waits) == 3
    for attempt, wait in enumerate(waits):
        assert 0.1 * 2**attempt <= wait <= 0.2 * 2**attempt


def test_async_waits_honour_retry_after(server: FakeAggregator, monkeypatch: pytest.MonkeyPatch):
    waits: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr("ldp_client.async_client.asyncio.sleep", fake_sleep)
    server.fail("GET", "/v1/collections/survey", status(429, **{"retry-after": "3"}))

    async def main() -> str:
        async with AsyncLDPClient(BASE_URL, transport=server.transport, backoff=0.01) as c:
            return (await c.get_config("survey")).name

    assert asyncio.run(main()) == "survey"
    assert waits == [3.0]
