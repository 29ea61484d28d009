"""The discrete Gaussian mechanism against its integer channel and its variance formula.

* Channel: at the levels ``k = 0, K/2, K`` the answers are multinomial over the cells
  with the channel's column (χ² per level, summed); power: the same test rejects the
  answers of the discrete Gaussian calibrated at ε·1.3 and ε/1.3 on the same lattice (its
  design checked beforehand from the noncentrality).
* Estimator: over R repetitions of n = 10⁴ reports from a fixed population, the mean is
  unbiased (z-test), its variance is the exact ``Σ_i Var(v_y | t_i)/n²`` (rounding
  included; χ² variance-ratio test, with power: the means of the mechanisms calibrated
  at ε·1.3 and ε/1.3 are rejected by the same test), and the released 95% intervals cover
  the truth 93–97% of the time.
* Spread: where the grid has ``K >= 16`` levels (ε = 8), the released variance of the
  values is unbiased up to the rounding's ``1/K²``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldp_shared.kernel import FloatArray
from ldp_shared.mechanisms import GaussianRandomizer
from ldp_shared.mechanisms.gaussian import SIGMAS, Calibration, gaussian_channel

from ._lattice_checks import (
    ages_population,
    assert_channel_with_power,
    assert_mean_unbiased_exact_covering,
    repeated_counts,
)
from ._stats import (
    ALPHA,
    assert_variance_power,
    variance_ratio_pvalue,
    wrong_epsilons,
)

pytestmark = pytest.mark.statistical

SEED = 7_500_001
DELTA = 1e-5
CASES: list[tuple[float, Calibration]] = [(1.0, "analytic"), (4.0, "analytic"), (0.5, "classical")]


def make(epsilon: float, calibration: Calibration = "analytic") -> GaussianRandomizer:
    return GaussianRandomizer(
        epsilon=epsilon, lo=-1.0, hi=1.0, target_delta=DELTA, calibration=calibration
    )


@pytest.mark.parametrize(("epsilon", "calibration"), CASES)
def test_answers_follow_the_integer_channel_and_a_wrong_epsilon_is_caught(
    epsilon: float, calibration: Calibration
) -> None:
    right = make(epsilon, calibration)
    k, margin = right.channel.levels, right.lattice.margin

    def wrong_ideal(wrong_eps: float) -> FloatArray:
        return gaussian_channel(SIGMAS[calibration](wrong_eps, DELTA, float(k)), k, margin)

    assert_channel_with_power(right, wrong_ideal, SEED)


REPETITIONS = 2_000
WRONG_REPETITIONS = 800
N = 10_000


@pytest.mark.parametrize(("epsilon", "calibration"), CASES[:2])
def test_the_mean_is_unbiased_its_variance_exact_and_its_intervals_cover(
    epsilon: float, calibration: Calibration
) -> None:
    t = ages_population(np.random.default_rng(SEED + 1), N)
    m = make(epsilon, calibration)  # t itself is the value
    released, exact_var = assert_mean_unbiased_exact_covering(m, t, REPETITIONS, SEED + 2)
    assert all(r.value_variance is None for r in released)  # K < 16: no spread released
    # power: the means of the mechanisms calibrated at the wrong ε fail the variance test
    for wrong_eps in wrong_epsilons(epsilon):
        wrong = make(wrong_eps, calibration)
        ratio = float(wrong.channel.report_variance(t).sum()) / N**2 / exact_var
        assert_variance_power(ratio, WRONG_REPETITIONS, ALPHA)
        counts = repeated_counts(wrong, t, WRONG_REPETITIONS, 3)
        wrong_means = counts / N @ wrong.channel.mean_decoder
        pvalue = variance_ratio_pvalue(float(wrong_means.var(ddof=1)), exact_var, WRONG_REPETITIONS)
        assert pvalue < ALPHA, wrong_eps


def test_the_spread_of_the_values_where_the_grid_allows_it() -> None:
    m = make(8.0)  # K = 16: the variance of the values is released
    assert m.channel.levels >= 16
    t = ages_population(np.random.default_rng(SEED + 4), N)
    released = [m.estimate_stats({"counts": c}, N, 0.95) for c in repeated_counts(m, t, 400, 5)]
    spread = np.array([r.value_variance[0] for r in released if r.value_variance is not None])
    assert spread.size == 400
    sd = float(spread.std(ddof=1)) / math.sqrt(spread.size)
    bias_bound = 1.0 / m.channel.levels**2  # the rounding inflates it by at most 1/K²
    assert -5 * sd <= spread.mean() - float(t.var()) <= bias_bound + 5 * sd
