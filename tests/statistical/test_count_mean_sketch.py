"""HCMS estimates of named values against the truth, over the salt and the perturbation.

A fixed population (a heavy value, a light one, the rest spread over many strings) is
reported ``R`` times, each time under a fresh salt (a fresh public hash family) and fresh
noise. For each candidate (heavy, light, and a value nobody holds) the ``R`` z-scores
``(f̂ − f)/stderr`` with the stated stderr must be standard normal:

* unbiased: ``√R · mean(z)`` is a standard normal z-test;
* calibrated: the sample variance of ``z`` against 1 (χ² variance-ratio test).

Both per candidate, Bonferroni over the ``3 × 2`` p-values at :data:`ALPHA`. Power check:
reports perturbed at ε·1.3 and ε/1.3 but estimated with the ε randomizer scale the
debiased reports by ``r = (p′ − q′)/(p − q)``, shifting the heavy value's estimate by
``m/(m−1)·(r − 1)·(f + (1 − f)/m)``, which the unbiasedness test detects (designed by
:func:`assert_shift_power`, in the manner of ``assert_z_power``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from numpy.typing import NDArray

from ldp_shared.mechanisms import CountMeanSketch, CountMeanSketchSpec
from ldp_shared.rand import seeded_rng

from ._population import TESTS, population, pvalues
from ._stats import (
    ALPHA,
    POWER_MARGIN_SD,
    bonferroni_reject,
    wrong_epsilons,
    z_critical,
)

pytestmark = pytest.mark.statistical

SEED = 7_770_101


def simulate(
    epsilon: float,
    k: int,
    m: int,
    n: int,
    runs: int,
    seed: int,
    data_epsilon: float | None = None,
) -> NDArray[np.float64]:
    """The ``runs × 3`` z-scores of ``runs`` collections, each under a fresh salt,
    perturbed at ``data_epsilon`` (default ``epsilon``) and estimated at ``epsilon``."""
    pop = population(n)
    rng = seeded_rng(seed)
    z = []
    for _ in range(runs):
        attribute = CountMeanSketchSpec(
            name="word", mechanism="hcms", hashes=k, columns=m, salt=rng.bytes(16).hex()
        )
        right = attribute.randomizer(epsilon)
        data = right if data_epsilon is None else attribute.randomizer(data_epsilon)
        keys = attribute.encode([*pop.names, "nobody"])
        reports = data.perturb(np.repeat(keys[:-1], pop.counts), rng)
        stats = {"signs": right.accumulate(right.unpack(right.pack(reports)).values)["signs"]}
        est = right.estimate_values(stats, n, keys[[0, 1, -1]], 0.95)
        z.append((est.estimate - pop.truth) / est.stderr)
    return np.asarray(z)


def stated_variance_bounds(m: CountMeanSketch, n: int) -> tuple[float, float]:
    """The least and the most the stated variance can be, whatever the data: it decreases
    in the clipped ``f̂`` and increases in ``F₂`` (clipped to ``[0, 1]``)."""
    ends = m.variance(np.array([1.0, 0.0]), n, 0.0)
    return float(ends[0]), float(m.variance(np.array([0.0]), n, 1.0)[0])


def assert_shift_power(
    right: CountMeanSketch, wrong: CountMeanSketch, n: int, runs: int, alpha: float
) -> None:
    """Check the design: ``√R · mean(z)`` of the heavy value detects the wrong ε.

    Under the wrong ε, ``f̂`` has mean ``f + m/(m−1)·(r − 1)(f + (1 − f)/m)``; its
    variance is still at most the largest stated one (``z² = 1/(p − q)²`` whatever the
    data). With the largest stderr in the mean and the ratio of the largest to the
    smallest in the spread (conservative both ways), the mean must clear the critical
    value by :data:`POWER_MARGIN_SD` standard deviations."""
    f = float(population(n).truth[0])
    ratio = (wrong.p - wrong.q) / (right.p - right.q)
    cols = right.m
    shift = cols / (cols - 1) * (ratio - 1.0) * (f + (1.0 - f) / cols)
    low, high = stated_variance_bounds(right, n)
    mean = abs(shift) * math.sqrt(runs) / math.sqrt(high)
    sd = math.sqrt(high / low)
    assert mean - z_critical(alpha) >= POWER_MARGIN_SD * sd, (
        f"underpowered design at ε = {wrong.epsilon}: E z = {mean:.2f}, sd {sd:.2f}"
    )


# (ε, k, m, n, R): few functions and columns (collisions matter), and a wider sketch
CASES = [
    pytest.param(1.0, 16, 16, 4_000, 400, id="k16-m16"),
    pytest.param(3.0, 64, 256, 10_000, 200, id="k64-m256"),
]


@pytest.mark.parametrize(("epsilon", "k", "m", "n", "runs"), CASES)
def test_named_values_are_unbiased_with_the_stated_stderr(
    epsilon: float, k: int, m: int, n: int, runs: int
) -> None:
    z = simulate(epsilon, k, m, n, runs, SEED)
    assert np.all(np.isfinite(z))
    assert not bonferroni_reject(pvalues(z), ALPHA), pvalues(z)


@pytest.mark.parametrize(("epsilon", "k", "m", "n", "runs"), CASES)
def test_wrong_epsilon_is_rejected(epsilon: float, k: int, m: int, n: int, runs: int) -> None:
    """Reports perturbed at ε·1.3 or ε/1.3, estimated at ε."""
    right = CountMeanSketch(k=k, m=m, epsilon=epsilon)
    for wrong_epsilon in wrong_epsilons(epsilon):
        wrong = CountMeanSketch(k=k, m=m, epsilon=wrong_epsilon)
        assert_shift_power(right, wrong, n, runs, ALPHA / TESTS)
        z = simulate(epsilon, k, m, n, runs, SEED + 1, data_epsilon=wrong_epsilon)
        assert bonferroni_reject(pvalues(z), ALPHA), wrong_epsilon
