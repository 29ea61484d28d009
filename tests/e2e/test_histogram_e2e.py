"""Histograms of a number, their quantiles and IBU, through the SDK and a real aggregator."""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pytest

from ldp_client import AsyncLDPClient, LDPClient
from ldp_shared.errors import InsufficientReportsError, InvalidQueryError, InvalidRecordError
from ldp_shared.rand import seeded_rng

from .conftest import ADMIN, ANALYST

pytestmark = pytest.mark.e2e

EDGES = [17, 25, 35, 45, 55, 65, 90]
SPEC = {
    "name": "ages",
    "epsilon": 4.0,
    "release": {"min_reports": 1000},
    "attributes": [
        {"name": "age", "mechanism": "histogram", "edges": EDGES},
        {
            "name": "rating",
            "domain": ["low", "mid", "high"],
            "mechanism": "exponential",
            "utility": "ordinal",
        },
    ],
}


def _interpolated_quantile(values: np.ndarray, q: float) -> float:
    """The quantile of the piecewise-linear CDF through the true CDF at the edges."""
    clipped = np.clip(values, EDGES[0], EDGES[-1])
    cdf = np.concatenate([[0.0], np.cumsum(np.histogram(clipped, bins=EDGES)[0]) / values.size])
    return float(np.interp(q, cdf, EDGES))


def test_quantiles_ibu_and_ordinal_summaries(server: str) -> None:
    gen = np.random.default_rng(31)
    n = 20_000
    ages = 17 + gen.gamma(2.0, 10.0, n)  # skewed to the right, a few above 90: clipped
    ratings = gen.choice(["low", "mid", "high"], n, p=[0.2, 0.5, 0.3])
    records = [{"age": float(a), "rating": str(r)} for a, r in zip(ages, ratings, strict=True)]
    with LDPClient(server, token=ADMIN) as admin:
        config = admin.create_collection(SPEC)
    assert config.attribute("age").domain[-1] == "[65, 90]"
    with LDPClient(server, rng=seeded_rng(32)) as device:
        with pytest.raises(InvalidRecordError, match="finite"):
            device.submit("ages", [{"age": math.inf, "rating": "low"}])
        device.submit("ages", records[:999])
        with LDPClient(server, token=ANALYST) as analyst, pytest.raises(InsufficientReportsError):
            analyst.quantiles("ages", "age")
        assert device.submit("ages", records[999:], batch_size=5_000).accepted == n - 999
    with LDPClient(server, token=ANALYST) as analyst:
        result = analyst.quantiles("ages", "age", [0.1, 0.5, 0.9], confidence=0.99)
        freq = analyst.frequencies("ages", "age", postprocess="ibu")
        rating = analyst.frequencies("ages", "rating")
        with pytest.raises(InvalidQueryError, match="in \\(0, 1\\)"):
            analyst.quantiles("ages", "age", [0.5, math.nan])
        with pytest.raises(InvalidQueryError, match="histogram"):
            analyst.quantiles("ages", "rating")
    assert result.n_reports == n and result.edges == [float(e) for e in EDGES]
    for quantile in result.quantiles:
        truth = _interpolated_quantile(ages, quantile.probability)
        assert quantile.ci_low < truth < quantile.ci_high, (quantile, truth)
    assert freq.postprocess == "ibu" and freq.ibu is not None and freq.ibu.converged
    assert freq.postprocessed is not None and min(freq.postprocessed) >= 0.0
    assert freq.ordinal is not None and freq.ordinal.cdf[-1] == pytest.approx(1.0)
    shares = [float(np.mean(ratings == v)) for v in ("low", "mid", "high")]
    median = 1 - 0.5 + (0.5 - shares[0]) / shares[1]  # F(low) < 1/2 <= F(mid)
    assert rating.ordinal is not None
    assert rating.ordinal.median_rank.ci_low < median < rating.ordinal.median_rank.ci_high


def test_the_async_client_asks_the_same(server: str) -> None:
    with LDPClient(server, token=ADMIN) as admin:
        admin.create_collection(SPEC)
    values = np.random.default_rng(4).uniform(10, 95, 1_200)
    with LDPClient(server, rng=seeded_rng(5)) as device:
        device.submit("ages", [{"age": float(a), "rating": "mid"} for a in values])

    async def ask() -> tuple[object, object]:
        async with AsyncLDPClient(server, token=ANALYST) as analyst:
            return await asyncio.gather(
                analyst.quantiles("ages", "age"),
                analyst.frequencies("ages", "age", postprocess="ibu"),
            )

    quantiles, freq = asyncio.run(ask())
    with LDPClient(server, token=ANALYST) as analyst:
        assert analyst.quantiles("ages", "age") == quantiles
        assert analyst.frequencies("ages", "age", postprocess="ibu") == freq
