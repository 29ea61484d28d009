"""Estimates over time: one estimate per period (a trend), and the change between two
windows (a difference).

Both read the per-period statistics only (:func:`~ldp_aggregator.storage.stats.read_period_stats`),
so their cost grows with the number of periods, never with the number of reports. An
attribute is estimated as it is released on its own: a categorical one by its
frequencies (``values=`` for an open domain), a numeric one by its mean. Each period, and
each window of a difference, must hold the collection's release minimum of reports.
"""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
from sqlalchemy import Engine

from ldp_aggregator.frequencies import check_frequency_query, frequency_result, named_values
from ldp_aggregator.means import mean_result
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
from ldp_shared.wire.releases import FrequencyResult, MeanResult
from ldp_shared.wire.trends import DifferenceResult, ReleasedAs, TrendPoint, TrendResult


def released_as(config: CollectionConfig, attribute: str) -> ReleasedAs:
    """How ``attribute`` is estimated over time (the label: by its frequencies)."""
    if config.label is not None and attribute == config.label.name:
        return "frequencies"
    for candidate in config.attributes:
        if candidate.name == attribute:
            kind = config.spec_of(candidate).released_as
            return "mean" if kind == "mean" else "frequencies"
    raise unknown_attribute(config, attribute)


def _check(
    config: CollectionConfig, attribute: str, confidence: float, values: str | None
) -> ReleasedAs:
    kind = released_as(config, attribute)
    if kind == "mean":
        released_attribute(config, attribute, "mean")
        check_confidence(confidence)
        if values is not None:
            raise InvalidQueryError(f"attribute {attribute!r} is numeric: leave out values=")
    else:
        index, _ = check_frequency_query(config, attribute, confidence, "none", values)
        if values is not None:
            named_values(config, index, values)
    return kind


def _estimate(
    config: CollectionConfig,
    stats: Stats,
    attribute: str,
    kind: ReleasedAs,
    confidence: float,
    values: str | None,
) -> FrequencyResult | MeanResult:
    if kind == "mean":
        return mean_result(config, stats, attribute, confidence)
    return frequency_result(config, stats, attribute, confidence, "none", values)


def trend_result(
    engine: Engine,
    collection: StoredCollection,
    attribute: str,
    first: str | None = None,
    last: str | None = None,
    confidence: float = 0.95,
    values: str | None = None,
) -> TrendResult:
    """One estimate of ``attribute`` per period from ``first`` to ``last`` (default: from
    the first period holding reports to the current one), each withheld below the
    release minimum."""
    config = collection.config
    kind = _check(config, attribute, confidence, values)
    period = config.spec.period
    asked = window_query(collection, first, last)
    with engine.connect() as connection:
        per_period = read_period_stats(
            connection, collection.id, config.stats_length, config.float_stats_length, asked
        )
    window = asked or _all_periods(period, per_period)
    if window.count > MAX_WINDOW_PERIODS:
        raise InvalidQueryError(
            f"the window {window.describe()} spans {window.count} periods; a trend lists at"
            f" most {MAX_WINDOW_PERIODS}: narrow from/to"
        )
    empty = no_stats(config.stats_length, config.float_stats_length)
    points = [
        _point(config, start, per_period.get(start, empty), attribute, kind, confidence, values)
        for start in window.starts()
    ]
    return TrendResult(
        collection=config.name,
        attribute=attribute,
        released_as=kind,
        confidence=confidence,
        window=described(window),
        points=points,
    )


def _all_periods(period: str, per_period: dict[int, Stats]) -> Window:
    current = period_start(datetime.now(UTC), period)
    first = min(per_period, default=current)
    return Window(period=period, first=min(first, current), last=current)


def _point(
    config: CollectionConfig,
    start: int,
    stats: Stats,
    attribute: str,
    kind: ReleasedAs,
    confidence: float,
    values: str | None,
) -> TrendPoint:
    period = config.spec.period
    point = {
        "period": period_label(start, period),
        "start": datetime.fromtimestamp(start, tz=UTC),
        "n_reports": stats.n_reports,
    }
    try:
        estimate = _estimate(config, stats, attribute, kind, confidence, values)
    except InsufficientReportsError as withheld:
        return TrendPoint.model_validate({**point, "withheld": str(withheld)})
    return TrendPoint.model_validate({**point, kind: estimate})


def difference_result(
    engine: Engine,
    collection: StoredCollection,
    attribute: str,
    window_bounds: tuple[str | None, str | None],
    baseline_bounds: tuple[str | None, str | None],
    confidence: float = 0.95,
    values: str | None = None,
) -> DifferenceResult:
    """``attribute``'s estimate over one window minus its estimate over a baseline window
    that shares no period with it, with the interval of the difference."""
    config = collection.config
    kind = _check(config, attribute, confidence, values)
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
    now = _estimate(
        config, current_stats(engine, collection, window), attribute, kind, confidence, values
    )
    then = _estimate(
        config, current_stats(engine, collection, baseline), attribute, kind, confidence, values
    )
    estimate, spread, names = _vectors(now, attribute)
    base, base_spread, _ = _vectors(then, attribute)
    change = estimate - base
    stderr = np.sqrt(spread**2 + base_spread**2)
    z = z_value(confidence)
    return DifferenceResult(
        collection=config.name,
        attribute=attribute,
        released_as=kind,
        confidence=confidence,
        window=described(window),
        baseline=described(baseline),
        n_reports=now.n_reports,
        baseline_reports=then.n_reports,
        values=names,
        estimate=estimate.tolist(),
        baseline_estimate=base.tolist(),
        difference=change.tolist(),
        stderr=stderr.tolist(),
        ci_low=(change - z * stderr).tolist(),
        ci_high=(change + z * stderr).tolist(),
        central=central_of(config, min(now.n_reports, then.n_reports)),
    )


def _vectors(
    result: FrequencyResult | MeanResult, attribute: str
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    if isinstance(result, MeanResult):
        return np.array([result.mean]), np.array([result.stderr]), ["mean"]
    return np.array(result.estimate), np.array(result.stderr), list(result.values)
