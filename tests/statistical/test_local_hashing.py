"""FLH estimates of named values against the truth, over the salt and the perturbation.

A fixed population (a heavy value, a light one, the rest spread over many strings) is
reported ``R`` times, each time under a fresh salt (a fresh public hash family) and fresh
noise. For each candidate (heavy, light, and a value nobody holds) the ``R`` z-scores
``(f̂ − f)/stderr`` with the stated stderr must be standard normal:

* unbiased: ``√R · mean(z)`` is a standard normal z-test;
* calibrated: the sample variance of ``z`` against 1 (χ² variance-ratio test).

Both per candidate, Bonferroni over the ``3 × 2`` p-values at :data:`ALPHA`. With ``k``
small the collision term ``(F₂ − f²)/((g − 1)k)`` dominates the variance of the light and
absent values, so a stated variance without it fails the calibration test (power check
1, designed by :func:`assert_variance_power`). Power check 2: data perturbed at ε·1.3 and
ε/1.3 (the same ``g``, so the reports fit) but estimated with the ε randomizer shifts the
heavy value's estimate by ``f (p' − p)/(p − 1/g)``, which the unbiasedness test detects
(designed by :func:`assert_shift_power`, in the manner of ``assert_z_power``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest
from numpy.typing import NDArray

from ldp_shared.kernel import frequency_variance
from ldp_shared.mechanisms import LocalHashing, LocalHashingSpec
from ldp_shared.mechanisms.local_hashing import bucket_count
from ldp_shared.rand import seeded_rng

from ._population import TESTS, population, pvalues
from ._stats import (
    ALPHA,
    POWER_MARGIN_SD,
    assert_variance_power,
    bonferroni_reject,
    wrong_epsilons,
    z_critical,
)

pytestmark = pytest.mark.statistical

SEED = 7_770_001


@dataclass(frozen=True)
class Runs:
    z: NDArray[np.float64]  # R × candidates, with the stated stderr
    z_sampling_only: NDArray[np.float64]  # the same without the collision term


def simulate(
    epsilon: float, k: int, n: int, runs: int, seed: int, data_epsilon: float | None = None
) -> Runs:
    """``runs`` collections of the population, each under a fresh salt, perturbed at
    ``data_epsilon`` (default ``epsilon``) and estimated with the ε randomizer."""
    pop = population(n)
    rng = seeded_rng(seed)
    z, z_sampling = [], []
    for _ in range(runs):
        attribute = LocalHashingSpec(
            name="word", mechanism="flh", hashes=k, salt=rng.bytes(16).hex()
        )
        right = attribute.randomizer(epsilon)
        data = right if data_epsilon is None else attribute.randomizer(data_epsilon)
        assert data.g == right.g
        keys = attribute.encode([*pop.names, "nobody"])
        reports = data.perturb(np.repeat(keys[:-1], pop.counts), rng)
        stats = {"counts": right.accumulate(reports)["counts"]}
        est = right.estimate_values(stats, n, keys[[0, 1, -1]], 0.95)
        error = est.estimate - pop.truth
        z.append(error / est.stderr)
        sampling = frequency_variance(est.estimate, n, right.p, right.q_star)
        z_sampling.append(error / np.sqrt(sampling))
    return Runs(np.asarray(z), np.asarray(z_sampling))


def stated_variance(m: LocalHashing, n: int, f: float, f2: float) -> float:
    """The module's variance at the truth: sampling plus finite-k collisions."""
    sampling = float(frequency_variance(np.array([f]), n, m.p, m.q_star)[0])
    return sampling + max(f2 - f * f, 0.0) / ((m.g - 1) * m.k)


def stated_variance_bounds(m: LocalHashing, n: int) -> tuple[float, float]:
    """The least and the most the stated variance can be, whatever the data: the sampling
    term is linear in the clipped ``f̂`` and ``F₂`` is clipped to ``[0, 1]``."""
    ends = frequency_variance(np.array([0.0, 1.0]), n, m.p, m.q_star)
    return float(ends.min()), float(ends.max()) + 1.0 / ((m.g - 1) * m.k)


def assert_shift_power(
    right: LocalHashing, wrong: LocalHashing, n: int, runs: int, alpha: float
) -> None:
    """Check the design: ``√R · mean(z)`` of the heavy value detects the wrong ε.

    Under the wrong ε, ``f̂`` (estimated with the right ``p``) has mean
    ``f + f (p' − p)/(p − 1/g)`` and standard deviation ``(p' − 1/g)/(p − 1/g)`` times
    the wrong mechanism's own; the stated stderr lies between the bounds of
    :func:`stated_variance_bounds`. With the largest stderr in the mean and the smallest
    in the spread (conservative both ways), the mean must clear the critical value by
    :data:`POWER_MARGIN_SD` standard deviations."""
    pop = population(n)
    f = float(pop.truth[0])
    q_star = right.q_star
    shift = f * (wrong.p - right.p) / (right.p - q_star)
    spread = math.sqrt(stated_variance(wrong, n, f, pop.f2)) * (
        (wrong.p - q_star) / (right.p - q_star)
    )
    low, high = stated_variance_bounds(right, n)
    mean = abs(shift) * math.sqrt(runs) / math.sqrt(high)
    sd = spread / math.sqrt(low)
    assert mean - z_critical(alpha) >= POWER_MARGIN_SD * sd, (
        f"underpowered design at ε = {wrong.epsilon}: E z = {mean:.2f}, sd {sd:.2f}"
    )


# (ε, k, n, R): g = 4 with few functions (collisions dominate); g = 2 and g = 256, where
# ε·1.3 and ε/1.3 keep the same g (the wrong-ε reports fit the right randomizer)
CASES = [
    pytest.param(1.0, 16, 4_000, 400, id="g4-k16"),
    pytest.param(0.25, 256, 4_000, 400, id="g2-k256"),
    pytest.param(8.0, 4_096, 20_000, 200, id="g256-k4096"),
]
SAME_G = [case for case in CASES if case.id != "g4-k16"]


@pytest.mark.parametrize(("epsilon", "k", "n", "runs"), CASES)
def test_named_values_are_unbiased_with_the_stated_stderr(
    epsilon: float, k: int, n: int, runs: int
) -> None:
    result = simulate(epsilon, k, n, runs, SEED)
    assert np.all(np.isfinite(result.z))
    assert not bonferroni_reject(pvalues(result.z), ALPHA), pvalues(result.z)


def test_the_collision_term_is_needed() -> None:
    """Power check 1: at ``g = 4, k = 16`` the collision term is about twice the sampling
    term for the light and absent values; without it the calibration test rejects."""
    epsilon, k, n, runs = 1.0, 16, 4_000, 400
    m = LocalHashing(k=k, epsilon=epsilon)
    pop = population(n)
    sampling = float(frequency_variance(np.array([0.0]), n, m.p, m.q_star)[0])
    ratio = stated_variance(m, n, 0.0, pop.f2) / sampling
    assert ratio > 2.5
    assert_variance_power(ratio, runs, ALPHA / TESTS)
    result = simulate(epsilon, k, n, runs, SEED)
    assert bonferroni_reject(pvalues(result.z_sampling_only), ALPHA)


@pytest.mark.parametrize(("epsilon", "k", "n", "runs"), SAME_G)
def test_wrong_epsilon_is_rejected(epsilon: float, k: int, n: int, runs: int) -> None:
    """Power check 2: reports perturbed at ε·1.3 or ε/1.3, estimated at ε."""
    right = LocalHashing(k=k, epsilon=epsilon)
    for wrong_epsilon in wrong_epsilons(epsilon):
        assert bucket_count(wrong_epsilon) == right.g
        assert_shift_power(right, LocalHashing(k=k, epsilon=wrong_epsilon), n, runs, ALPHA / TESTS)
        result = simulate(epsilon, k, n, runs, SEED + 1, data_epsilon=wrong_epsilon)
        assert bonferroni_reject(pvalues(result.z), ALPHA), wrong_epsilon
