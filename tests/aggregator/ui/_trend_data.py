"""A collection with reports in three past days for the trend panel's tests: ``drift``
(``color`` by OUE, ``minutes`` by Duchi et al.'s mechanism) is created through the API,
and each day's reports are counted straight into the app's database in that day
(:func:`ldp_aggregator.ingest.ingest_batch` with ``at=``, as a server would have done on
the day), since the API always counts a report in the current period.

The three days are fixed when this module is imported; what follows them up to the
server's current UTC day is read when a test asks (:func:`on_one_day`), so a test that
straddles midnight UTC expects one day more instead of failing."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from typing import Any, TypeVar

import numpy as np
from sqlalchemy import Engine

from ldp_aggregator.ingest import ingest_batch
from ldp_aggregator.storage.collections import load_collection
from ldp_shared.codec import Privatizer
from ldp_shared.rand import seeded_rng
from ldp_shared.wire.reports import ReportBatch

from ..conftest import COLORS, report_dicts
from ._data import Poster, _create

NAME = "drift"
MINIMUM = 100
_ANCHOR = datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0)
DAYS = [_ANCHOR - timedelta(days=k) for k in (4, 3, 2)]
"""Three past days (UTC noon), the reports' periods."""
COUNTS = [400, 30, 600]
"""Reports per day: released, withheld (below ``MINIMUM``), released."""
FAVOURITES = ["red", "red", "blue"]
"""Each day's favourite colour (held by 80%): over the window blue is the most frequent."""
MINUTES = [30.0, 45.0, 60.0]
"""Each day's mean of ``minutes``."""


T = TypeVar("T")


def label(day: datetime | date) -> str:
    """A day period's label, ``YYYY-MM-DD``."""
    return (day.date() if isinstance(day, datetime) else day).isoformat()


def utc_today() -> date:
    """The current day in UTC, the server's day periods' clock."""
    return datetime.now(UTC).date()


def on_one_day(step: Callable[[], T], attempts: int = 3) -> tuple[T, date]:
    """Run ``step`` (requests whose answer depends on the current day) until the UTC day is
    the same before and after it; its result and that day. Midnight passes at most once
    in a test's run, so a second attempt suffices; a third is slack."""
    for _ in range(attempts):
        before = utc_today()
        result = step()
        if utc_today() == before:
            return result, before
    raise AssertionError(f"the UTC day changed during each of {attempts} attempts")


def trend_spec() -> dict[str, Any]:
    return {
        "name": NAME,
        "epsilon": 8.0,
        "release": {"min_reports": MINIMUM},
        "attributes": [
            {"name": "color", "domain": COLORS, "mechanism": "oue"},
            {"name": "minutes", "mechanism": "duchi", "lo": 0, "hi": 100},
        ],
    }


def _columns(n: int, favourite: str, minutes: float, seed: int) -> dict[str, Any]:
    gen = np.random.default_rng(seed)
    others = [c for c in COLORS if c != favourite]
    color = np.where(gen.random(n) < 0.8, favourite, np.asarray(others)[gen.integers(3, size=n)])
    return {"color": color.tolist(), "minutes": np.clip(gen.normal(minutes, 15, n), 0, 100)}


def populate_trend(client: Poster, engine: Engine) -> None:
    """Create ``drift`` and count each day's reports in that day."""
    config = _create(client, trend_spec())
    collection = load_collection(engine, NAME)
    for k, (day, n) in enumerate(zip(DAYS, COUNTS, strict=True)):
        columns = _columns(n, FAVOURITES[k], MINUTES[k], seed=20 + k)
        packed = Privatizer(config).privatize_columns(columns, seeded_rng(30 + k))
        batch = ReportBatch.model_validate({"reports": report_dicts(config, packed)})
        assert ingest_batch(engine, collection, batch, at=day).accepted == n
