"""Periods through the SDK and a real aggregator: reports land in the current period, and
every windowed call, the trend and the difference answer as the API promises.

The collection's period is the hour (UTC): should the hour change while the reports are
sent or the hour's answers read, the test starts again with a fresh collection."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

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


ATTEMPTS = 3
"""The hour changes at most once in a run of a few seconds; a third attempt is slack."""


def the_hour() -> datetime:
    return datetime.now(UTC).replace(minute=0, second=0, microsecond=0)


@dataclass
class HourAnswers:
    """What a collection filled and read within one hour ``hour`` answered."""

    name: str
    hour: datetime
    everything: Any
    windowed: Any
    mean: Any
    trend: Any
    difference: Exception | None


def fill_and_read(server: str, name: str, records: list[dict[str, Any]]) -> HourAnswers:
    hour = the_hour()
    with LDPClient(server, token=ADMIN) as admin:
        assert admin.create_collection(dict(SPEC, name=name)).spec.period == "hour"
    with LDPClient(server, rng=seeded_rng(8)) as device:
        assert device.submit(name, records).accepted == 2_000
    with LDPClient(server, token=ANALYST) as analyst:
        everything = analyst.frequencies(name, "os")
        windowed = analyst.frequencies(name, "os", window=(hour, None))
        mean = analyst.means(name, "minutes", window=(hour.date(), hour.date()))
        trend = analyst.trend(name, "minutes", window=(hour - timedelta(hours=2), hour))
        try:
            analyst.difference(
                name,
                "os",
                window=(hour, None),
                baseline=(hour - timedelta(hours=3), hour - timedelta(hours=2)),
            )
            difference = None
        except InsufficientReportsError as error:
            difference = error
    return HourAnswers(name, hour, everything, windowed, mean, trend, difference)


def test_windows_trends_and_differences_through_the_sdk(server: str) -> None:
    gen = np.random.default_rng(7)
    records = [
        {"os": ["linux", "mac", "windows"][int(gen.integers(3))], "minutes": float(m)}
        for m in gen.uniform(0, 600, 2_000)
    ]
    for attempt in range(ATTEMPTS):
        got = fill_and_read(server, NAME if attempt == 0 else f"{NAME}-{attempt}", records)
        if the_hour() == got.hour:
            break
    else:
        raise AssertionError(f"the hour changed during each of {ATTEMPTS} attempts")
    assert got.windowed.estimate == got.everything.estimate and got.windowed.window is not None
    assert got.windowed.window.period == "hour" and got.windowed.window.periods == 1
    assert got.mean.ci_low < 300 < got.mean.ci_high and got.mean.n_reports == 2_000
    assert [p.n_reports for p in got.trend.points] == [0, 0, 2_000]
    assert got.trend.points[-1].mean is not None and got.trend.points[0].withheld is not None
    assert isinstance(got.difference, InsufficientReportsError)
    assert "has 0 reports in" in str(got.difference)
    with LDPClient(server, token=ANALYST) as analyst:
        with pytest.raises(InvalidQueryError, match="in the future"):
            analyst.frequencies(got.name, "os", window=(got.hour + timedelta(days=2), None))
        with pytest.raises(InvalidQueryError, match="a pair"):
            analyst.means(got.name, "minutes", window="today")  # type: ignore[arg-type]
