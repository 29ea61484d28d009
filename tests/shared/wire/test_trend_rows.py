"""The rows of a trend (:func:`ldp_shared.wire.trends.trend_columns`, its
``frame_columns()``) for every kind it follows, and one value followed through it
(:func:`ldp_shared.trend_series.series`): frequencies and means one row per value as the
other results lay them out, quantile levels as values ``q0.5`` without a standard error,
a withheld period as one row without a value."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

import pytest

from ldp_shared import tabular
from ldp_shared.errors import InvalidQueryError
from ldp_shared.trend_series import SeriesPoint, series
from ldp_shared.wire.trends import TREND_COLUMNS, TrendResult, level_name, trend_columns

RELEASE = {
    "collection": "c", "attribute": "a", "n_reports": 500, "epsilon": 1.0,
    "record_epsilon": 1.0, "confidence": 0.95,
}  # fmt: skip
START = datetime(2026, 3, 1, tzinfo=UTC)
WITHHELD = {"period": "2026-03-01", "start": START, "n_reports": 5, "withheld": "5 < 100"}


def _trend(kind: str, estimate: dict[str, Any], **extra: Any) -> TrendResult:
    released = {"period": "2026-03-02", "start": START.replace(day=2), "n_reports": 500}
    return TrendResult.model_validate(
        {
            "collection": "c", "attribute": "a", "released_as": kind, "confidence": 0.95,
            "window": {"period": "day", "first": "2026-03-01", "last": "2026-03-02", "periods": 2},
            "points": [WITHHELD, {**released, kind: {**RELEASE, **estimate}}],
            **extra,
        }
    )  # fmt: skip


FREQUENCIES = _trend(
    "frequencies",
    {"mechanism": "oue", "postprocess": "none", "values": ["x", "y"], "estimate": [0.7, 0.3]}
    | {"counts": [350, 150]}
    | {"stderr": [0.02, 0.02], "ci_low": [0.66, 0.26], "ci_high": [0.74, 0.34]},
)
MEAN = _trend(
    "mean",
    {"mechanism": "duchi", "lo": 0, "hi": 10, "mean": 4.0, "stderr": 0.1}
    | {"ci_low": 3.8, "ci_high": 4.2},
)
QUANTILES = _trend(
    "quantiles",
    {"mechanism": "histogram", "edges": [0, 10, 20]}
    | {"quantiles": [{"probability": p, "value": v, "ci_low": v - 1, "ci_high": v + 1, "bin": 0}
                     for p, v in ((0.25, 4.0), (0.5, 9.0))]},
    levels=[0.25, 0.5],
)  # fmt: skip


@pytest.mark.parametrize(
    ("trend", "values", "estimates"),
    [(FREQUENCIES, ["x", "y"], [0.7, 0.3]), (MEAN, ["mean"], [4.0])],
    ids=["frequencies", "mean"],
)
def test_frequencies_and_means_are_one_row_per_value(
    trend: TrendResult, values: list[str], estimates: list[float]
) -> None:
    table = tabular.columns(trend)
    assert list(table) == list(TREND_COLUMNS) and list(trend_columns(trend)) == list(table)
    assert table["period"] == ["2026-03-01"] + ["2026-03-02"] * len(values)
    assert table["n_reports"] == [5] + [500] * len(values)
    assert table["value"] == [None, *values] and table["estimate"][1:] == estimates
    assert table["withheld"] == ["5 < 100"] + [None] * len(values)
    assert all(math.isnan(table[name][0]) for name in ("estimate", "stderr", "ci_low", "ci_high"))


def test_quantiles_are_one_row_per_level() -> None:
    table = trend_columns(QUANTILES)
    assert table["value"] == [None, "q0.25", "q0.5"] and table["estimate"][1:] == [4.0, 9.0]
    assert all(math.isnan(s) for s in table["stderr"]) and table["withheld"][0] == "5 < 100"
    frame = QUANTILES.to_frame()
    assert frame["value"].tolist()[1:] == ["q0.25", "q0.5"]


def test_a_level_followed_through_the_periods() -> None:
    assert level_name(0.5) == "q0.5" and level_name(0.125) == "q0.125"
    assert series(QUANTILES) == [
        SeriesPoint("2026-03-01", 5, withheld="5 < 100"),
        SeriesPoint("2026-03-02", 500, 4.0, 3.0, 5.0),
    ]
    assert series(QUANTILES, "q0.5")[1].estimate == 9.0
    with pytest.raises(InvalidQueryError, match=r"no quantile level 'q0\.9'"):
        series(QUANTILES, "q0.9")
    with pytest.raises(InvalidQueryError, match="no value 'z'"):
        series(FREQUENCIES, "z")
    assert series(MEAN)[1].estimate == 4.0 and series(FREQUENCIES, "y")[1].ci_high == 0.34
