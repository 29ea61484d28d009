"""The exponential mechanism against its stated channel and its estimator's formulas.

* Channel: the ``d × d`` table of (true, reported) against ``channel_matrix()`` (per-row
  χ², ``d(d-1)`` df).
* Estimator, over ``R`` repetitions of ``n`` users drawn i.i.d. from ``f``: the mean of
  ``f̂`` is ``f`` (z-tests), its variance is the diagonal of ``M^-1 Σ M^-T / n`` at the
  truth (χ² variance-ratio tests), the 95% intervals from the plug-in covariance cover
  ``f`` 93-97% of the time, and the mean rank's variance is ``r V rᵀ``.
* The central mechanism: Gumbel-max draws follow :func:`exponential_probabilities`.

Power: each test, still against the RIGHT parameters, rejects data from a mechanism
built with ε·1.3 and ε/1.3; the designs are checked beforehand (noncentrality of the χ²,
the z-test's expected statistic, the variance ratio) so that the sizes follow from the
design, not from trying seeds.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from numpy.typing import NDArray

from ldp_shared.analyses.ibu import mean_rank
from ldp_shared.mechanisms.central_exponential import (
    exponential_mechanism,
    exponential_probabilities,
)
from ldp_shared.mechanisms.exponential import (
    ExponentialRandomizer,
)
from ldp_shared.rand import seeded_rng

from ._stats import (
    ALPHA,
    POWER_MARGIN_SD,
    assert_variance_power,
    bonferroni_reject,
    chi2_gof,
    chi2_gof_rows,
    chi2_quantile,
    normal_two_sided_pvalue,
    variance_ratio_pvalue,
    wrong_epsilons,
    z_critical,
)

pytestmark = pytest.mark.statistical

SEED = 7_770_001
CUSTOM = ((0.0, 1.0, 2.0, 3.0), (1.0, 0.0, 1.0, 2.0), (3.0, 2.0, 0.0, 1.0), (0.0, 0.0, 1.0, 5.0))
Case = tuple[int, float, object, str]
CASES = {
    "ordinal-d5-tight": (5, 1.0, "ordinal", "tight"),
    "ordinal-d12-textbook": (12, 2.0, "ordinal", "textbook"),
    "custom-d4-tight": (4, 1.0, CUSTOM, "tight"),
}
PER_VALUE = 20_000  # channel test: reports per true value
REPETITIONS = 1_000
USERS = {"ordinal-d5-tight": 2_000, "ordinal-d12-textbook": 8_000, "custom-d4-tight": 2_000}


def _mechanism(case: str, epsilon: float | None = None) -> ExponentialRandomizer:
    d, eps, utility, calibration = CASES[case]
    return ExponentialRandomizer(d, eps if epsilon is None else epsilon, utility, calibration)  # type: ignore[arg-type]


def _truth(d: int) -> NDArray[np.float64]:
    f = np.linspace(1.0, 2.0, d)
    return f / f.sum()


# --- the channel -----------------------------------------------------------------------


def _table(mech: ExponentialRandomizer, seed: int) -> NDArray[np.int64]:
    values = np.tile(np.arange(mech.d), PER_VALUE)
    reported = mech.perturb(values, seeded_rng(seed))
    table = np.zeros((mech.d, mech.d), dtype=np.int64)
    np.add.at(table, (values, reported), 1)
    return table


def _assert_chi2_power(right: ExponentialRandomizer, wrong: ExponentialRandomizer) -> None:
    """Noncentral χ²: mean ``df + λ``, variance ``2(df + 2λ)``; require the mean to clear
    the critical value by POWER_MARGIN_SD standard deviations."""
    m, w = right.channel_matrix(), wrong.channel_matrix()
    noncentrality = PER_VALUE * float(np.sum((w - m) ** 2 / m))
    df = right.d * (right.d - 1)
    spread = math.sqrt(2.0 * (df + 2.0 * noncentrality))
    assert df + noncentrality - POWER_MARGIN_SD * spread > chi2_quantile(1.0 - ALPHA, df)


@pytest.mark.parametrize("case", CASES)
def test_reports_follow_the_channel(case: str) -> None:
    mech = _mechanism(case)
    result = chi2_gof_rows(_table(mech, SEED), mech.channel_matrix().T, pool=False)
    assert result.df == mech.d * (mech.d - 1)
    assert result.pvalue >= ALPHA


@pytest.mark.parametrize("case", CASES)
def test_reports_follow_the_channel_power(case: str) -> None:
    right = _mechanism(case)
    for wrong_eps in wrong_epsilons(CASES[case][1]):
        wrong = _mechanism(case, wrong_eps)
        _assert_chi2_power(right, wrong)
        table = _table(wrong, SEED + 1)
        assert chi2_gof_rows(table, right.channel_matrix().T, pool=False).pvalue < ALPHA


# --- the estimator -----------------------------------------------------------------------


def _repetitions(
    mech: ExponentialRandomizer, estimator: ExponentialRandomizer, n: int, seed: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``R × d`` estimates (with ``estimator``'s channel) and their plug-in standard
    errors, each from ``n`` users drawn from the truth and perturbed by ``mech``."""
    d = mech.d
    values = seeded_rng(seed).choice(d, size=REPETITIONS * n, p=_truth(d))
    reported = mech.perturb(values, seeded_rng(seed + 1))
    rep = np.repeat(np.arange(REPETITIONS), n)
    counts = np.bincount(rep * d + reported, minlength=REPETITIONS * d).reshape(-1, d)
    estimates = np.empty((REPETITIONS, d))
    stderr = np.empty((REPETITIONS, d))
    for r in range(REPETITIONS):
        est = estimator.estimate_stats({"counts": counts[r]}, n, 0.95)
        estimates[r], stderr[r] = est.estimate, est.stderr
    return estimates, stderr


def _covariance(
    mech: ExponentialRandomizer, data: ExponentialRandomizer, n: int
) -> NDArray[np.float64]:
    """The exact covariance of ``mech``'s estimate of reports from ``data``'s channel."""
    pi = data.channel_matrix() @ _truth(mech.d)
    inverse = mech.channel.inverse
    covariance: NDArray[np.float64] = inverse @ (np.diag(pi) - np.outer(pi, pi)) @ inverse.T / n
    return covariance


def _mean_pvalues(estimates: NDArray[np.float64], variance: NDArray[np.float64]) -> list[float]:
    z = (estimates.mean(axis=0) - _truth(estimates.shape[1])) / np.sqrt(variance / REPETITIONS)
    return [normal_two_sided_pvalue(float(v)) for v in z]


def _variance_pvalues(estimates: NDArray[np.float64], variance: NDArray[np.float64]) -> list[float]:
    sample = estimates.var(axis=0, ddof=1)
    return [
        variance_ratio_pvalue(float(s), float(v), REPETITIONS)
        for s, v in zip(sample, variance, strict=True)
    ]


@pytest.mark.parametrize("case", CASES)
def test_estimate_is_unbiased_with_the_stated_variance_and_coverage(case: str) -> None:
    mech, n = _mechanism(case), USERS[case]
    estimates, stderr = _repetitions(mech, mech, n, SEED + 2)
    variance = np.diag(_covariance(mech, mech, n))
    assert not bonferroni_reject(_mean_pvalues(estimates, variance))
    assert not bonferroni_reject(_variance_pvalues(estimates, variance))
    z = z_critical(0.05)
    covered = np.abs(estimates - _truth(mech.d)) <= z * stderr
    assert 0.93 <= covered.mean() <= 0.97, covered.mean()
    # the mean rank, a linear functional, has variance r V rᵀ
    ranks = np.arange(mech.d, dtype=np.float64)
    exact = mean_rank(_truth(mech.d), _covariance(mech, mech, n))
    assert (
        variance_ratio_pvalue(float((estimates @ ranks).var(ddof=1)), exact.stderr**2, REPETITIONS)
        >= ALPHA
    )


@pytest.mark.parametrize("case", CASES)
def test_estimate_tests_power(case: str) -> None:
    """Reports from a mis-calibrated mechanism: estimated with the right channel they are
    biased (the mean test rejects); estimated with their own channel they are unbiased
    but their variance is not the right one (the variance test rejects)."""
    right, n = _mechanism(case), USERS[case]
    d = right.d
    alpha = ALPHA / d  # Bonferroni over the values
    right_var = np.diag(_covariance(right, right, n))
    for k, wrong_eps in enumerate(wrong_epsilons(CASES[case][1])):
        wrong = _mechanism(case, wrong_eps)
        bias = right.channel.inverse @ wrong.channel_matrix() @ _truth(d) - _truth(d)
        spread = np.sqrt(np.diag(_covariance(right, wrong, n)) / right_var)
        expected_z = np.abs(bias) / np.sqrt(right_var / REPETITIONS)
        assert np.max(expected_z - z_critical(alpha) - POWER_MARGIN_SD * spread) > 0.0
        biased, _ = _repetitions(wrong, right, n, SEED + 3 + k)
        assert bonferroni_reject(_mean_pvalues(biased, right_var))
        ratio = np.diag(_covariance(wrong, wrong, n)) / right_var
        best = int(np.argmax(np.abs(np.log(ratio))))
        assert_variance_power(float(ratio[best]), REPETITIONS, alpha)
        own, _ = _repetitions(wrong, wrong, n, SEED + 5 + k)
        assert bonferroni_reject(_variance_pvalues(own, right_var))


# --- the central mechanism -------------------------------------------------------------

SCORES = [24.0, 8.0, 28.0, 5.0]
DRAWS = 200_000


@pytest.mark.parametrize("epsilon", [0.1, 0.3])
def test_central_draws_follow_the_probabilities(epsilon: float) -> None:
    draws = exponential_mechanism(SCORES, epsilon, 1.0, seeded_rng(SEED + 7), size=DRAWS)
    counts = np.bincount(draws, minlength=4)
    assert chi2_gof(counts, exponential_probabilities(SCORES, epsilon, 1.0)).pvalue >= ALPHA


@pytest.mark.parametrize("epsilon", [0.1, 0.3])
def test_central_draws_power(epsilon: float) -> None:
    right = exponential_probabilities(SCORES, epsilon, 1.0)
    for wrong_eps in wrong_epsilons(epsilon):
        wrong = exponential_probabilities(SCORES, wrong_eps, 1.0)
        noncentrality = DRAWS * float(np.sum((wrong - right) ** 2 / right))
        spread = math.sqrt(2.0 * (3 + 2.0 * noncentrality))
        assert 3 + noncentrality - POWER_MARGIN_SD * spread > chi2_quantile(1.0 - ALPHA, 3)
        draws = exponential_mechanism(SCORES, wrong_eps, 1.0, seeded_rng(SEED + 8), size=DRAWS)
        counts = np.bincount(draws, minlength=4)
        assert chi2_gof(counts, right).pvalue < ALPHA
