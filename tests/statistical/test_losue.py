"""L-OSUE against its stated channels and its estimator's variance formula, with power.

* The permanent OUE step (derived from device keys): the true bit is 1 with ``p₁`` and
  every other with ``q₁`` (z-tests; rejects ε∞·1.3 and ε∞/1.3).
* One report, of fresh devices (``perturb``) and of memoised devices
  (``perturb_memoised``, one key per device): the chained rates ``p`` and ``q`` (z-tests;
  rejects ε₁·1.3 and ε₁/1.3).
* Many reports of one device: every bit around its one memoised vector ``B`` (1 with
  ``p₂`` where ``B`` has a 1, ``q₂`` elsewhere; χ² over the bits); a device that redraws
  ``B`` per report (no memoisation) is rejected.
* The estimator: ``R`` repetitions over a fixed population; each value's empirical
  variance against ``[f p(1−p) + (1−f) q(1−q)]/(n (p−q)²)`` (χ² variance test,
  Bonferroni; the ratio within 0.9–1.1 overall), rejecting ε₁·1.3 and ε₁/1.3.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.typing import NDArray

from ldp_shared.mechanisms import LongitudinalOSUE
from ldp_shared.rand import seeded_rng

from ._population import device_keys, fixed_population
from ._stats import (
    ALPHA,
    assert_variance_power,
    assert_z_power,
    binomial_pvalue,
    bonferroni_reject,
    chi2_sf,
    variance_ratio_pvalue,
    wrong_epsilons,
)

pytestmark = pytest.mark.statistical

SEED = 20_220_020
D, INFINITY, EPSILON = 6, 3.0, 1.0
DEVICES = 6_000
FREQUENCIES = np.array([0.35, 0.25, 0.2, 0.1, 0.1, 0.0])
N, R = 2_000, 400


def mechanism(epsilon: float = EPSILON, infinity: float = INFINITY) -> LongitudinalOSUE:
    return LongitudinalOSUE(d=D, epsilon=epsilon, epsilon_infinity=infinity)


def values(count: int) -> NDArray[np.int64]:
    return np.arange(count, dtype=np.int64) % D


def split_rates(
    bits: NDArray[np.bool_], truth: NDArray[np.int64]
) -> tuple[tuple[int, int], tuple[int, int]]:
    """``(ones, trials)`` at the true bits and at all the other bits."""
    true_bits = bits[np.arange(truth.size), truth]
    on, on_trials = int(true_bits.sum()), truth.size
    off, off_trials = int(bits.sum()) - on, bits.size - on_trials
    return (on, on_trials), (off, off_trials)


def permanent_draws(
    mech: LongitudinalOSUE, seed: int
) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
    """Every value under each of ``DEVICES / D`` device keys: independent vectors."""
    keys = device_keys(DEVICES // D, seed)
    truth = np.tile(np.arange(D), len(keys))
    packed = np.concatenate([mech.permanent(np.arange(D), key) for key in keys])
    return truth, np.unpackbits(packed, axis=1, count=D).view(np.bool_)


def test_permanent_rates_with_power() -> None:
    right = mechanism()
    truth, bits = permanent_draws(right, SEED)
    (on, on_n), (off, off_n) = split_rates(bits, truth)
    assert binomial_pvalue(on, on_n, right.p1) >= ALPHA / 2
    assert binomial_pvalue(off, off_n, right.q1) >= ALPHA / 2
    for k, wrong_infinity in enumerate(wrong_epsilons(INFINITY)):
        wrong = mechanism(infinity=wrong_infinity, epsilon=EPSILON)
        assert_z_power(off_n, right.q1, wrong.q1, ALPHA)
        truth, bits = permanent_draws(wrong, SEED + 1 + k)
        (off, off_n) = split_rates(bits, truth)[1]
        assert binomial_pvalue(off, off_n, right.q1) < ALPHA


def memoised_reports(mech: LongitudinalOSUE, seed: int) -> NDArray[np.bool_]:
    """One report of each of ``DEVICES`` devices (value ``i mod D``), each with its key."""
    gen = seeded_rng(seed)
    keys = device_keys(DEVICES, seed)
    return np.concatenate(
        [mech.perturb_memoised(np.array([i % D]), key, gen) for i, key in enumerate(keys)]
    )


@pytest.mark.parametrize("memoised", [False, True], ids=["fresh", "memoised"])
def test_one_report_follows_the_chained_rates(memoised: bool) -> None:
    right = mechanism()
    truth = values(DEVICES)

    def reports(mech: LongitudinalOSUE, seed: int) -> NDArray[np.bool_]:
        if memoised:
            return memoised_reports(mech, seed)
        return mech.perturb(truth, seeded_rng(seed))

    (on, on_n), (off, off_n) = split_rates(reports(right, SEED + 10), truth)
    assert binomial_pvalue(on, on_n, right.p) >= ALPHA / 2
    assert binomial_pvalue(off, off_n, right.q) >= ALPHA / 2
    for k, wrong_epsilon in enumerate(wrong_epsilons(EPSILON)):
        wrong = mechanism(epsilon=wrong_epsilon, infinity=max(INFINITY, wrong_epsilon))
        assert_z_power(off_n, right.q, wrong.q, ALPHA)
        off, off_n = split_rates(reports(wrong, SEED + 11 + k), truth)[1]
        assert binomial_pvalue(off, off_n, right.q) < ALPHA


def around_vector_pvalue(
    mech: LongitudinalOSUE, y: NDArray[np.bool_], b: NDArray[np.bool_]
) -> float:
    """χ² (``D`` degrees of freedom) of every bit's count of ones against ``p₂``/``q₂``."""
    rate = np.where(b, mech.p2, mech.q2)
    n = y.shape[0]
    z = (y.sum(axis=0) - n * rate) / np.sqrt(n * rate * (1 - rate))
    return chi2_sf(float(np.sum(z**2)), D)


def test_a_device_repeats_its_permanent_vector() -> None:
    mech = mechanism()
    key = device_keys(1, SEED + 20)[0]
    b = np.unpackbits(mech.permanent(np.array([2]), key), axis=1, count=D)[0].astype(bool)
    y = mech.perturb_memoised(np.full(DEVICES, 2, dtype=np.int64), key, seeded_rng(SEED + 21))
    assert around_vector_pvalue(mech, y, b) >= ALPHA
    # power: a device that redraws its permanent vector for every report
    forgetful = mech.perturb(np.full(DEVICES, 2, dtype=np.int64), seeded_rng(SEED + 22))
    assert around_vector_pvalue(mech, forgetful, b) < ALPHA


def simulate(mech: LongitudinalOSUE, seed: int) -> NDArray[np.float64]:
    """``R × D`` estimates, each from fresh devices holding the same population."""
    population = fixed_population(FREQUENCIES, N)
    reported = mech.perturb(np.tile(population, R), seeded_rng(seed)).reshape(R, N, D)
    counts = reported.sum(axis=1, dtype=np.int64)
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
