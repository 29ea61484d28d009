"""One value followed through a trend: in each period its reports and its estimate with
its interval, or no estimate where the period is withheld. The dashboard's trend panel
and ``ldpcollect simulate --periods`` read a :class:`~ldp_shared.wire.trends.TrendResult`
this way, from the rows of its periods (:func:`~ldp_shared.wire.trends.point_rows`;
:func:`~ldp_shared.wire.trends.trend_columns` lays out every value of every period, the
rows of its ``to_frame()`` and of ``GET .../trend?format=csv``).

A trend follows frequencies (a value: one of the attribute's values), a mean (the value
``"mean"``) or quantiles (a value: a level named by
:func:`~ldp_shared.wire.trends.level_name`, ``"q0.5"``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ldp_shared.errors import InvalidQueryError
from ldp_shared.wire.trends import TrendResult, level_name, point_rows


@dataclass(frozen=True)
class SeriesPoint:
    """One period of a followed value (``estimate`` ``None``: withheld, ``withheld`` says why)."""

    period: str
    n_reports: int
    estimate: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    withheld: str | None = None


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
