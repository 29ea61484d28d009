"""The L2 Gaussian gradient mechanism against its stated noise law and estimator variance.

* Noise: with the zero vector (nothing to round) each answer minus the offset is one draw
  of the quantised noise table; a χ² test over all coordinates' draws, in 40 cells of
  about equal probability under the table (cut at its quantiles).
  Power: the same test rejects the noise of the mechanism built at ε·1.3 and ε/1.3 (same
  δ, its own table), the design checked beforehand from the noncentrality.
* Estimator: over R repetitions of N gradient-like vectors (the same population as the
  other gradient mechanisms' tests, clipped into the L2 ball), each coordinate's mean is
  unbiased (z-test) with the exact variance ``Σ_i Var_ij/N²`` (χ² variance-ratio test),
  Bonferroni over coordinates and the two tests; the released 95% intervals cover
  93–97% of the time. Power: the wrong-ε mechanism's estimates, read against the right
  one's stated variance, are rejected (the noise is symmetric, so only its variance
  differs; the design is checked from the exact variance ratio).
"""

from __future__ import annotations

import numpy as np
import pytest

from ldp_shared.kernel import FloatArray
from ldp_shared.mechanisms.gradient_gaussian import L2Gaussian
from ldp_shared.rand import seeded_rng

from ._stats import (
    ALPHA,
    assert_chi2_power,
    assert_variance_power,
    chi2_gof,
    pooled_noncentrality,
    wrong_epsilons,
)
from .test_gradient_mechanisms import REPETITIONS, SEED, N, estimates, population, rejects

pytestmark = pytest.mark.statistical

DELTA = 1e-6
D = 8
DRAWS = 40_000
BINS = 40


def table_law(m: L2Gaussian, margin: int) -> FloatArray:
    """``m``'s noise probabilities on ``[−margin, margin]`` (zero outside its window)."""
    law = np.zeros(2 * margin + 1)
    own = m.noise.margin
    law[margin - own : margin + own + 1] = m.noise.table.matrix[:, 0]
    return law


@pytest.mark.parametrize("epsilon", [1.0, 4.0])
def test_the_noise_follows_the_table_and_a_wrong_epsilon_is_caught(epsilon: float) -> None:
    right = L2Gaussian(dimension=D, epsilon=epsilon, target_delta=DELTA)
    wrongs = [
        L2Gaussian(dimension=D, epsilon=e, target_delta=DELTA) for e in wrong_epsilons(epsilon)
    ]
    margin = max(m.noise.margin for m in [right, *wrongs])
    law = table_law(right, margin)
    # BINS cells of about equal probability under the right law (cut at its quantiles)
    edges = np.searchsorted(np.cumsum(law), np.arange(1, BINS) / BINS)
    cut = np.r_[0, edges + 1, law.size]

    def binned(probabilities: FloatArray) -> FloatArray:
        return np.add.reduceat(probabilities, cut[:-1])

    def counts(m: L2Gaussian, rng: np.random.Generator) -> np.ndarray:
        noise = (m.perturb(np.zeros((DRAWS // D, D)), rng) - m.noise.offset).ravel()
        return binned(np.bincount(noise + margin, minlength=2 * margin + 1).astype(float))

    rng = seeded_rng(SEED + 20)
    assert chi2_gof(counts(right, rng), binned(law)).pvalue > ALPHA
    for eps, wrong in zip(wrong_epsilons(epsilon), wrongs, strict=True):
        assert wrong.noise.steps == right.noise.steps
        lam = pooled_noncentrality(DRAWS, binned(law), binned(table_law(wrong, margin)))
        assert_chi2_power(lam, BINS - 1, ALPHA)
        assert chi2_gof(counts(wrong, rng), binned(law)).pvalue < ALPHA, eps


@pytest.mark.parametrize("epsilon", [1.0, 4.0])
def test_the_mean_gradient_is_unbiased_with_the_stated_variance(epsilon: float) -> None:
    right = L2Gaussian(dimension=D, epsilon=epsilon, target_delta=DELTA)
    g = right.clip(population(D, np.random.default_rng(SEED + 2)))
    truth = g.mean(axis=0)
    variance = right.coordinate_variance(g).sum(axis=0) / N**2
    alpha = ALPHA / (2 * D)
    rng = seeded_rng(SEED + 21)
    population_r = np.tile(g, (REPETITIONS, 1))
    means, low, high = estimates(right, right.perturb(population_r, rng))  # type: ignore[arg-type]
    assert not rejects(means, truth, variance, alpha)
    covered = float(np.mean((low <= truth) & (truth <= high)))
    assert 0.93 <= covered <= 0.97, covered
    for eps in wrong_epsilons(epsilon):
        wrong = L2Gaussian(dimension=D, epsilon=eps, target_delta=DELTA)
        assert wrong.noise.steps == right.noise.steps
        ratios = wrong.coordinate_variance(g).sum(axis=0) / N**2 / variance
        ratio = float(ratios.max() if eps < epsilon else ratios.min())
        assert_variance_power(ratio, REPETITIONS, alpha)
        wrong_means = estimates(wrong, wrong.perturb(population_r, rng))[0]  # type: ignore[arg-type]
        assert rejects(wrong_means, truth, variance, alpha), eps
