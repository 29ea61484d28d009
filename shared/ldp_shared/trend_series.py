"""One value followed through a trend: in each period its reports and its estimate with
its interval, or no estimate where the period is withheld. The dashboard's trend panel
and ``ldpcollect simulate --periods`` read a :class:`~ldp_shared.wire.trends.TrendResult`
this way; :func:`trend_columns` lays out every value of every period (the rows of its
``to_frame()`` and of ``GET .../trend?format=csv``).

A trend follows frequencies (a value: one of the attribute's values), a mean (the value
``"mean"``) or quantiles (a value: a level named by :func:`level_name`, ``"q0.5"``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ldp_shared.errors import InvalidQueryError
from ldp_shared.wire.releases import FrequencyResult, MeanResult, QuantileResult
from ldp_shared.wire.trends import TrendPoint, TrendResult

TREND_COLUMNS = (
    "period", "start", "n_reports", "value", "estimate", "stderr", "ci_low", "ci_high",
    "withheld",
)  # fmt: skip
"""The columns of a trend's rows, one per period and value."""


@dataclass(frozen=True)
class SeriesPoint:
    """One period of a followed value (``estimate`` ``None``: withheld, ``withheld`` says why)."""

    period: str
    n_reports: int
    estimate: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    withheld: str | None = None


def level_name(probability: float) -> str:
    """The name of a quantile level as a trend's value: ``0.5`` → ``"q0.5"``."""
    return f"q{probability:g}"


def _frequency_rows(result: FrequencyResult) -> list[dict[str, Any]]:
    columns = zip(
        result.values, result.estimate, result.stderr, result.ci_low, result.ci_high, strict=True
    )
    return [
        {"value": v, "estimate": e, "stderr": s, "ci_low": lo, "ci_high": hi}
        for v, e, s, lo, hi in columns
    ]


def _mean_rows(result: MeanResult) -> list[dict[str, Any]]:
    return [
        {
            "value": "mean",
            "estimate": result.mean,
            "stderr": result.stderr,
            "ci_low": result.ci_low,
            "ci_high": result.ci_high,
        }
    ]


def _quantile_rows(result: QuantileResult) -> list[dict[str, Any]]:
    """One row per level; no standard error (the interval inverts the CDF's band)."""
    return [
        {
            "value": level_name(q.probability),
            "estimate": q.value,
            "stderr": math.nan,
            "ci_low": q.ci_low,
            "ci_high": q.ci_high,
        }
        for q in result.quantiles
    ]


def point_rows(point: TrendPoint) -> list[dict[str, Any]]:
    """The rows of one period: one per value it estimates (``value``, ``estimate``,
    ``stderr``, ``ci_low``, ``ci_high``), or none when it is withheld."""
    if point.mean is not None:
        return _mean_rows(point.mean)
    if point.frequencies is not None:
        return _frequency_rows(point.frequencies)
    if point.quantiles is not None:
        return _quantile_rows(point.quantiles)
    return []


def trend_columns(result: TrendResult) -> dict[str, list[Any]]:
    """Every value of every period as columns (:data:`TREND_COLUMNS`): a withheld period
    is one row whose ``value`` is ``None``, its numbers NaN and ``withheld`` its reason."""
    table: dict[str, list[Any]] = {name: [] for name in TREND_COLUMNS}
    for point in result.points:
        head = {"period": point.period, "start": point.start, "n_reports": point.n_reports}
        rows = point_rows(point) or [
            {"estimate": math.nan, "stderr": math.nan, "ci_low": math.nan, "ci_high": math.nan}
            | {"withheld": point.withheld}
        ]
        for row in rows:
            full = head | row
            for name, column in table.items():
                column.append(full.get(name))
    return table


def followed_values(result: TrendResult) -> list[str]:
    """The values a trend estimates in each released period (``["mean"]`` for a mean;
    none when every period is withheld and nothing names them)."""
    if result.released_as == "mean":
        return ["mean"]
    if result.released_as == "quantiles" and result.levels is not None:
        return [level_name(q) for q in result.levels]
    for point in result.points:
        rows = point_rows(point)
        if rows:
            return [row["value"] for row in rows]
    return []


def series(result: TrendResult, value: str | None = None) -> list[SeriesPoint]:
    """``value``'s estimate in each period of ``result``, oldest first: a numeric
    attribute's mean whatever ``value``; for quantiles a level (``"q0.5"``, by default the
    first level asked); for frequencies one of the attribute's values.
    :class:`InvalidQueryError` for a value that the trend does not estimate."""
    if result.released_as == "quantiles" and value is None:
        value = next(iter(followed_values(result)), None)
    out: list[SeriesPoint] = []
    for point in result.points:
        head = (point.period, point.n_reports)
        rows = point_rows(point)
        if not rows:
            out.append(SeriesPoint(*head, withheld=point.withheld))
            continue
        found = rows[0] if point.mean is not None else _row_of(rows, value, result)
        out.append(SeriesPoint(*head, found["estimate"], found["ci_low"], found["ci_high"]))
    return out


def _row_of(rows: list[dict[str, Any]], value: str | None, result: TrendResult) -> dict[str, Any]:
    for row in rows:
        if row["value"] == value:
            return row
    named = ", ".join(str(row["value"]) for row in rows[:10])
    what = "quantile level" if result.released_as == "quantiles" else "value"
    raise InvalidQueryError(
        f"the trend of {result.attribute!r} has no {what} {value!r}: choose one of {named}"
    )
