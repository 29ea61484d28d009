"""Estimates over time: one estimate per period (a trend), and the change between two
windows (a difference).

Both read the per-period statistics only (:func:`~ldp_aggregator.storage.stats.read_period_stats`),
so their cost grows with the number of periods, never with the number of reports. An
attribute is estimated as it is released on its own: a categorical one by its
frequencies (``values=`` for an open domain: the values named, as ``GET .../frequencies``
estimates them; no heavy-hitter search per period), a numeric one by its mean, and a
histogram attribute, when asked (``estimate=quantiles`` or ``q=``), by its quantiles, as
``GET .../quantiles`` estimates them. Each period, and each window of a difference, must
hold the collection's release minimum of reports.

A naive Bayes model or a kNN classifier is not one estimate with an interval, so neither
has a trend: both are refused, pointing at training over a window instead.

A difference of quantiles cannot add variances: a quantile's interval inverts the CDF's
band and is not ``estimate ± z·se``. Its interval combines the two windows' intervals by
MOVER, the method of variance estimates recovery (Zou and Donner, "Construction of
confidence limits about effect measures: a general approach", Statistics in Medicine 27,
2008, eq. 5–6): for ``d = θ₁ − θ₂`` with intervals ``(l₁, u₁)`` and ``(l₂, u₂)`` of
independent estimates,

    L = d − √((θ₁ − l₁)² + (u₂ − θ₂)²),   U = d + √((u₁ − θ₁)² + (θ₂ − l₂)²),

which is the normal interval when both intervals are symmetric and normal.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

import numpy as np
from sqlalchemy import Engine

from ldp_aggregator.frequencies import check_frequency_query, frequency_result, named_values
from ldp_aggregator.means import mean_result
from ldp_aggregator.quantiles import check_quantile_query, parse_levels, quantile_result
from ldp_aggregator.release import (
    central_of,
    check_confidence,
    current_stats,
    described,
    released_attribute,
    unknown_attribute,
    window_query,
)
from ldp_aggregator.storage.collections import StoredCollection
from ldp_aggregator.storage.stats import Stats, no_stats, read_period_stats
from ldp_shared.collection import CollectionConfig
from ldp_shared.errors import InsufficientReportsError, InvalidQueryError
from ldp_shared.kernel import z_value
from ldp_shared.periods import MAX_WINDOW_PERIODS, Window, period_label, period_start
from ldp_shared.wire.releases import FrequencyResult, MeanResult, QuantileResult
from ldp_shared.wire.trends import (
    DifferenceResult,
    ReleasedAs,
    TrendPoint,
    TrendResult,
    level_name,
)

Estimate = Literal["frequencies", "mean", "quantiles", "naive-bayes", "knn"]
"""What a trend may be asked to follow (``estimate=``); the last two are refused."""

TREND_LEVELS = "0.5"
"""The quantile levels a trend follows when ``q=`` names none: the median."""

Released = FrequencyResult | MeanResult | QuantileResult


def released_as(config: CollectionConfig, attribute: str) -> ReleasedAs:
    """How ``attribute`` is released on its own (the label: by its frequencies)."""
    if config.label is not None and attribute == config.label.name:
        return "frequencies"
    for candidate in config.attributes:
        if candidate.name == attribute:
            kind = config.spec_of(candidate).released_as
            return "mean" if kind == "mean" else "frequencies"
    raise unknown_attribute(config, attribute)


@dataclass(frozen=True)
class TrendQuery:
    """A checked query: the attribute, what is followed, and its options."""

    attribute: str
    kind: ReleasedAs
    confidence: float
    values: str | None = None
    levels: str | None = None


def _refuse_models(config: CollectionConfig, attribute: str, estimate: str | None) -> None:
    where = f"/v1/collections/{config.name}"
    if estimate == "naive-bayes":
        raise InvalidQueryError(
            "a naive Bayes model is not one estimate with an interval, so it has no trend:"
            f" train one model per window instead (POST {where}/models/naive-bayes?from=&to=),"
            " or follow the label's or a feature's frequencies (estimate=frequencies)"
        )
    knn = config.spec.knn
    if estimate == "knn" or (knn is not None and attribute in knn.attribute_names()):
        raise InvalidQueryError(
            "a kNN classifier is not one estimate with an interval, and its cell attributes"
            " are hashes of the features, so neither has a trend: classify over a window"
            f" instead (POST {where}/knn/classify?from=&to=), or follow the label's"
            " frequencies"
        )


def check_trend_query(
    config: CollectionConfig,
    attribute: str,
    confidence: float = 0.95,
    values: str | None = None,
    estimate: str | None = None,
    levels: str | None = None,
) -> TrendQuery:
    """The checked query of a trend or a difference. ``estimate`` defaults to how the
    attribute is released (``quantiles`` when ``levels`` are given); ``levels`` default to
    :data:`TREND_LEVELS`. :class:`InvalidQueryError` for anything that cannot be followed."""
    _refuse_models(config, attribute, estimate)
    own = released_as(config, attribute)
    kind = estimate or ("quantiles" if levels is not None else own)
    if kind not in ("frequencies", "mean", "quantiles"):
        raise InvalidQueryError(
            f"estimate must be frequencies, mean or quantiles, got {estimate!r}"
        )
    if kind != "quantiles" and levels is not None:
        raise InvalidQueryError(f"q= names quantile levels: leave it out for {kind}")
    if kind == "quantiles":
        check_quantile_query(config, attribute, levels or TREND_LEVELS, confidence)
        if values is not None:
            raise InvalidQueryError("quantiles follow levels (q=), not values: leave out values=")
        return TrendQuery(attribute, "quantiles", confidence, None, levels or TREND_LEVELS)
    if kind == "mean" or own == "mean":
        released_attribute(config, attribute, kind)  # refuses mean/frequencies mismatches
        check_confidence(confidence)
        if values is not None:
            raise InvalidQueryError(f"attribute {attribute!r} is numeric: leave out values=")
        return TrendQuery(attribute, "mean", confidence)
    index, _ = check_frequency_query(config, attribute, confidence, "none", values)
    if values is not None:
        named_values(config, index, values)
    return TrendQuery(attribute, "frequencies", confidence, values)


def estimate_of(config: CollectionConfig, stats: Stats, query: TrendQuery) -> Released:
    """The estimate a trend's point (or a window of a difference) holds."""
    if query.kind == "mean":
        return mean_result(config, stats, query.attribute, query.confidence)
    if query.kind == "quantiles":
        assert query.levels is not None
        return quantile_result(config, stats, query.attribute, query.levels, query.confidence)
    return frequency_result(config, stats, query.attribute, query.confidence, "none", query.values)


def trend_result(
    engine: Engine,
    collection: StoredCollection,
    attribute: str,
    first: str | None = None,
    last: str | None = None,
    confidence: float = 0.95,
    values: str | None = None,
    estimate: str | None = None,
    levels: str | None = None,
) -> TrendResult:
    """One estimate of ``attribute`` per period from ``first`` to ``last`` (default: from
    the first period holding reports to the current one), each withheld below the
    release minimum (``estimate``, ``levels``: :func:`check_trend_query`)."""
    config = collection.config
    query = check_trend_query(config, attribute, confidence, values, estimate, levels)
    asked = window_query(collection, first, last)
    with engine.connect() as connection:
        per_period = read_period_stats(
            connection, collection.id, config.stats_length, config.float_stats_length, asked
        )
    window = asked or _all_periods(config.spec.period, per_period)
    return trend_of(config, per_period, window, query)


def trend_of(
    config: CollectionConfig, per_period: dict[int, Stats], window: Window, query: TrendQuery
) -> TrendResult:
    """The trend over ``window`` of the statistics of each period (keyed by its start; a
    period missing holds no reports)."""
    if window.count > MAX_WINDOW_PERIODS:
        raise InvalidQueryError(
            f"the window {window.describe()} spans {window.count} periods; a trend lists at"
            f" most {MAX_WINDOW_PERIODS}: narrow from/to"
        )
    empty = no_stats(config.stats_length, config.float_stats_length)
    points = [
        _point(config, start, per_period.get(start, empty), query) for start in window.starts()
    ]
    levels = None if query.levels is None else parse_levels(query.levels).tolist()
    return TrendResult(
        collection=config.name,
        attribute=query.attribute,
        released_as=query.kind,
        confidence=query.confidence,
        window=described(window),
        levels=levels,
        points=points,
    )


def _all_periods(period: str, per_period: dict[int, Stats]) -> Window:
    current = period_start(datetime.now(UTC), period)
    first = min(per_period, default=current)
    return Window(period=period, first=min(first, current), last=current)


def _point(config: CollectionConfig, start: int, stats: Stats, query: TrendQuery) -> TrendPoint:
    period = config.spec.period
    point = {
        "period": period_label(start, period),
        "start": datetime.fromtimestamp(start, tz=UTC),
        "n_reports": stats.n_reports,
    }
    try:
        estimate = estimate_of(config, stats, query)
    except InsufficientReportsError as withheld:
        return TrendPoint.model_validate({**point, "withheld": str(withheld)})
    return TrendPoint.model_validate({**point, query.kind: estimate})


def difference_result(
    engine: Engine,
    collection: StoredCollection,
    attribute: str,
    window_bounds: tuple[str | None, str | None],
    baseline_bounds: tuple[str | None, str | None],
    confidence: float = 0.95,
    values: str | None = None,
    estimate: str | None = None,
    levels: str | None = None,
) -> DifferenceResult:
    """``attribute``'s estimate over one window minus its estimate over a baseline window
    that shares no period with it, with the interval of the difference (quantiles: MOVER,
    see the module)."""
    config = collection.config
    query = check_trend_query(config, attribute, confidence, values, estimate, levels)
    window = window_query(collection, *window_bounds)
    baseline = window_query(collection, *baseline_bounds)
    if window is None or baseline is None:
        raise InvalidQueryError(
            "a difference needs both windows: from/to and baseline_from/baseline_to"
        )
    if window.first <= baseline.last and baseline.first <= window.last:
        raise InvalidQueryError(
            f"the windows {window.describe()} and {baseline.describe()} share periods: a"
            " difference compares disjoint windows"
        )
    now = estimate_of(config, current_stats(engine, collection, window), query)
    then = estimate_of(config, current_stats(engine, collection, baseline), query)
    names, estimate_now, change = _values(now), _estimates(now), _estimates(now) - _estimates(then)
    if isinstance(now, QuantileResult) and isinstance(then, QuantileResult):
        low, high = mover_interval(now, then)
        stderr: list[float | None] = [None] * len(names)
        interval: Literal["normal", "mover"] = "mover"
    else:
        spread = np.sqrt(_stderrs(now) ** 2 + _stderrs(then) ** 2)
        z = z_value(confidence)
        low, high = change - z * spread, change + z * spread
        stderr, interval = list(spread.tolist()), "normal"
    return DifferenceResult(
        collection=config.name,
        attribute=attribute,
        released_as=query.kind,
        confidence=confidence,
        window=described(window),
        baseline=described(baseline),
        n_reports=now.n_reports,
        baseline_reports=then.n_reports,
        values=names,
        estimate=estimate_now.tolist(),
        baseline_estimate=_estimates(then).tolist(),
        difference=change.tolist(),
        stderr=stderr,
        ci_low=low.tolist(),
        ci_high=high.tolist(),
        interval=interval,
        central=central_of(config, min(now.n_reports, then.n_reports)),
    )


def mover_interval(now: QuantileResult, then: QuantileResult) -> tuple[np.ndarray, np.ndarray]:
    """The MOVER interval (see the module) of each level's ``now − then``."""
    theta1, theta2 = _estimates(now), _estimates(then)
    l1, u1 = _bounds(now)
    l2, u2 = _bounds(then)
    change = theta1 - theta2
    low = change - np.sqrt((theta1 - l1) ** 2 + (u2 - theta2) ** 2)
    high = change + np.sqrt((u1 - theta1) ** 2 + (theta2 - l2) ** 2)
    return low, high


def _values(result: Released) -> list[str]:
    if isinstance(result, MeanResult):
        return ["mean"]
    if isinstance(result, QuantileResult):
        return [level_name(q.probability) for q in result.quantiles]
    return list(result.values)


def _estimates(result: Released) -> np.ndarray:
    if isinstance(result, MeanResult):
        return np.array([result.mean])
    if isinstance(result, QuantileResult):
        return np.array([q.value for q in result.quantiles])
    return np.array(result.estimate)


def _bounds(result: QuantileResult) -> tuple[np.ndarray, np.ndarray]:
    low = np.array([q.ci_low for q in result.quantiles])
    return low, np.array([q.ci_high for q in result.quantiles])


def _stderrs(result: FrequencyResult | MeanResult | QuantileResult) -> np.ndarray:
    if isinstance(result, MeanResult):
        return np.array([result.stderr])
    assert isinstance(result, FrequencyResult)
    return np.array(result.stderr)
