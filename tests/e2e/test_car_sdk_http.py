"""The SDK over HTTP into the real app and SQLite, on the car data (in-process transport)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import numpy as np
import pytest
from tests.engines import database_url

from ldp_aggregator.app import create_app
from ldp_aggregator.settings import Settings
from ldp_client import AsyncLDPClient
from ldp_shared.rand import seeded_rng
from ldp_simulation.datasets import load_car

pytestmark = pytest.mark.e2e

ADMIN = "admin-token-for-tests"
ANALYST = "analyst-token-for-tests"
Z_LIMIT = 4.0  # |f̂ - f| / se over 25 values: P(any beyond 4 se) < 0.002


async def _run(database: Path, mechanism: str) -> dict[str, tuple[list[float], list[float], int]]:
    settings = Settings(
        database_url=database_url(database), admin_token=ADMIN, analyst_token=ANALYST
    )
    app = create_app(settings)
    car = load_car()
    records = car.records * 20  # 34,560 clients
    out: dict[str, tuple[list[float], list[float], int]] = {}
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        base = "http://aggregator.test"
        async with AsyncLDPClient(base, token=ADMIN, transport=transport) as admin:
            await admin.create_collection(
                {
                    "name": "car",
                    "epsilon": 6.0,
                    "release": {"min_reports": 1000},
                    "attributes": [
                        {"name": n, "domain": d, "mechanism": mechanism}
                        for n, d in car.domains.items()
                    ],
                }
            )
        async with AsyncLDPClient(base, transport=transport, rng=seeded_rng(2024)) as client:
            summary = await client.submit("car", records, batch_size=2000)
            assert summary.accepted == len(records)
        async with AsyncLDPClient(base, token=ANALYST, transport=transport) as analyst:
            for name in car.domains:
                result = await analyst.frequencies("car", name)
                out[name] = (result.estimate, result.stderr, result.n_reports)
    return out


@pytest.mark.parametrize("mechanism", ["oue", "sue", "grr"])
def test_car_frequencies_within_their_standard_errors(tmp_path: Path, mechanism: str) -> None:
    car = load_car()
    results = asyncio.run(_run(tmp_path / "agg.db", mechanism))
    for name, domain in car.domains.items():
        estimate, stderr, n = results[name]
        assert n == len(car.records) * 20
        index = {v: i for i, v in enumerate(domain)}
        true = np.bincount([index[r[name]] for r in car.records], minlength=len(domain)) / len(
            car.records
        )
        z = (np.array(estimate) - true) / np.array(stderr)
        assert np.all(np.abs(z) < Z_LIMIT), (name, z)
