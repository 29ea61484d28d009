"""L-GRR against its stated channels and its estimator's variance formula, with power.

* The permanent step (derived from device keys) keeps a value with probability ``p₁``
  (z-test; rejects ε∞·1.3 and ε∞/1.3).
* One report, of fresh devices (``perturb``) and of memoised devices
  (``perturb_memoised``, one key per device): keep rate ``p`` (z-test; rejects ε₁·1.3 and
  ε₁/1.3) and the whole chained channel (per-row χ²).
* Many reports of one device: the instantaneous step around its one memoised ``z``
  (χ²); a device that redraws ``z`` per report (no memoisation) is rejected.
* The estimator: ``R`` repetitions over a fixed population; each value's empirical
  variance against ``[f p(1−p) + (1−f) q(1−q)]/(n (p₁−q₁)²(p₂−q₂)²)`` (χ² variance test,
  Bonferroni; the ratio within 0.9–1.1 overall), rejecting ε₁·1.3 and ε₁/1.3.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.typing import NDArray

from ldp_shared.mechanisms import LongitudinalGRR
from ldp_shared.rand import seeded_rng

from ._population import device_keys, fixed_population
from ._stats import (
    ALPHA,
    assert_variance_power,
    assert_z_power,
    binomial_pvalue,
    bonferroni_reject,
    chi2_gof,
    chi2_gof_rows,
    variance_ratio_pvalue,
    wrong_epsilons,
)

pytestmark = pytest.mark.statistical

SEED = 20_170_020
D, INFINITY, EPSILON = 6, 3.0, 1.0
DEVICES = 12_000
FREQUENCIES = np.array([0.35, 0.25, 0.2, 0.1, 0.1, 0.0])
N, R = 2_000, 400


def mechanism(epsilon: float = EPSILON, infinity: float = INFINITY) -> LongitudinalGRR:
    return LongitudinalGRR(d=D, epsilon=epsilon, epsilon_infinity=infinity)


def values(count: int) -> NDArray[np.int64]:
    return np.arange(count, dtype=np.int64) % D


def permanent_draws(mech: LongitudinalGRR, seed: int) -> tuple[NDArray[np.int64], ...]:
    """Every value under each of ``DEVICES / D`` device keys: independent draws."""
    keys = device_keys(DEVICES // D, seed)
    truth = np.tile(np.arange(D), len(keys))
    return truth, np.concatenate([mech.permanent(np.arange(D), key) for key in keys])


def test_permanent_keep_rate_with_power() -> None:
    right = mechanism()
    truth, z = permanent_draws(right, SEED)
    assert binomial_pvalue(int(np.sum(z == truth)), z.size, right.p1) >= ALPHA
    for k, wrong_infinity in enumerate(wrong_epsilons(INFINITY)):
        wrong = mechanism(infinity=wrong_infinity)
        assert_z_power(z.size, right.p1, wrong.p1, ALPHA)
        truth, z = permanent_draws(wrong, SEED + 1 + k)
        assert binomial_pvalue(int(np.sum(z == truth)), z.size, right.p1) < ALPHA


def memoised_reports(mech: LongitudinalGRR, seed: int) -> NDArray[np.int64]:
    """One report of each of ``DEVICES`` devices (value ``i mod D``), each with its key."""
    gen = seeded_rng(seed)
    keys = device_keys(DEVICES, seed)
    return np.concatenate(
        [mech.perturb_memoised(np.array([i % D]), key, gen) for i, key in enumerate(keys)]
    )


def channel_pvalue(mech: LongitudinalGRR, truth: NDArray[np.int64], y: NDArray[np.int64]) -> float:
    table = np.zeros((D, D), dtype=np.int64)
    np.add.at(table, (truth, y), 1)
    return chi2_gof_rows(table, mech.channel_matrix().T, pool=False).pvalue


@pytest.mark.parametrize("memoised", [False, True], ids=["fresh", "memoised"])
def test_one_report_follows_the_chained_channel(memoised: bool) -> None:
    right = mechanism()
    truth = values(DEVICES)

    def reports(mech: LongitudinalGRR, seed: int) -> NDArray[np.int64]:
        if memoised:
            return memoised_reports(mech, seed)
        return mech.perturb(truth, seeded_rng(seed))

    y = reports(right, SEED + 10)
    assert binomial_pvalue(int(np.sum(y == truth)), y.size, right.p) >= ALPHA / 2
    assert channel_pvalue(right, truth, y) >= ALPHA / 2
    for k, wrong_epsilon in enumerate(wrong_epsilons(EPSILON)):
        wrong = mechanism(epsilon=wrong_epsilon)
        assert_z_power(y.size, right.p, wrong.p, ALPHA)
        y = reports(wrong, SEED + 11 + k)
        assert binomial_pvalue(int(np.sum(y == truth)), y.size, right.p) < ALPHA


def instantaneous_pvalue(mech: LongitudinalGRR, y: NDArray[np.int64], z: int) -> float:
    expected = np.full(D, mech.q2)
    expected[z] = mech.p2
    return chi2_gof(np.bincount(y, minlength=D), expected).pvalue


def test_a_device_repeats_its_permanent_response() -> None:
    mech = mechanism()
    key = device_keys(1, SEED + 20)[0]
    z = int(mech.permanent(np.array([2]), key)[0])
    y = mech.perturb_memoised(np.full(DEVICES, 2, dtype=np.int64), key, seeded_rng(SEED + 21))
    assert instantaneous_pvalue(mech, y, z) >= ALPHA
    # power: a device that redraws its permanent response for every report
    forgetful = mech.perturb(np.full(DEVICES, 2, dtype=np.int64), seeded_rng(SEED + 22))
    assert instantaneous_pvalue(mech, forgetful, z) < ALPHA


def population() -> NDArray[np.int64]:
    return fixed_population(FREQUENCIES, N)


def simulate(mech: LongitudinalGRR, seed: int) -> NDArray[np.float64]:
    """``R × D`` estimates, each from fresh devices holding the same population."""
    reported = mech.perturb(np.tile(population(), R), seeded_rng(seed)).reshape(R, N)
    offsets = (np.arange(R) * D)[:, None]
    counts = np.bincount((reported + offsets).ravel(), minlength=R * D).reshape(R, D)
    return np.array([mech.estimate_stats({"counts": row}, N, 0.95).estimate for row in counts])


def variance_pvalues(f_hat: NDArray[np.float64], variance: NDArray[np.float64]) -> list[float]:
    s2 = f_hat.var(axis=0, ddof=1)
    return [variance_ratio_pvalue(float(s2[j]), float(variance[j]), R) for j in range(D)]


def test_estimator_variance_matches_the_formula() -> None:
    mech = mechanism()
    f_hat = simulate(mech, SEED + 30)
    variance = mech.variance(FREQUENCIES, N)
    by_hand = (FREQUENCIES * mech.p * (1 - mech.p) + (1 - FREQUENCIES) * mech.q * (1 - mech.q)) / (
        N * (mech.p1 - mech.q1) ** 2 * (mech.p2 - mech.q2) ** 2
    )
    assert np.allclose(variance, by_hand, rtol=1e-12)
    assert not bonferroni_reject(variance_pvalues(f_hat, variance))
    ratio = float(np.mean(f_hat.var(axis=0, ddof=1) / variance))
    assert 0.9 <= ratio <= 1.1, ratio
    bias_z = (f_hat.mean(axis=0) - FREQUENCIES) / np.sqrt(variance / R)
    assert np.all(np.abs(bias_z) < 4.0), bias_z


def test_estimator_variance_power() -> None:
    right = mechanism()
    variance = right.variance(FREQUENCIES, N)
    for k, wrong_epsilon in enumerate(wrong_epsilons(EPSILON)):
        wrong = mechanism(epsilon=wrong_epsilon)
        ratios = wrong.variance(FREQUENCIES, N) / variance
        assert_variance_power(float(ratios[np.argmax(np.abs(np.log(ratios)))]), R, ALPHA / D)
        f_hat = simulate(wrong, SEED + 31 + k)
        assert bonferroni_reject(variance_pvalues(f_hat, variance)), wrong_epsilon
