"""Both clients honour ``429`` + ``Retry-After`` (httpx.MockTransport): they wait what the
aggregator asks, resend the same report ids, and raise RateLimitedError when they give up."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from ldp_shared.errors import RateLimitedError, TransportError

from .conftest import MakeClient, make_records
from .fake_aggregator import FakeAggregator, Fault, problem, status

REPORTS = "/v1/collections/survey/reports"


def rate_limited(retry_after: str | None) -> Fault:
    """The aggregator's 429 problem document, with ``Retry-After`` when given."""

    def fault(request: httpx.Request, serve: Callable[[], httpx.Response]) -> httpx.Response:
        response = problem(RateLimitedError, "uploads to collection 'survey' are over the limit")
        if retry_after is not None:
            response.headers["Retry-After"] = retry_after
        return response

    return fault


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The seconds each client slept (nothing really sleeps)."""
    slept: list[float] = []

    async def fake_async_sleep(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr("ldp_client.client.time.sleep", slept.append)
    monkeypatch.setattr("ldp_client.async_client.asyncio.sleep", fake_async_sleep)
    return slept


def test_retry_after_is_waited_and_the_same_reports_are_resent(
    make_client: MakeClient, server: FakeAggregator, waits: list[float]
) -> None:
    server.fail("POST", REPORTS, rate_limited("2"), rate_limited("7"))
    summary = make_client(retries=3).submit("survey", make_records(5))
    assert waits == [2.0, 7.0]  # the server's seconds, not the (zero) backoff
    first, second, third = server.report_posts()
    assert first == second == third
    assert summary.accepted == 5 and len(server.stored["survey"]) == 5


def test_giving_up_raises_rate_limited_with_the_servers_wait(
    make_client: MakeClient, server: FakeAggregator, waits: list[float]
) -> None:
    server.fail("POST", REPORTS, *[rate_limited("1")] * 3)
    with pytest.raises(RateLimitedError) as info:
        make_client(retries=2).submit("survey", make_records(4))
    assert isinstance(info.value, TransportError)  # "try later", as an outage is
    assert info.value.retry_after == 1.0
    assert "over the limit" in str(info.value)
    assert any("3 attempts" in note for note in info.value.__notes__)
    assert waits == [1.0, 1.0]
    assert len(server.report_posts()) == 3 and not server.stored["survey"]


def test_a_wait_over_a_minute_is_not_attempted(
    make_client: MakeClient, server: FakeAggregator, waits: list[float]
) -> None:
    server.fail("POST", REPORTS, rate_limited("120"))
    with pytest.raises(RateLimitedError) as info:
        make_client(retries=5).submit("survey", make_records(3))
    assert info.value.retry_after == 120.0
    assert any("asked to wait 120 s" in note for note in info.value.__notes__)
    assert waits == [] and len(server.report_posts()) == 1


def test_a_wait_of_a_minute_is(
    make_client: MakeClient, server: FakeAggregator, waits: list[float]
) -> None:
    server.fail("POST", REPORTS, rate_limited("60"))
    assert make_client(retries=1).submit("survey", make_records(3)).accepted == 3
    assert waits == [60.0]


def test_a_bare_429_without_retry_after_backs_off(
    make_client: MakeClient, server: FakeAggregator, waits: list[float]
) -> None:
    server.fail("POST", REPORTS, status(429), rate_limited(None))
    with pytest.raises(RateLimitedError) as info:
        make_client(retries=1, backoff=0.5).submit("survey", make_records(2))
    assert info.value.retry_after is None
    assert len(waits) == 1 and 0.25 <= waits[0] <= 0.5
    assert make_client(retries=0).submit("survey", make_records(2)).accepted == 2
