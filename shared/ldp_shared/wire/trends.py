"""Wire types of estimates over time (JSON over HTTP).

``GET /v1/collections/{name}/trend?attribute=A&from=&to=`` answers a :class:`TrendResult`:
one estimate per period of the window, each with its intervals, or why it is withheld:
frequencies (``values=`` for an open domain), a numeric attribute's mean, or a histogram
attribute's quantiles (``estimate=quantiles``, ``q=``).
``GET .../difference?attribute=A&from=&to=&baseline_from=&baseline_to=`` answers a
:class:`DifferenceResult`: the change between two disjoint windows with its interval.
``POST .../periods/merge`` (body :class:`PeriodMerge`) and ``POST .../periods/drop`` (body
:class:`PeriodDrop`), admin, answer a :class:`PeriodChangeResult`.

A trend's rows (its ``to_frame()``, ``GET .../trend?format=csv``) are one per period and
value: :func:`point_rows` lays out the values of one period, :func:`trend_columns` every
period (:data:`TREND_COLUMNS`). A trend follows frequencies (a value: one of the
attribute's values), a mean (the value ``"mean"``) or quantiles (a value: a level named by
:func:`level_name`, ``"q0.5"``); :mod:`ldp_shared.trend_series` follows one value through
the periods.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from ldp_shared.central import CentralRelease
from ldp_shared.request_model import RequestModel
from ldp_shared.tabular import INTERVAL, Columns, Tabular, from_rows
from ldp_shared.wire.base import WireModel
from ldp_shared.wire.releases import FrequencyResult, MeanResult, PeriodWindow, QuantileResult

ReleasedAs = Literal["frequencies", "mean", "quantiles"]
"""What a trend or a difference follows: an attribute's frequencies, its mean, or (a
histogram attribute's) quantiles."""

TREND_COLUMNS = (
    "period", "start", "n_reports", "value", "estimate", "stderr", "ci_low", "ci_high",
    "withheld",
)  # fmt: skip
"""The columns of a trend's rows, one per period and value."""


class TrendPoint(WireModel):
    """One period of a trend: its reports and its estimate (or why it is withheld)."""

    period: str = Field(description="the period, ISO 8601 (2026-11-26, 2026-W48, 2026-11-26T13Z)")
    start: datetime = Field(description="the period's first instant, UTC")
    n_reports: int = Field(ge=0, description="reports counted in this period")
    frequencies: FrequencyResult | None = Field(
        default=None, description="the period's frequencies (attributes released as such)"
    )
    mean: MeanResult | None = Field(
        default=None, description="the period's mean (numeric attributes)"
    )
    quantiles: QuantileResult | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="the period's quantiles (histogram attributes, estimate=quantiles)",
    )
    withheld: str | None = Field(
        default=None, description="why the period has no estimate (its release minimum)"
    )


class TrendResult(WireModel, Tabular):
    """One estimate per period of a window, oldest first."""

    collection: str
    attribute: str
    released_as: ReleasedAs
    confidence: float
    window: PeriodWindow
    levels: list[float] | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="the quantile levels followed (released_as quantiles; absent otherwise)",
    )
    points: list[TrendPoint]

    def frame_columns(self) -> Columns:
        """One row per period and value (:func:`trend_columns`)."""
        return trend_columns(self)


class DifferenceResult(WireModel, Tabular):
    """``window``'s estimate minus ``baseline``'s, value by value (a mean: one value,
    ``"mean"``; quantiles: one per level, ``"q0.5"``), with its interval: the two windows
    hold different reports, so their estimates' variances add (normal intervals), or, for
    quantiles, whose intervals are not normal, the two intervals are combined by MOVER
    (Zou and Donner, Statistics in Medicine 2008; :mod:`ldp_aggregator.trends`)."""

    collection: str
    attribute: str
    released_as: ReleasedAs
    confidence: float
    window: PeriodWindow
    baseline: PeriodWindow
    n_reports: int = Field(description="reports in window")
    baseline_reports: int = Field(description="reports in baseline")
    values: list[str]
    estimate: list[float] = Field(description="the estimate over window")
    baseline_estimate: list[float] = Field(description="the estimate over baseline")
    difference: list[float] = Field(description="estimate − baseline_estimate")
    stderr: list[float | None] = Field(
        description="√(stderr² + baseline stderr²); None for quantiles (MOVER interval)"
    )
    ci_low: list[float]
    ci_high: list[float]
    interval: Literal["normal", "mover"] = Field(
        default="normal",
        description=(
            "normal: difference ± z·stderr; mover: quantiles, the two windows' intervals"
            " combined (method of variance estimates recovery, Zou and Donner 2008)"
        ),
    )
    central: CentralRelease | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description=(
            "shuffled collections: the central (ε, δ) at the smaller window's reports (a"
            " report lies in one window; absent when unshuffled)"
        ),
    )

    def frame_columns(self) -> Columns:
        """One row per value: ``value, estimate, baseline_estimate, difference, stderr,
        ci_low, ci_high``."""
        table: Columns = {"value": list(self.values)}
        for name in ("estimate", "baseline_estimate", "difference", *INTERVAL):
            table[name] = list(getattr(self, name))
        return table


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


def trend_columns(result: TrendResult) -> Columns:
    """Every value of every period as columns (:data:`TREND_COLUMNS`): a withheld period
    is one row whose ``value`` is ``None``, its numbers NaN and ``withheld`` its reason."""
    withheld = {"estimate": math.nan, "stderr": math.nan, "ci_low": math.nan, "ci_high": math.nan}
    rows = (
        {"period": point.period, "start": point.start, "n_reports": point.n_reports} | row
        for point in result.points
        for row in point_rows(point) or [withheld | {"withheld": point.withheld}]
    )
    return from_rows(rows, TREND_COLUMNS)


class PeriodMerge(RequestModel):
    """``POST /v1/collections/{name}/periods/merge`` (admin)."""

    before: str = Field(
        min_length=1,
        max_length=64,
        description="merge every period that starts before this bound (ISO 8601, at most now)",
    )
    into: Literal["day", "week", "all"] = Field(
        description="the coarser period each is added into, or all: the oldest of them"
    )


class PeriodDrop(RequestModel):
    """``POST /v1/collections/{name}/periods/drop`` (admin)."""

    before: str = Field(
        min_length=1,
        max_length=64,
        description="drop every period that starts before this bound (ISO 8601, at most now)",
    )
    confirm: str = Field(min_length=1, description="the collection's name again")


class PeriodChangeResult(WireModel):
    """What a merge or a drop did."""

    collection: str
    periods_before: int = Field(description="periods holding statistics before")
    periods_after: int = Field(description="periods holding statistics after")
    reports: int = Field(description="reports moved into merged periods, or folded by a drop")
