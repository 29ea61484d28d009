"""Duchi et al.'s one-bit mechanism against its stated channel and its mean's variance.

* Channel: at fixed scaled values ``t``, the ``+C`` answers are Binomial(n, P(+C|t))
  (z-tests, Bonferroni over the ``t``s); power: the same test rejects the answers of the
  mechanism built with ε·1.3 and ε/1.3.
* Estimator: over R repetitions of n = 10⁴ reports from a fixed population, the mean is
  unbiased (z-test), its variance is the exact ``(C² − mean t²)/n`` (χ² variance-ratio
  test; power against the variances at ε·1.3 and ε/1.3 where they differ enough to be
  seen with R = 2,000, i.e. ε ≤ 1: at ε = 4, C ≈ 1.04 moves the variance by only 6%, and
  the channel test above carries the power), and the released 95% intervals
  (conservative plug-in standard error) cover the truth 93–97% of the time.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldp_shared.mechanisms import DuchiRandomizer
from ldp_shared.rand import seeded_rng

from ._stats import (
    ALPHA,
    assert_variance_power,
    assert_z_power,
    binomial_pvalue,
    bonferroni_reject,
    normal_two_sided_pvalue,
    variance_ratio_pvalue,
    wrong_epsilons,
)

pytestmark = pytest.mark.statistical

SEED = 7_300_001
T_VALUES = np.array([-1.0, -0.5, 0.5, 1.0])
PER_T = 40_000
EPSILONS = [0.5, 1.0, 4.0]


def channel_pvalues(right: DuchiRandomizer, answers: np.ndarray) -> list[float]:
    expected = right.positive_probability(T_VALUES)
    counts = answers.reshape(len(T_VALUES), PER_T).sum(axis=1)
    return [binomial_pvalue(int(k), PER_T, float(p)) for k, p in zip(counts, expected, strict=True)]


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_answers_follow_the_stated_channel_and_a_wrong_epsilon_is_caught(epsilon: float) -> None:
    right = DuchiRandomizer(epsilon=epsilon, lo=0.0, hi=1.0)
    values = np.repeat(T_VALUES, PER_T)
    rng = seeded_rng(SEED)
    assert not bonferroni_reject(channel_pvalues(right, right.perturb(values, rng)), ALPHA)
    alpha_each = ALPHA / len(T_VALUES)
    for wrong_eps in wrong_epsilons(epsilon):
        wrong = DuchiRandomizer(epsilon=wrong_eps, lo=0.0, hi=1.0)
        p_right = float(right.positive_probability(np.array([1.0]))[0])
        p_wrong = float(wrong.positive_probability(np.array([1.0]))[0])
        assert_z_power(PER_T, p_right, p_wrong, alpha_each)
        answers = wrong.perturb(values, rng)
        assert bonferroni_reject(channel_pvalues(right, answers), ALPHA), wrong_eps


REPETITIONS = 2_000
N = 10_000


def _population(rng: np.random.Generator) -> np.ndarray:
    # ages-like: skewed, spread over the bounds [17, 90] → t in [-1, 1]
    ages = np.clip(17 + rng.gamma(4.0, 6.0, size=N), 17, 90)
    return 2 * (ages - 17) / 73 - 1


def _repeated_means(m: DuchiRandomizer, t: np.ndarray, seed: int) -> np.ndarray:
    answers = m.perturb(np.tile(t, REPETITIONS), seeded_rng(seed)).reshape(REPETITIONS, N)
    return np.asarray(m.c * (2.0 * answers.mean(axis=1) - 1.0))


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_the_mean_is_unbiased_its_variance_exact_and_its_intervals_cover(epsilon: float) -> None:
    t = _population(np.random.default_rng(SEED + 1))
    truth = float(t.mean())
    m = DuchiRandomizer(epsilon=epsilon, lo=-1.0, hi=1.0)  # t itself is the value
    exact_var = (m.c**2 - float(np.mean(t**2))) / N
    means = _repeated_means(m, t, SEED + 2)
    # unbiased
    z = (means.mean() - truth) / math.sqrt(exact_var / REPETITIONS)
    assert normal_two_sided_pvalue(z) > ALPHA, z
    # the variance formula, with power against a mechanism at the wrong ε
    assert variance_ratio_pvalue(float(means.var(ddof=1)), exact_var, REPETITIONS) > ALPHA
    for wrong_eps in wrong_epsilons(epsilon) if epsilon <= 1.0 else []:
        wrong = DuchiRandomizer(epsilon=wrong_eps, lo=-1.0, hi=1.0)
        ratio = (wrong.c**2 - float(np.mean(t**2))) / N / exact_var
        assert_variance_power(ratio, REPETITIONS, ALPHA)
        wrong_means = _repeated_means(wrong, t, SEED + 3)
        assert variance_ratio_pvalue(float(wrong_means.var(ddof=1)), exact_var, REPETITIONS) < ALPHA
    # the released intervals: each repetition's estimate as the aggregator computes it
    positives = (means / m.c + 1.0) / 2.0 * N
    covered = 0
    for count in np.rint(positives):
        released = m.estimate_stats({"positive": np.array([count])}, N, 0.95)
        covered += int(released.ci_low[0] <= truth <= released.ci_high[0])
    coverage = covered / REPETITIONS
    assert 0.93 <= coverage <= 0.97, coverage


def test_the_released_estimate_uses_the_same_formulas() -> None:
    m = DuchiRandomizer(epsilon=1.0, lo=17.0, hi=90.0)
    released = m.estimate_stats({"positive": np.array([5_600])}, 10_000, 0.95)
    t_hat = m.c * (2 * 0.56 - 1)
    assert released.estimate[0] == pytest.approx(17 + (t_hat + 1) * 73 / 2, rel=1e-12)
    assert released.stderr[0] == pytest.approx(math.sqrt((m.c**2 - t_hat**2) / 10_000) * 36.5)
