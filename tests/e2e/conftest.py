"""Fixtures of the end-to-end tests: a real aggregator (uvicorn) on loopback."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from statistics import NormalDist
from typing import Any

import pytest
import uvicorn
from tests.engines import database_url

from ldp_aggregator.app import create_app
from ldp_aggregator.settings import Settings
from ldp_shared.rand import seeded_rng

ADMIN = "admin-token-for-tests"
ANALYST = "analyst-token-for-tests"


@contextmanager
def serving(settings: Settings, server_seed: int = 20261127) -> Iterator[str]:
    """Run an aggregator with ``settings`` on a free loopback port; yields its base URL.
    The server's own draws (training roles) come from a generator seeded ``server_seed``,
    so a test whose requests arrive in a fixed order sees the same results every run."""
    app = create_app(settings, randbelow=random.Random(server_seed).randrange)
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", access_log=False)
    uv = uvicorn.Server(config)
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not uv.started:
        assert time.monotonic() < deadline, "the aggregator did not start"
        time.sleep(0.02)
    port = uv.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        uv.should_exit = True
        thread.join(timeout=30)


def e2e_settings(tmp_path: Path, **changes: Any) -> Settings:
    """Settings on a fresh database with the test tokens (and ``changes``)."""
    return Settings(
        database_url=database_url(tmp_path / "agg.db"),
        admin_token=ADMIN,
        analyst_token=ANALYST,
        **changes,
    )


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    with serving(e2e_settings(tmp_path)) as url:
        yield url


E2E_ALPHA = 1e-4
"""The chance that a correct implementation fails one end-to-end estimate check (for all
its values together); the data and the devices' generators are seeded, so a given run
either passes or fails every time."""


def z_bar(count: int, alpha: float = E2E_ALPHA) -> float:
    """The two-sided bar on |z| for ``count`` values at family-wise level ``alpha``
    (Bonferroni: each value at ``alpha / count``; z standard normal under the truth)."""
    return NormalDist().inv_cdf(1 - alpha / (2 * count))


def device_key(device: int) -> bytes:
    """A fixed memo key for test device ``device``'s ledger (its permanent randomization
    derives from it): a ledger makes a random one by default."""
    return seeded_rng(1000 + device).bytes(32)
