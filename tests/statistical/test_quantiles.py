"""Quantile intervals of histogram attributes cover the true quantile at their level.

Values are drawn uniformly within bins chosen from a fixed distribution, so the true
quantile is exactly the interpolated one the estimator targets. Over ``R`` seeded runs of
``n = 10⁴`` values each, pushed through the device's encoding and the histogram's own
channel, the count of intervals that cover the true quantile is Binomial(R, 0.95) (the
normal approximation of a pointwise band): a two-sided z-test per level, Bonferroni over
levels and cases.

Power: the same test, against the same estimator (built at ε), rejects runs whose
reports come from the channel at ε·1.3 and ε/1.3. The design is checked first: the
coverage expected under the wrong ε (normal approximation at the expected statistics)
must be detectable by the z-test with :data:`POWER_MARGIN_SD` to spare at one level.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from ldp_shared.analyses.ordinal import normalised
from ldp_shared.analyses.quantiles import binned_quantiles
from ldp_shared.errors import InsufficientReportsError
from ldp_shared.kernel import z_value
from ldp_shared.mechanisms import AttributeSpec, GeneralizedRandomizedResponse, HistogramSpec
from ldp_shared.rand import seeded_rng

from ._stats import ALPHA, assert_z_power, binomial_pvalue, bonferroni_reject, wrong_epsilons

pytestmark = pytest.mark.statistical

SEED = 8_120_001
RUNS = 400
USERS = 10_000
LEVELS = [0.25, 0.5, 0.9]
COVERAGE = 0.95
# (edges, bin probabilities, ε): an Adult-like age with 6 bins (auto: GRR), and a
# right-skewed income-like number over 12 bins (auto at ε = 1: OUE)
CASES: dict[str, tuple[list[float], list[float], float]] = {
    "age-grr": ([17, 25, 35, 45, 55, 65, 90], [0.15, 0.25, 0.22, 0.18, 0.12, 0.08], 1.0),
    "skewed-oue": (
        [0, 5, 10, 15, 20, 25, 30, 40, 50, 70, 100, 150, 250],
        [0.06, 0.14, 0.17, 0.15, 0.12, 0.09, 0.1, 0.06, 0.05, 0.03, 0.02, 0.01],
        1.0,
    ),
}
TESTS = len(CASES) * len(LEVELS)


def _spec(case: str) -> HistogramSpec:
    spec = AttributeSpec.model_validate(
        {"name": "x", "mechanism": "histogram", "edges": CASES[case][0]}
    )
    assert isinstance(spec, HistogramSpec)
    return spec


def _truth(case: str) -> NDArray[np.float64]:
    edges, probabilities, _ = CASES[case]
    cdf = np.concatenate([[0.0], np.cumsum(probabilities)])
    return np.interp(LEVELS, cdf, edges)


def _covered(case: str, data_epsilon: float, seed: int) -> NDArray[np.int64]:
    """How many of RUNS intervals cover the true quantile, per level, with reports from
    the channel at ``data_epsilon`` and the estimator at the case's ε."""
    edges, probabilities, epsilon = CASES[case]
    spec, gen = _spec(case), seeded_rng(seed)
    estimator, data = spec.randomizer(epsilon), spec.randomizer(data_epsilon)
    assert type(estimator) is type(data)  # the same channel at both ε
    truth = _truth(case)
    covered = np.zeros(len(LEVELS), dtype=np.int64)
    for _ in range(RUNS):
        bins = gen.choice(len(probabilities), size=USERS, p=probabilities)
        values = np.asarray(edges)[bins] + gen.random(USERS) * np.diff(edges)[bins]
        stats = data.accumulate(data.perturb(spec.encode(values), gen))
        estimate = estimator.estimate_stats(stats, USERS, COVERAGE).estimate
        covariance = estimator.frequency_covariance(stats, USERS)
        try:
            found = binned_quantiles(edges, estimate, covariance, LEVELS, COVERAGE)
        except InsufficientReportsError:  # a total <= 0: no interval, so nothing covered
            continue
        covered += [r.ci_low <= t <= r.ci_high for r, t in zip(found, truth, strict=True)]
    return covered


def _expected_coverage(case: str, data_epsilon: float) -> list[float]:
    """Normal approximation: the estimator's CDF at the true quantile has the mean and
    (plug-in) standard error it has at the expected statistics of the wrong channel."""
    edges, probabilities, epsilon = CASES[case]
    spec = _spec(case)
    estimator, data = spec.randomizer(epsilon), spec.randomizer(data_epsilon)
    f = np.asarray(probabilities)
    if isinstance(data, GeneralizedRandomizedResponse):
        counts = USERS * (data.channel_matrix() @ f)
    else:
        counts = USERS * (data.q + (data.p - data.q) * f)  # type: ignore[attr-defined]
    stats: Any = {"counts": counts}
    estimate = estimator.estimate_stats(stats, USERS, COVERAGE).estimate
    if estimate.sum() <= 0.0:  # unary encoding's total can go negative: no interval at all
        return [0.0] * len(LEVELS)
    g, w = normalised(estimate, estimator.frequency_covariance(stats, USERS))
    z, out = z_value(COVERAGE), []
    for x in _truth(case):
        k = int(np.searchsorted(edges, x, side="right") - 1)
        gradient = np.zeros(g.size)
        gradient[:k] = 1.0
        gradient[k] = (x - edges[k]) / (edges[k + 1] - edges[k])
        mean, se = float(gradient @ g), math.sqrt(float(gradient @ w @ gradient))
        q = LEVELS[len(out)]
        normal = NormalDist(mean, se)
        out.append(normal.cdf(q + z * se) - normal.cdf(q - z * se))
    return out


def _pvalues(covered: NDArray[np.int64]) -> list[float]:
    return [binomial_pvalue(int(c), RUNS, COVERAGE) for c in covered]


@pytest.mark.parametrize("case", CASES)
def test_intervals_cover_the_true_quantile(case: str) -> None:
    covered = _covered(case, CASES[case][2], SEED)
    assert all(p >= ALPHA / TESTS for p in _pvalues(covered)), covered / RUNS


@pytest.mark.parametrize("case", CASES)
def test_intervals_cover_the_true_quantile_power(case: str) -> None:
    for k, wrong in enumerate(wrong_epsilons(CASES[case][2])):
        expected = _expected_coverage(case, wrong)
        best = int(np.argmax(np.abs(np.asarray(expected) - COVERAGE)))
        assert_z_power(RUNS, COVERAGE, expected[best], ALPHA / TESTS)
        covered = _covered(case, wrong, SEED + 1 + k)
        assert bonferroni_reject(_pvalues(covered), ALPHA / len(CASES)), covered / RUNS
