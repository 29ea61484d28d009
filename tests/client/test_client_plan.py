"""SDK ``plan()`` (sync and async) against the real aggregator app: the plan, and an
impossible query as :class:`InfeasiblePlanError`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from ldp_aggregator.app import create_app
from ldp_aggregator.settings import Settings
from ldp_shared.errors import InfeasiblePlanError, InvalidQueryError
from ldp_shared.planner import plan


@pytest.fixture
def app_handler(tmp_path: Path) -> Iterator[Callable[[httpx.Request], httpx.Response]]:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'plan.db'}")
    with TestClient(create_app(settings), raise_server_exceptions=False) as app:

        def handler(request: httpx.Request) -> httpx.Response:
            answer = app.get(request.url.path, params=dict(request.url.params))
            return httpx.Response(
                answer.status_code, headers=answer.headers, content=answer.content
            )

        yield handler


def test_plan_round_trips(make: Callable[[Any], Any], app_handler: Any) -> None:
    client = make(app_handler)
    got = client.plan(epsilon=1.5, domain_size=100, n=20_000, delta=1e-7)
    assert got == plan(epsilon=1.5, domain_size=100, n=20_000, delta=1e-7)
    assert got.delta == 1e-7


def test_impossible_plan_raises_the_typed_error(
    make: Callable[[Any], Any], app_handler: Any
) -> None:
    client = make(app_handler)
    with pytest.raises(InfeasiblePlanError, match="raise epsilon"):
        client.plan(epsilon=0.5, lo=0.0, hi=1.0, target_stderr=1e-10)


def test_second_moment_is_sent(make: Callable[[Any], Any], app_handler: Any) -> None:
    client = make(app_handler)
    got = client.plan(epsilon=2.0, n=1_000_000, second_moment=0.05)
    assert got == plan(epsilon=2.0, n=1_000_000, second_moment=0.05)
    assert got != plan(epsilon=2.0, n=1_000_000)  # not silently the worst case
    assert {e.second_moment for e in got.mechanisms} == {0.05}


def test_second_moment_outside_its_range_raises_the_typed_error(
    make: Callable[[Any], Any], app_handler: Any
) -> None:
    client = make(app_handler)
    with pytest.raises(InvalidQueryError, match=r"second_moment \(F₂\) must be in \(0, 1\]"):
        client.plan(epsilon=1.0, domain_size=8, n=1000, second_moment=2.0)
