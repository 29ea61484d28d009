"""IBU converges to the truth as n grows, at the rate its asymptotic covariance states.

For an interior truth the maximum of the likelihood on the simplex is, asymptotically,
the unconstrained one: for GRR and the exponential mechanism the matrix-inversion
estimate, covariance ``Σ/n = M⁻¹(diag π − ππᵀ)M⁻ᵀ/n`` (their ``frequency_covariance`` at
the truth); for unary encoding the maximiser of the per-bit composite likelihood, whose
covariance is the sandwich ``A J A/n`` (Godambe), with ``H = (p−q)² D⁻¹`` and ``J = (p−q)²
D⁻¹ C D⁻¹`` per report (``D = diag π(1−π)``, ``C`` the covariance of one report's bits,
``D − (p−q)²(ffᵀ − diag f²)``) and ``A = H⁻¹ − H⁻¹11ᵀH⁻¹/(1ᵀH⁻¹1)`` for the constraint
``Σf = 1``. So ``T = n (f̂ − f)ᵀ Σ⁺ (f̂ − f)`` is χ² with ``d − 1`` degrees of freedom,
and over ``R`` seeded repetitions ``ΣT`` is χ² with ``R(d − 1)``: at each ``n`` of 10⁴, 10⁵
and 10⁶ the test (two-sided, Bonferroni over ``n`` and mechanisms) accepts, so the
error shrinks like ``1/√n`` towards the truth.

The statistics of ``n`` reports are drawn exactly from their distribution (GRR and
exponential counts are multinomial over ``Mf``; unary encoding's bit counts are
binomial given the multinomial counts of the values), not report by report.

Power: reports from the channel at ε·1.3 or ε/1.3, fitted with the channel at ε, leave
a bias that does not shrink with ``n``; the test rejects, and the design (noncentral χ²
with ``λ = R·n·bᵀΣ⁺b``, ``b`` IBU's limit from the wrong channel's expected statistics)
is checked first.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from ldp_shared.analyses.ibu import bayesian_update
from ldp_shared.mechanisms import (
    ExponentialRandomizer,
    GeneralizedRandomizedResponse,
    OptimizedUnaryEncoding,
    UnaryEncoding,
)
from ldp_shared.rand import seeded_rng

from ._stats import ALPHA, POWER_MARGIN_SD, chi2_cdf, chi2_quantile, chi2_sf, wrong_epsilons

pytestmark = pytest.mark.statistical

SEED = 8_130_001
TRUTH = np.array([0.1, 0.25, 0.3, 0.2, 0.15])
SIZES = [10_000, 100_000, 1_000_000]
REPETITIONS = 40
CASES = {"grr": 1.0, "oue": 1.0, "exponential-ordinal": 3.0}
"""ε of each mechanism under test."""
TESTS = len(CASES) * len(SIZES)


def _mechanism(case: str, epsilon: float) -> Any:
    d = TRUTH.size
    if case == "grr":
        return GeneralizedRandomizedResponse(d, epsilon)
    if case == "oue":
        return OptimizedUnaryEncoding(d, epsilon)
    return ExponentialRandomizer(d, epsilon, "ordinal")


def _draw_stats(mechanism: Any, n: int, gen: np.random.Generator) -> dict[str, Any]:
    """The statistics of n reports of values drawn from TRUTH, drawn exactly."""
    if isinstance(mechanism, UnaryEncoding):
        per_value = gen.multinomial(n, TRUTH)
        ones = gen.binomial(per_value, mechanism.p) + gen.binomial(n - per_value, mechanism.q)
        return {"counts": ones.astype(np.float64)}
    return {"counts": gen.multinomial(n, mechanism.channel_matrix() @ TRUTH).astype(np.float64)}


def _expected_stats(mechanism: Any, n: int) -> dict[str, Any]:
    if isinstance(mechanism, UnaryEncoding):
        return {"counts": n * (mechanism.q + (mechanism.p - mechanism.q) * TRUTH)}
    return {"counts": n * (mechanism.channel_matrix() @ TRUTH)}


def _per_report_covariance(mechanism: Any) -> NDArray[np.float64]:
    """``Σ``: n times the asymptotic covariance of IBU's estimate at TRUTH."""
    if not isinstance(mechanism, UnaryEncoding):
        out: NDArray[np.float64] = mechanism.frequency_covariance(_expected_stats(mechanism, 1), 1)
        return out
    p, q, f = mechanism.p, mechanism.q, TRUTH
    pi = q + (p - q) * f
    d_inv = np.diag(1.0 / (pi * (1.0 - pi)))
    bits = np.diag(pi * (1.0 - pi)) - (p - q) ** 2 * (np.outer(f, f) - np.diag(f * f))
    h_inv = np.linalg.inv((p - q) ** 2 * d_inv)
    j = (p - q) ** 2 * d_inv @ bits @ d_inv
    ones = np.ones(f.size)
    a = h_inv - np.outer(h_inv @ ones, ones @ h_inv) / (ones @ h_inv @ ones)
    sandwich: NDArray[np.float64] = a @ j @ a
    return sandwich


def _statistic(case: str, data_epsilon: float, n: int, seed: int) -> float:
    """``Σ_r n (f̂_r − f)ᵀ Σ⁺ (f̂_r − f)`` over the repetitions, fitted at the case's ε."""
    fit_at, data = _mechanism(case, CASES[case]), _mechanism(case, data_epsilon)
    precision = np.linalg.pinv(_per_report_covariance(fit_at), rcond=1e-10, hermitian=True)
    gen, total = seeded_rng(seed), 0.0
    for _ in range(REPETITIONS):
        channel = fit_at.report_channel(_draw_stats(data, n, gen), n)
        result = bayesian_update(channel, max_iterations=100_000, accelerate=True)
        assert result.converged
        error = result.estimate - TRUTH
        total += n * float(error @ precision @ error)
    return total


def _two_sided(statistic: float, df: int) -> float:
    return min(1.0, 2.0 * min(chi2_sf(statistic, df), chi2_cdf(statistic, df)))


DF = REPETITIONS * (TRUTH.size - 1)


@pytest.mark.parametrize("case", CASES)
def test_ibu_converges_to_the_truth_as_n_grows(case: str) -> None:
    for k, n in enumerate(SIZES):
        statistic = _statistic(case, CASES[case], n, SEED + k)
        assert _two_sided(statistic, DF) >= ALPHA / TESTS, (n, statistic / DF)


@pytest.mark.parametrize("case", CASES)
def test_ibu_converges_to_the_truth_as_n_grows_power(case: str) -> None:
    """The wrong channel's limit is not the truth: rejected at the largest n."""
    epsilon, n = CASES[case], SIZES[-1]
    fit_at = _mechanism(case, epsilon)
    precision = np.linalg.pinv(_per_report_covariance(fit_at), rcond=1e-10, hermitian=True)
    critical = chi2_quantile(1.0 - ALPHA / TESTS / 2.0, DF)
    for k, wrong in enumerate(wrong_epsilons(epsilon)):
        expected = _expected_stats(_mechanism(case, wrong), n)
        limit = bayesian_update(
            fit_at.report_channel(expected, n), max_iterations=200_000, accelerate=True
        )
        bias = limit.estimate - TRUTH
        noncentrality = REPETITIONS * n * float(bias @ precision @ bias)
        spread = math.sqrt(2.0 * (DF + 2.0 * noncentrality))
        assert DF + noncentrality - POWER_MARGIN_SD * spread > critical
        statistic = _statistic(case, wrong, n, SEED + 10 + k)
        assert _two_sided(statistic, DF) < ALPHA / TESTS, statistic / DF
