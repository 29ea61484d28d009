"""A quantile trend's per-period intervals cover each period's true quantile at their
level, and a difference of two windows' quantiles (MOVER) covers the true change.

A histogram attribute drifts over ``R`` days: day ``t``'s values fall in the bins with
probabilities ``(1 − w)·P_A + w·P_B`` (``w = t/(R − 1)``), uniformly within a bin, so the
true quantile is exactly the interpolated one the estimator targets
(:mod:`ldp_shared.analyses.quantiles`). Each day's ``n`` values are privatized by the
client's code and counted into that day's statistics; the trend is then made by
:func:`ldp_aggregator.trends.trend_of`, the code behind ``GET .../trend``, from those
statistics. Days are independent, so the count of covering intervals at one level is
Binomial(R, 0.95) (the normal approximation of a pointwise band): a two-sided z-test per
level, Bonferroni over the levels. The difference test pairs day ``t`` with day
``t + R/2`` (disjoint reports), the same way.

Power: the same tests, against the same estimator at ε, reject days whose reports come
from the channel at ε·1.3 and ε/1.3 (the layout is the same: the channel is GRR at every
ε). The trend's design is checked first: the coverage expected under the wrong ε
(normal approximation at the expected statistics, averaged over the days) must be
detectable with :data:`POWER_MARGIN_SD` to spare.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from statistics import NormalDist

import numpy as np
import pytest
from numpy.typing import NDArray

from ldp_aggregator.storage.stats import Stats, statistics_of
from ldp_aggregator.trends import check_trend_query, estimate_of, mover_interval, trend_of
from ldp_shared.analyses.ordinal import normalised
from ldp_shared.codec import Privatizer
from ldp_shared.collection import CollectionConfig, build_config
from ldp_shared.kernel import z_value
from ldp_shared.mechanisms import GeneralizedRandomizedResponse
from ldp_shared.periods import PERIOD_SECONDS, Window, period_start
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import CollectionSpec
from ldp_shared.wire.releases import QuantileResult

from ._stats import ALPHA, assert_z_power, binomial_pvalue, bonferroni_reject, wrong_epsilons

pytestmark = pytest.mark.statistical

SEED = 20_000_020
DAYS = 600
PER_DAY = 2_000
EPSILON = 2.0
COVERAGE = 0.95
EDGES = [0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0]
P_A = np.array([0.30, 0.25, 0.20, 0.12, 0.08, 0.05])
P_B = P_A[::-1].copy()
LEVELS = [0.25, 0.5, 0.75]
FIRST = period_start(datetime(2025, 1, 1, tzinfo=UTC), "day")
WINDOW = Window(period="day", first=FIRST, last=FIRST + (DAYS - 1) * PERIOD_SECONDS["day"])


def _config(epsilon: float) -> CollectionConfig:
    spec = {
        "name": "drift",
        "epsilon": epsilon,
        "release": {"min_reports": 100},
        "attributes": [{"name": "x", "mechanism": "histogram", "edges": EDGES, "channel": "grr"}],
    }
    return build_config(CollectionSpec.model_validate(spec))


def _shares(day: int) -> NDArray[np.float64]:
    w = day / (DAYS - 1)
    return np.asarray((1.0 - w) * P_A + w * P_B)


def _truth(shares: NDArray[np.float64]) -> NDArray[np.float64]:
    cdf = np.concatenate([[0.0], np.cumsum(shares)])
    return np.asarray(np.interp(LEVELS, cdf, EDGES))


def _days(data_epsilon: float, seed: int) -> dict[int, Stats]:
    """Each day's statistics (keyed by its start), from reports made at ``data_epsilon``."""
    privatizer, gen = Privatizer(_config(data_epsilon)), seeded_rng(seed)
    estimator = _config(EPSILON)
    out = {}
    for day, start in enumerate(WINDOW.starts()):
        bins = gen.choice(len(P_A), size=PER_DAY, p=_shares(day))
        values = np.asarray(EDGES)[bins] + gen.random(PER_DAY) * np.diff(EDGES)[bins]
        out[start] = statistics_of(estimator, privatizer.privatize_columns({"x": values}, gen))
    return out


def _quantiles(config: CollectionConfig, stats: Stats) -> QuantileResult:
    query = check_trend_query(config, "x", COVERAGE, None, "quantiles", ",".join(map(str, LEVELS)))
    found = estimate_of(config, stats, query)
    assert isinstance(found, QuantileResult)
    return found


def _trend_covered(per_day: dict[int, Stats]) -> NDArray[np.int64]:
    """Per level, how many days' intervals in the trend cover that day's truth."""
    config = _config(EPSILON)
    query = check_trend_query(config, "x", COVERAGE, None, "quantiles", ",".join(map(str, LEVELS)))
    trend = trend_of(config, per_day, WINDOW, query)
    assert trend.levels == LEVELS and len(trend.points) == DAYS
    covered = np.zeros(len(LEVELS), dtype=np.int64)
    for day, point in enumerate(trend.points):
        if point.quantiles is None:  # too noisy to normalise: no interval, nothing covered
            continue
        found = point.quantiles.quantiles
        covered += [
            q.ci_low <= t <= q.ci_high for q, t in zip(found, _truth(_shares(day)), strict=True)
        ]
    return covered


def _difference_covered(per_day: dict[int, Stats]) -> NDArray[np.int64]:
    """Per level, how many of the DAYS/2 pairs (day t + DAYS/2 minus day t) have a MOVER
    interval covering the true change."""
    config, starts, half = _config(EPSILON), WINDOW.starts(), DAYS // 2
    covered = np.zeros(len(LEVELS), dtype=np.int64)
    for day in range(half):
        now = _quantiles(config, per_day[starts[day + half]])
        then = _quantiles(config, per_day[starts[day]])
        low, high = mover_interval(now, then)
        change = _truth(_shares(day + half)) - _truth(_shares(day))
        covered += (low <= change) & (change <= high)
    return covered


def _pvalues(covered: NDArray[np.int64], trials: int) -> list[float]:
    return [binomial_pvalue(int(c), trials, COVERAGE) for c in covered]


def _expected_coverage(data_epsilon: float) -> float:
    """The trend's coverage expected with reports at ``data_epsilon`` (normal
    approximation of the estimated CDF at each day's true quantile, at the expected
    statistics), averaged over the days and levels."""
    estimator = _config(EPSILON).randomizer(_config(EPSILON).attributes[0])
    data = _config(data_epsilon).randomizer(_config(data_epsilon).attributes[0])
    assert isinstance(data, GeneralizedRandomizedResponse)
    z, total = z_value(COVERAGE), 0.0
    for day in range(DAYS):
        stats = {"counts": PER_DAY * (data.channel_matrix() @ _shares(day))}
        estimate = estimator.estimate_stats(stats, PER_DAY, COVERAGE).estimate
        g, w = normalised(estimate, estimator.frequency_covariance(stats, PER_DAY))
        for q, x in zip(LEVELS, _truth(_shares(day)), strict=True):
            k = int(np.searchsorted(EDGES, x, side="right") - 1)
            gradient = np.zeros(g.size)
            gradient[:k] = 1.0
            gradient[k] = (x - EDGES[k]) / (EDGES[k + 1] - EDGES[k])
            mean, se = float(gradient @ g), math.sqrt(float(gradient @ w @ gradient))
            normal = NormalDist(mean, se)
            total += normal.cdf(q + z * se) - normal.cdf(q - z * se)
    return total / (DAYS * len(LEVELS))


def test_per_period_quantile_intervals_cover() -> None:
    per_day = _days(EPSILON, SEED)
    trend = _trend_covered(per_day)
    assert all(p >= ALPHA / len(LEVELS) for p in _pvalues(trend, DAYS)), trend / DAYS
    change = _difference_covered(per_day)
    pvalues = _pvalues(change, DAYS // 2)
    assert all(p >= ALPHA / len(LEVELS) for p in pvalues), change / (DAYS // 2)


def test_per_period_quantile_intervals_cover_power() -> None:
    for k, wrong in enumerate(wrong_epsilons(EPSILON)):
        assert_z_power(DAYS, COVERAGE, _expected_coverage(wrong), ALPHA / len(LEVELS))
        per_day = _days(wrong, SEED + 1 + k)
        trend = _trend_covered(per_day)
        assert bonferroni_reject(_pvalues(trend, DAYS)), trend / DAYS
        change = _difference_covered(per_day)
        assert bonferroni_reject(_pvalues(change, DAYS // 2)), change / (DAYS // 2)
