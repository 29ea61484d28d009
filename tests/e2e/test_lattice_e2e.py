"""The lattice numeric mechanisms through the SDK and a real aggregator."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldp_client import LDPClient
from ldp_shared.errors import InvalidRecordError
from ldp_shared.rand import seeded_rng

from .conftest import ADMIN, ANALYST

pytestmark = pytest.mark.e2e

NAMES = ("duchi", "piecewise", "hybrid", "laplace")
SPEC = {
    "name": "lattice",
    "epsilon": 8.0,
    "release": {"min_reports": 1000},
    "attributes": [{"name": m, "mechanism": m, "lo": 17, "hi": 90} for m in NAMES],
}


def test_lattice_means_through_the_sdk(server: str) -> None:
    gen = np.random.default_rng(41)
    n = 20_000
    ages = np.round(gen.normal(39, 14, n))  # some below 17 and above 90: clipped
    records = [dict.fromkeys(NAMES, float(a)) for a in ages]
    with LDPClient(server, token=ADMIN) as admin:
        admin.create_collection(SPEC)
    with LDPClient(server, rng=seeded_rng(42)) as device:
        with pytest.raises(InvalidRecordError, match="finite"):
            device.submit("lattice", [{**records[0], "piecewise": math.nan}])
        assert device.submit("lattice", records, batch_size=5_000).accepted == n
    with LDPClient(server, token=ANALYST) as analyst:
        results = {name: analyst.means("lattice", name) for name in NAMES}
    clipped = np.clip(ages, 17, 90)
    truth = float(clipped.mean())
    for name, result in results.items():
        assert result.n_reports == n and result.mechanism == name
        assert result.ci_low < truth < result.ci_high, (name, result, truth)
        assert result.epsilon == pytest.approx(2.0, rel=1e-9)
    assert results["duchi"].variance is None and results["laplace"].variance is None
    for name in ("piecewise", "hybrid"):
        spread = results[name].variance
        assert spread is not None and abs(spread - float(clipped.var())) < 0.25 * clipped.var()
