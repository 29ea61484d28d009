"""The gradient mechanisms against their stated answer distributions and estimator variance.

* Answers: for a fixed vector, the sampled mechanisms' (coordinate, cell) pairs follow
  ``(1/d)·`` the 1-D lattice channel's column mixed by the rounding (one χ² over all
  ``d·G`` pairs); the Laplace mechanism's cells, coordinate by coordinate, follow its
  channel's mixed column (χ² per coordinate, Bonferroni). Power: the same tests reject
  the answers of the mechanism built at ε·1.3 and ε/1.3 (same ``k``, same cells), the
  design checked beforehand from the noncentrality.
* Estimator: over R repetitions of N gradient-like vectors, each coordinate's mean is
  unbiased (z-test) with the exact variance ``Σ_i Var_ij/N²`` (χ² variance-ratio test),
  Bonferroni over coordinates and the two tests; the released 95% intervals cover
  93–97% of the time. Power: the answers of the wrong-ε mechanism, decoded as the right
  one's, are rejected, the design checked from their exact moments.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldp_shared.kernel import FloatArray
from ldp_shared.mechanisms.gradient import LatticeGradient
from ldp_shared.mechanisms.gradient_laplace import L1Laplace, systematic_round
from ldp_shared.mechanisms.gradient_sampling import SampledHybrid, SampledPiecewise
from ldp_shared.mechanisms.integer_channel import IntegerChannel, integer_channel
from ldp_shared.mechanisms.laplace import laplace_channel
from ldp_shared.mechanisms.lattice import split_levels
from ldp_shared.rand import seeded_rng

from ._stats import (
    ALPHA,
    POWER_MARGIN_SD,
    assert_chi2_power,
    assert_variance_power,
    chi2_gof,
    normal_two_sided_pvalue,
    pooled_noncentrality,
    variance_ratio_pvalue,
    wrong_epsilons,
    z_critical,
)

pytestmark = pytest.mark.statistical

SEED = 9_100_001
SAMPLED = {"sampled-piecewise": SampledPiecewise, "sampled-hybrid": SampledHybrid}


def make(name: str, epsilon: float, d: int, k: int | None = None) -> LatticeGradient:
    if name == "l1-laplace":
        return L1Laplace(dimension=d, epsilon=epsilon)
    return SAMPLED[name](dimension=d, epsilon=epsilon, samples=k)


def wrong_channel(right: L1Laplace, epsilon: float) -> IntegerChannel:
    """The discrete Laplace channel at ``epsilon`` on ``right``'s window (same cells)."""
    levels = right.channel.levels
    margin = (right.channel.cells - 1 - levels) // 2
    ideal = laplace_channel(epsilon, levels, margin)
    return integer_channel(ideal / ideal.sum(axis=0, keepdims=True), math.inf)


def laplace_answers(
    right: L1Laplace, channel: IntegerChannel, g: FloatArray, rng: np.random.Generator
) -> np.ndarray:
    """``right``'s rounding, then cells drawn from ``channel`` (the right one or a wrong one)."""
    z = systematic_round(g / right.bound * right.steps, right.steps, rng)
    return channel.sample((z + right.steps).ravel(), rng).reshape(g.shape)


def mixed_columns(matrix: FloatArray, t: FloatArray, levels: int) -> FloatArray:
    """``P(cell | t)`` for each ``t`` (rows): the channel's columns mixed by the rounding."""
    lower, upper = split_levels(t, levels)
    out: FloatArray = (1 - upper)[:, None] * matrix[:, lower].T + upper[:, None] * matrix[
        :, lower + 1
    ].T
    return out


PAIRS = 60_000
SAMPLED_T = np.array([-0.7, 0.1, 0.55])


@pytest.mark.parametrize("name", sorted(SAMPLED))
@pytest.mark.parametrize("epsilon", [1.0, 4.0])
def test_sampled_pairs_follow_the_channel_and_a_wrong_epsilon_is_caught(
    name: str, epsilon: float
) -> None:
    d = SAMPLED_T.size
    right = make(name, epsilon, d)
    g = np.tile(SAMPLED_T, (PAIRS, 1))

    def law(m: LatticeGradient) -> FloatArray:
        return (mixed_columns(m.channel.matrix, SAMPLED_T, m.channel.levels) / d).ravel()

    def observed(answers: np.ndarray) -> np.ndarray:
        return right.accumulate(answers)["counts"]

    rng = seeded_rng(SEED)
    assert chi2_gof(observed(right.perturb(g, rng)), law(right)).pvalue > ALPHA
    for eps in wrong_epsilons(epsilon):
        wrong = make(name, eps, d, k=1)
        assert wrong.channel.cells == right.channel.cells
        assert_chi2_power(
            pooled_noncentrality(PAIRS, law(right), law(wrong)), right.channel.cells * d, ALPHA
        )
        assert chi2_gof(observed(wrong.perturb(g, rng)), law(right)).pvalue < ALPHA, eps


LAPLACE_T = np.array([0.3, -0.45, 0.0, 0.2, 0.0, 0.0, 0.05, 0.0, 0.0, 0.0, 0.0, 0.0])
REPORTS = 40_000


@pytest.mark.parametrize("epsilon", [1.0, 4.0])
def test_laplace_cells_follow_the_channel_and_a_wrong_epsilon_is_caught(epsilon: float) -> None:
    right = L1Laplace(dimension=LAPLACE_T.size, epsilon=epsilon)
    assert right.steps == 1
    g = np.tile(LAPLACE_T, (REPORTS, 1))
    alpha = ALPHA / LAPLACE_T.size
    cells = right.channel.cells

    def law(matrix: FloatArray) -> FloatArray:
        return mixed_columns(matrix, LAPLACE_T, right.channel.levels)

    def pvalues(answers: np.ndarray) -> list[float]:
        counts = [np.bincount(answers[:, j], minlength=cells) for j in range(LAPLACE_T.size)]
        return [
            chi2_gof(c, p).pvalue for c, p in zip(counts, law(right.channel.matrix), strict=True)
        ]

    rng = seeded_rng(SEED + 1)
    assert min(pvalues(right.perturb(g, rng))) > alpha
    for eps in wrong_epsilons(epsilon):
        wrong = wrong_channel(right, eps)
        laws = zip(law(right.channel.matrix), law(wrong.matrix), strict=True)
        lam = max(pooled_noncentrality(REPORTS, p, q) for p, q in laws)
        assert_chi2_power(lam, cells - 1, alpha)
        assert min(pvalues(laplace_answers(right, wrong, g, rng))) < alpha, eps


N = 2_000
REPETITIONS = 600
ESTIMATOR_CASES = [
    ("sampled-piecewise", 1.0),
    ("sampled-piecewise", 4.0),
    ("sampled-piecewise", 8.0),
    ("sampled-hybrid", 1.0),
    ("sampled-hybrid", 4.0),
    ("l1-laplace", 1.0),
    ("l1-laplace", 4.0),
]


def population(d: int, rng: np.random.Generator) -> FloatArray:
    """Logistic-loss gradients ``(σ(w·x) − y)·x`` of records with an intercept, two numbers
    in [−1, 1] and a one-hot category (so most coordinates are 0), early in training: the
    model overrates class 1 (``w₀ = 1.5``, 20% positives), so the mean gradient is far
    from 0 and a wrong ε's bias shows."""
    x = np.zeros((N, d))
    x[:, 0] = 1.0
    x[:, 1:3] = rng.uniform(0, 1, size=(N, 2))
    x[np.arange(N), 3 + rng.integers(0, d - 3, size=N)] = 1.0
    w = np.r_[1.5, rng.normal(0, 0.5, size=d - 1)]
    p = 1 / (1 + np.exp(-x @ w))
    y = (rng.random(N) < 0.2).astype(float)
    return (p - y)[:, None] * x


def exact_moments(
    m: LatticeGradient, matrix: FloatArray, g: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """Mean and variance per coordinate of ``m``'s estimate from answers drawn with
    ``matrix`` (``m``'s own channel, or a wrong one on the same cells)."""
    t = (g / m.bound).ravel()
    v = m.channel.mean_decoder
    columns = mixed_columns(matrix, t, m.channel.levels)
    e1 = (columns @ v).reshape(g.shape)
    e2 = (columns @ (v * v)).reshape(g.shape)
    a = m.inflation
    mean = e1.mean(axis=0) * m.bound
    var = (a * e2 - e1**2).sum(axis=0) / N**2 * m.bound**2
    return mean, var


def estimates(m: LatticeGradient, answers: np.ndarray) -> tuple[np.ndarray, ...]:
    """The released mean, lower and upper 95% bounds (R × d each) of R batches of N."""
    rows = [
        m.estimate_stats(m.accumulate(batch), N, 0.95) for batch in np.split(answers, REPETITIONS)
    ]
    return tuple(np.array([getattr(r, f) for r in rows]) for f in ("estimate", "ci_low", "ci_high"))


def rejects(means: np.ndarray, truth: FloatArray, variance: FloatArray, alpha: float) -> bool:
    z = (means.mean(axis=0) - truth) / np.sqrt(variance / REPETITIONS)
    pz = [normal_two_sided_pvalue(float(v)) for v in z]
    pv = [
        variance_ratio_pvalue(float(s), float(v), REPETITIONS)
        for s, v in zip(means.var(axis=0, ddof=1), variance, strict=True)
    ]
    return min(pz + pv) < alpha


@pytest.mark.parametrize(("name", "epsilon"), ESTIMATOR_CASES)
def test_the_mean_gradient_is_unbiased_with_the_stated_variance(name: str, epsilon: float) -> None:
    d = 8
    g = population(d, np.random.default_rng(SEED + 2))
    right = make(name, epsilon, d if name != "l1-laplace" else 12)
    if name == "l1-laplace":  # an L1 ball needs d >= 12 for L = 1; pad with zeros
        g = right.clip(np.hstack([g, np.zeros((N, 4))]) / 3.0)
        d = 12
    truth = g.mean(axis=0)
    variance = right.coordinate_variance(g).sum(axis=0) / N**2
    mean, exact = exact_moments(right, right.channel.matrix, g)
    np.testing.assert_allclose(mean, truth, atol=1e-12)
    np.testing.assert_allclose(exact, variance, rtol=1e-9)
    alpha = ALPHA / (2 * d)
    rng = seeded_rng(SEED + 3)
    population_r = np.tile(g, (REPETITIONS, 1))
    means, low, high = estimates(right, right.perturb(population_r, rng))
    assert not rejects(means, truth, variance, alpha)
    covered = float(np.mean((low <= truth) & (truth <= high)))
    assert 0.93 <= covered <= 0.97, covered
    crit = z_critical(alpha)
    for eps in wrong_epsilons(epsilon):
        if isinstance(right, L1Laplace):
            channel = wrong_channel(right, eps)
            matrix = channel.matrix
            answers = laplace_answers(right, channel, population_r, rng)
        else:
            assert isinstance(right, SampledPiecewise | SampledHybrid)
            wrong = make(name, eps, d, k=right.k)
            matrix = wrong.channel.matrix
            answers = wrong.perturb(population_r, rng)
        w_mean, w_var = exact_moments(right, matrix, g)
        z_margin = np.abs(w_mean - truth) / np.sqrt(variance / REPETITIONS) - crit
        z_ok = z_margin >= POWER_MARGIN_SD * np.sqrt(w_var / variance)
        ratio = float(np.max(w_var / variance) if eps < epsilon else np.min(w_var / variance))
        if not z_ok.any():
            assert_variance_power(ratio, REPETITIONS, alpha)
        wrong_means = estimates(right, answers)[0]
        assert rejects(wrong_means, truth, variance, alpha), eps
