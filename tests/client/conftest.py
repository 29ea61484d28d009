"""Fixtures of the SDK tests: a fake aggregator and both clients behind one interface."""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import numpy as np
import pytest

from ldp_client import AsyncLDPClient, LDPClient
from ldp_shared.collection import CollectionConfig, build_config
from ldp_shared.schema import AttributeSpec, CollectionSpec, ReleasePolicy

from .fake_aggregator import FakeAggregator

BASE_URL = "http://aggregator.test"

BROWSERS = ["firefox", "chrome", "safari", "other"]
AGES = ["<30", "30-60", ">60"]
ITEMS = ["bread", "milk", "eggs", "beer", "tea", "jam", "rice", "salt", "oil"]

SPEC = CollectionSpec(
    name="survey",
    epsilon=2.0,
    attributes=[
        AttributeSpec(name="browser", domain=BROWSERS, mechanism="oue"),
        AttributeSpec(name="age", domain=AGES, mechanism="grr"),
        AttributeSpec(name="basket", domain=ITEMS, mechanism="mask", keep_probability=0.9),
    ],
    release=ReleasePolicy(min_reports=1),
)


def make_records(n: int, seed: int = 0) -> list[dict[str, Any]]:
    gen = np.random.default_rng(seed)
    return [
        {
            "browser": BROWSERS[gen.integers(len(BROWSERS))],
            "age": AGES[gen.integers(len(AGES))],
            "basket": {item for item in ITEMS if gen.random() < 0.3},
        }
        for _ in range(n)
    ]


@pytest.fixture
def config() -> CollectionConfig:
    return build_config(SPEC)


@pytest.fixture
def server() -> FakeAggregator:
    fake = FakeAggregator()
    fake.add(SPEC)
    return fake


class Blocking:
    """Drives an :class:`AsyncLDPClient` from synchronous test code on one event loop."""

    def __init__(self, client: AsyncLDPClient, runner: asyncio.Runner) -> None:
        self._client = client
        self._runner = runner

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if not inspect.iscoroutinefunction(attr):
            return attr

        @functools.wraps(attr)
        def run(*args: Any, **kwargs: Any) -> Any:
            return self._runner.run(attr(*args, **kwargs))

        return run

    def close(self) -> None:
        self._runner.run(self._client.aclose())


MakeClient = Callable[..., Any]


@contextmanager
def clients(kind: str, **defaults: Any) -> Iterator[MakeClient]:
    """``make(**kwargs)``: an LDPClient (``kind`` "sync"), or an AsyncLDPClient behind
    :class:`Blocking`, with ``defaults`` and no backoff (tests do not sleep); every client
    made is closed on exit."""
    runner = asyncio.Runner()
    made: list[Any] = []

    def make(**kwargs: Any) -> Any:
        options = {"backoff": 0.0, **defaults, **kwargs}
        if kind == "sync":
            client: Any = LDPClient(BASE_URL, **options)
        else:
            client = Blocking(AsyncLDPClient(BASE_URL, **options), runner)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()
    runner.close()


@pytest.fixture(params=["sync", "async"])
def make_client(request: pytest.FixtureRequest, server: FakeAggregator) -> Iterator[MakeClient]:
    """``make_client(**kwargs)``: a client of either kind (:func:`clients`) whose transport
    is the fake aggregator."""
    with clients(request.param, transport=server.transport) as make:
        yield make


Handler = Callable[[httpx.Request], httpx.Response]


@pytest.fixture(params=["sync", "async"])
def make(request: pytest.FixtureRequest) -> Iterator[Callable[[Handler], Any]]:
    """``make(handler)``: an analyst's client (token ``"t"``) of either kind
    (:func:`clients`) whose every request ``handler`` answers."""
    with clients(request.param, token="t") as build:
        yield lambda handler: build(transport=httpx.MockTransport(handler))
