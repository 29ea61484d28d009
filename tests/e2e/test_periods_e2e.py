"""Periods through the SDK and a real aggregator: reports land in the current period, and
every windowed call, the trend and the difference answer as the API promises."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import numpy as np
import pytest

from ldp_client import LDPClient
from ldp_shared.errors import InsufficientReportsError, InvalidQueryError
from ldp_shared.rand import seeded_rng

from .conftest import ADMIN, ANALYST

pytestmark = pytest.mark.e2e

NAME = "daily"
SPEC = {
    "name": NAME,
    "epsilon": 2.0,
    "period": "hour",
    "release": {"min_reports": 100},
    "attributes": [
        {"name": "os", "domain": ["linux", "mac", "windows"], "mechanism": "grr"},
        {"name": "minutes", "mechanism": "piecewise", "lo": 0, "hi": 600},
    ],
}


def test_windows_trends_and_differences_through_the_sdk(server: str) -> None:
    gen = np.random.default_rng(7)
    records = [
        {"os": ["linux", "mac", "windows"][int(gen.integers(3))], "minutes": float(m)}
        for m in gen.uniform(0, 600, 2_000)
    ]
    with LDPClient(server, token=ADMIN) as admin:
        assert admin.create_collection(SPEC).spec.period == "hour"
    with LDPClient(server, rng=seeded_rng(8)) as device:
        assert device.submit(NAME, records).accepted == 2_000
    now = datetime.now(UTC)
    this_hour = (now.replace(minute=0, second=0, microsecond=0), None)
    with LDPClient(server, token=ANALYST) as analyst:
        everything = analyst.frequencies(NAME, "os")
        windowed = analyst.frequencies(NAME, "os", window=this_hour)
        assert windowed.estimate == everything.estimate and windowed.window is not None
        assert windowed.window.period == "hour" and windowed.window.periods == 1
        mean = analyst.means(NAME, "minutes", window=(date.today(), date.today()))
        assert mean.ci_low < 300 < mean.ci_high and mean.n_reports == 2_000
        trend = analyst.trend(NAME, "minutes", window=(now - timedelta(hours=2), now))
        assert [p.n_reports for p in trend.points] == [0, 0, 2_000]
        assert trend.points[-1].mean is not None and trend.points[0].withheld is not None
        with pytest.raises(InsufficientReportsError, match="has 0 reports in"):
            analyst.difference(
                NAME,
                "os",
                window=this_hour,
                baseline=(now - timedelta(hours=3), now - timedelta(hours=2)),
            )
        with pytest.raises(InvalidQueryError, match="in the future"):
            analyst.frequencies(NAME, "os", window=(now + timedelta(days=2), None))
        with pytest.raises(InvalidQueryError, match="a pair"):
            analyst.means(NAME, "minutes", window="today")  # type: ignore[arg-type]
