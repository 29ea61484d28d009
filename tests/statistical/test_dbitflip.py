"""dBitFlipPM against its stated distribution and its estimator's variance, with power.

* Flips: the reported bits differ from the truth with probability ``φ``, for fresh
  devices and for memoised ones (one key each): z-tests that reject ε·1.3 and ε/1.3.
* Sampled buckets: over device keys, every ``b``-subset of the ``d`` buckets is equally
  likely (χ² over the subsets); a sampler biased towards low buckets is rejected.
* The estimator: ``R`` repetitions over a fixed population of fresh devices; each
  bucket's error standardised by its variance formula at that repetition's ``n_v``,
  ``q(1−q)/(n_v(p−q)²) + f(1−f)(n−n_v)/(n_v(n−1))``, has variance 1 (χ² variance test,
  Bonferroni; the ratio within 0.9–1.1 overall), rejecting ε·1.3 and ε/1.3.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from numpy.typing import NDArray

from ldp_shared.mechanisms import DBitFlipPM
from ldp_shared.rand import seeded_rng

from ._population import device_keys, fixed_population
from ._stats import (
    ALPHA,
    assert_variance_power,
    assert_z_power,
    binomial_pvalue,
    bonferroni_reject,
    chi2_gof,
    variance_ratio_pvalue,
    wrong_epsilons,
)

pytestmark = pytest.mark.statistical

SEED = 20_171_204
D, B, EPSILON = 8, 3, 2.0
DEVICES = 6_000
FREQUENCIES = np.array([0.3, 0.2, 0.15, 0.1, 0.1, 0.1, 0.05, 0.0])
N, R = 2_000, 400


def mechanism(epsilon: float = EPSILON, d: int = D, b: int = B) -> DBitFlipPM:
    return DBitFlipPM(d=d, b=b, epsilon=epsilon)


def flips(mech: DBitFlipPM, memoised: bool, seed: int) -> tuple[int, int]:
    """(bits flipped, bits reported) over ``DEVICES`` devices, value ``i mod d``."""
    truth = np.arange(DEVICES, dtype=np.int64) % mech.d
    if memoised:
        keys = device_keys(DEVICES, seed)
        answers = np.vstack(
            [mech.perturb_memoised(truth[i : i + 1], key) for i, key in enumerate(keys)]
        )
    else:
        answers = mech.perturb(truth, seeded_rng(seed))
    true_bits = answers[:, : mech.b] == truth[:, None]
    return int(np.sum(true_bits != answers[:, mech.b :])), true_bits.size


@pytest.mark.parametrize("memoised", [False, True], ids=["fresh", "memoised"])
def test_flip_rate_with_power(memoised: bool) -> None:
    right = mechanism()
    flipped, total = flips(right, memoised, SEED)
    assert binomial_pvalue(flipped, total, right.flip) >= ALPHA
    for k, wrong_epsilon in enumerate(wrong_epsilons(EPSILON)):
        wrong = mechanism(wrong_epsilon)
        assert_z_power(total, right.flip, wrong.flip, ALPHA)
        flipped, total = flips(wrong, memoised, SEED + 1 + k)
        assert binomial_pvalue(flipped, total, right.flip) < ALPHA


SMALL_D, SMALL_B, KEYS = 5, 2, 4_000


def subset_pvalue(sampled: list[tuple[int, ...]]) -> float:
    subsets = list(itertools.combinations(range(SMALL_D), SMALL_B))
    index = {s: i for i, s in enumerate(subsets)}
    counts = np.bincount([index[s] for s in sampled], minlength=len(subsets))
    return chi2_gof(counts, np.full(len(subsets), 1.0 / len(subsets))).pvalue


def test_devices_sample_uniform_subsets() -> None:
    mech = mechanism(d=SMALL_D, b=SMALL_B)
    keys = device_keys(KEYS, SEED + 5)
    assert subset_pvalue([tuple(mech.sampled_buckets(k).tolist()) for k in keys]) >= ALPHA
    fresh = mech.perturb(np.zeros(KEYS, dtype=np.int64), seeded_rng(SEED + 6))[:, :SMALL_B]
    assert subset_pvalue([tuple(row) for row in fresh.tolist()]) >= ALPHA
    # power: the least b of u_j + 0.15·j/d favours low buckets
    gen = seeded_rng(SEED + 7)
    skewed = np.argsort(gen.random((KEYS, SMALL_D)) + 0.15 * np.arange(SMALL_D) / SMALL_D)
    biased = [tuple(sorted(row[:SMALL_B])) for row in skewed.tolist()]
    assert subset_pvalue(biased) < ALPHA


def population() -> NDArray[np.int64]:
    return fixed_population(FREQUENCIES, N)


def standardised_errors(mech: DBitFlipPM, seed: int) -> NDArray[np.float64]:
    """``R × D`` errors ``(f̂ − f)/√V(f; n_v)`` of fresh devices, with the variance formula
    of the RIGHT mechanism at each repetition's ``n_v``."""
    right = mechanism()
    answers = mech.perturb(np.tile(population(), R), seeded_rng(seed)).reshape(R, N, -1)
    out = np.empty((R, D))
    for r in range(R):
        stats = mech.accumulate(answers[r])
        f_hat = mech.estimate_stats(stats, N, 0.95).estimate
        sampled = stats["sampled"].astype(np.float64)
        out[r] = (f_hat - FREQUENCIES) / np.sqrt(right.variance_curve(sampled, N)(FREQUENCIES))
    return out


def variance_pvalues(z: NDArray[np.float64]) -> list[float]:
    return [variance_ratio_pvalue(float(np.var(z[:, j], ddof=1)), 1.0, R) for j in range(D)]


def test_estimator_variance_matches_the_formula() -> None:
    z = standardised_errors(mechanism(), SEED + 10)
    assert not bonferroni_reject(variance_pvalues(z))
    ratio = float(np.mean(np.var(z, axis=0, ddof=1)))
    assert 0.9 <= ratio <= 1.1, ratio
    assert np.all(np.abs(z.mean(axis=0)) * np.sqrt(R) < 4.0)  # unbiased


def expected_variance(mech: DBitFlipPM) -> NDArray[np.float64]:
    """The variance at the expected ``n_v = n b/d`` (for the design check only)."""
    sampled = np.full(D, N * mech.b / mech.d)
    return mech.variance_curve(sampled, N)(FREQUENCIES)


def test_estimator_variance_power() -> None:
    right = expected_variance(mechanism())
    for k, wrong_epsilon in enumerate(wrong_epsilons(EPSILON)):
        wrong = mechanism(wrong_epsilon)
        ratios = expected_variance(wrong) / right
        assert_variance_power(float(ratios[np.argmax(np.abs(np.log(ratios)))]), R, ALPHA / D)
        z = standardised_errors(wrong, SEED + 11 + k)
        assert bonferroni_reject(variance_pvalues(z)), wrong_epsilon
