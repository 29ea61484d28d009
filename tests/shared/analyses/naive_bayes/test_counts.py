"""Counts and their intervals (ldp_shared.analyses.naive_bayes.counts).

* A joint count's interval is ``n_j`` times the frequency score interval of the same
  cell (``estimate_frequencies``), and solves the score test at its inner ends.
* Without noise the interval is the exact count ± ½, within [0, n_j].
* Intervals lie in [0, n_j] and hold every estimate that lies there; far from the edges
  they approach the normal interval as n grows.
"""

from __future__ import annotations

import numpy as np

from ldp_shared.analyses import naive_bayes as nb
from ldp_shared.kernel import estimate_frequencies, z_value
from ldp_shared.mechanisms.unary import unary_probabilities
from ldp_shared.rand import seeded_rng

Z = z_value(0.95)
VALUES = ["a", "b", "c"]
K = 2


def noisy_counts(n: int, epsilon: float, seed: int) -> nb.FeatureCounts:
    """A feature of 3 values × 2 classes over ``n`` OUE reports with uneven true cells."""
    p, q = unary_probabilities("oue", epsilon)
    truth = np.round(n * np.array([0.6, 0.02, 0.2, 0.1, 0.0, 0.08])).astype(np.int64)
    truth[0] += n - truth.sum()
    rng = seeded_rng(seed)
    sums = rng.binomial(truth, p) + rng.binomial(n - truth, q)
    return nb.counts_from_sums("x", VALUES, K, sums, n, p, q, epsilon=epsilon)


def test_joint_interval_is_the_cell_frequency_interval_times_n() -> None:
    n, epsilon = 150, 4.0
    p, q = unary_probabilities("oue", epsilon)
    sums = seeded_rng(5).binomial(n, [0.4, 0.05, 0.3, 0.1, 0.02, 0.13])
    counts = nb.counts_from_sums("x", VALUES, K, sums, n, p, q)
    low, high = counts.score_interval(Z)
    cells = estimate_frequencies(sums, n, p, q, 0.95)  # cell v·k + c → row c, column v
    np.testing.assert_allclose(low, n * cells.ci_low.reshape(3, K).T, rtol=1e-12)
    np.testing.assert_allclose(high, n * cells.ci_high.reshape(3, K).T, rtol=1e-12)
    np.testing.assert_allclose(counts.stderr, n * cells.stderr.reshape(3, K).T, rtol=1e-12)


def test_inner_ends_solve_the_score_test() -> None:
    counts = noisy_counts(200, 2.0, seed=8)
    n, f_hat = counts.n_reports, counts.counts / counts.n_reports
    half = 0.5 / (n * (counts.p - counts.q))
    low, high = counts.score_interval(Z)
    for end, side in ((low / n, f_hat - half), (high / n, f_hat + half)):
        inner = (end > 0.0) & (end < 1.0)
        assert inner.any()
        np.testing.assert_allclose(
            np.abs(side - end)[inner], Z * np.sqrt(counts.curve(end))[inner], rtol=1e-9
        )


def test_without_noise_the_interval_is_the_count_plus_or_minus_a_half() -> None:
    n = 40
    sums = np.array([30, 0, 3, 1, 0, 6])
    counts = nb.counts_from_sums("x", VALUES, K, sums, n, 1.0, 0.0)
    exact = sums.reshape(3, K).T.astype(np.float64)
    np.testing.assert_array_equal(counts.counts, exact)
    np.testing.assert_array_equal(counts.stderr, np.zeros_like(exact))
    low, high = counts.score_interval(Z)
    np.testing.assert_allclose(low, np.maximum(exact - 0.5, 0.0), atol=1e-12)
    np.testing.assert_allclose(high, np.minimum(exact + 0.5, n), atol=1e-12)
    # class counts of two noiseless features weighted equally: each report moves π̂ by 1/2n
    totals = nb.class_counts([counts, counts], n, np.array([0.5, 0.5]))
    np.testing.assert_allclose(totals.counts, exact.sum(axis=1))
    class_low, class_high = totals.score_interval(Z)
    np.testing.assert_allclose(class_low, exact.sum(axis=1) - 0.25, atol=1e-12)
    np.testing.assert_allclose(class_high, exact.sum(axis=1) + 0.25, atol=1e-12)


def test_intervals_stay_in_range_and_hold_the_estimates_there() -> None:
    for seed in range(20):
        counts = noisy_counts(100, 6.0, seed)
        totals = nb.class_counts([counts], 100, np.array([1.0]))
        for est, (low, high), m in (
            (counts.counts, counts.score_interval(Z), counts.n_reports),
            (totals.counts, totals.score_interval(Z), totals.n_reports),
        ):
            assert np.all((low >= 0.0) & (low <= high) & (high <= m)), (seed, low, high)
            inside = (est >= 0.0) & (est <= m)
            assert np.all((low <= est) & (est <= high) | ~inside), (seed, est, low, high)


def test_far_from_the_edges_the_interval_approaches_the_normal_one() -> None:
    n = 1_000_000
    counts = noisy_counts(n, 1.0, seed=3)
    low, high = counts.score_interval(Z)
    away = (counts.counts > 0.01 * n) & (counts.counts < 0.99 * n)
    assert away.sum() >= 4
    np.testing.assert_allclose(low[away], (counts.counts - Z * counts.stderr)[away], rtol=1e-3)
    np.testing.assert_allclose(high[away], (counts.counts + Z * counts.stderr)[away], rtol=1e-3)
