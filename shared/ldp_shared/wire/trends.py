"""Wire types of estimates over time (JSON over HTTP).

``GET /v1/collections/{name}/trend?attribute=A&from=&to=`` answers a :class:`TrendResult`:
one estimate per period of the window, each with its intervals, or why it is withheld:
frequencies (``values=`` for an open domain), a numeric attribute's mean, or a histogram
attribute's quantiles (``estimate=quantiles``, ``q=``).
``GET .../difference?attribute=A&from=&to=&baseline_from=&baseline_to=`` answers a
:class:`DifferenceResult`: the change between two disjoint windows with its interval.
``POST .../periods/merge`` (body :class:`PeriodMerge`) and ``POST .../periods/drop`` (body
:class:`PeriodDrop`), admin, answer a :class:`PeriodChangeResult`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from ldp_shared.central import CentralRelease
from ldp_shared.request_model import RequestModel
from ldp_shared.tabular import Tabular
from ldp_shared.wire.base import WireModel
from ldp_shared.wire.releases import FrequencyResult, MeanResult, PeriodWindow, QuantileResult

ReleasedAs = Literal["frequencies", "mean", "quantiles"]
"""What a trend or a difference follows: an attribute's frequencies, its mean, or (a
histogram attribute's) quantiles."""


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
