"""Coverage of the score intervals of the debiased-bit mechanisms at n = 100, 1,000, 10⁵.

* Small n, through the real mechanisms (perturb, count, estimate): in settings where the
  normal interval with the plug-in variance falls short of 95 % (the first is the one
  issue 11 reports: GRR, d = 64, ε = 1, n = 100, f = ½), the score interval is not
  significantly below 95 % (one-sided z-test of the coverage over ``RUNS`` independent
  collections) and the normal interval is. The normal interval's shortfall is computed
  exactly beforehand (the cell count's exact distribution), so the design, not the seed,
  makes that rejection certain.
* n = 100 and 1,000, from the cell count's exact distribution (Binomial(m, p) +
  Binomial(n − m, q) with m = n·f holders): in every setting of a grid with f near 0,
  ½ and near 1, the coverage is not significantly below 95 %; at 1,000 and 10⁵ neither
  is the coverage pooled over the grid.
* Power: the same tests reject when the reports come from a channel at ε·1.3 or ε/1.3
  but are estimated with the stated ε (n = 10⁵; at n = 100 a wrong ε hides inside the
  interval's width, so no test of coverage could tell it there).

α = ALPHA for the module's file, Bonferroni inside each test.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest
from numpy.typing import NDArray

from ldp_shared.kernel import FrequencyEstimate, estimate_frequencies
from ldp_shared.mechanisms import GeneralizedRandomizedResponse, OptimizedUnaryEncoding
from ldp_shared.mechanisms.categorical import BitwiseRandomizer
from ldp_shared.rand import seeded_rng

from ._stats import ALPHA, assert_z_power, binomial_z, wrong_epsilons, z_critical

pytestmark = pytest.mark.statistical

SEED = 11_011_001
NOMINAL = 0.95
RUNS = 10_000
SMALL = [  # (mechanism, d, ε, f) at n = 100: the normal interval is short here
    ("grr", 64, 1.0, 0.5),
    ("grr", 64, 1.0, 0.9),
    ("grr", 16, 4.0, 0.1),
    ("oue", 8, 4.0, 1.0),
]
GRID = [  # (mechanism, d, ε) × f ∈ FREQUENCIES at n = 1,000 and 10⁵
    ("grr", 4, 1.0),
    ("grr", 64, 1.0),
    ("oue", 64, 0.5),
    ("oue", 8, 4.0),
]
FREQUENCIES = [0.0, 0.01, 0.5, 0.99, 1.0]


def mechanism(name: str, d: int, epsilon: float) -> BitwiseRandomizer:
    if name == "grr":
        return GeneralizedRandomizedResponse(d=d, epsilon=epsilon)
    return OptimizedUnaryEncoding(d=d, epsilon=epsilon)


def _binomial_pmf(trials: int, rate: float) -> NDArray[np.float64]:
    k = np.arange(trials + 1)
    if rate in (0.0, 1.0):
        return (k == (trials if rate == 1.0 else 0)).astype(np.float64)
    log = (
        math.lgamma(trials + 1)
        - np.array([math.lgamma(i + 1) + math.lgamma(trials - i + 1) for i in k])
        + k * math.log(rate)
        + (trials - k) * math.log1p(-rate)
    )
    return np.exp(log)


def exact_normal_coverage(p: float, q: float, n: int, holders: int) -> float:
    """The normal interval's coverage, summed over the cell count's exact distribution."""
    pmf = np.convolve(_binomial_pmf(holders, p), _binomial_pmf(n - holders, q))
    counts = np.arange(n + 1)
    score = estimate_frequencies(counts, n, p, q, NOMINAL)
    normal = FrequencyEstimate.normal(n, score.estimate, score.stderr, NOMINAL)
    truth = holders / n
    covers = (normal.ci_low <= truth) & (truth <= normal.ci_high)
    return float(pmf[covers].sum())


def one_sided_short(covered: int, trials: int, tests: int) -> bool:
    """Whether the coverage is significantly below :data:`NOMINAL` (one-sided, α/tests)."""
    return binomial_z(covered, trials, NOMINAL) < -z_critical(2.0 * ALPHA / tests)


def perturbed_collections(
    mech: BitwiseRandomizer, n: int, holders: int, rng: np.random.Generator
) -> NDArray[np.int64]:
    """Per-cell counts (``RUNS × d``) of ``RUNS`` collections of ``n`` perturbed reports,
    ``holders`` of them holding value 0 and the rest spread over the other values."""
    d = mech.d
    others = 1 + np.arange(n - holders) % (d - 1)
    values = np.tile(np.concatenate([np.zeros(holders, dtype=np.int64), others]), RUNS)
    answers = mech.perturb(values, rng=rng)
    if answers.ndim == 1:  # a value index per report (GRR)
        run = np.repeat(np.arange(RUNS), n)
        return np.bincount(run * d + answers, minlength=RUNS * d).reshape(RUNS, d)
    return answers.reshape(RUNS, n, d).sum(axis=1, dtype=np.int64)


def test_score_covers_where_normal_does_not_at_n_100() -> None:
    rng = seeded_rng(SEED)
    n, tests = 100, 2 * len(SMALL)
    for name, d, epsilon, f in SMALL:
        mech = mechanism(name, d, epsilon)
        holders = round(n * f)
        normal_rate = exact_normal_coverage(mech.p, mech.q, n, holders)
        assert_z_power(RUNS, NOMINAL, normal_rate, ALPHA / tests)
        counts = perturbed_collections(mech, n, holders, rng)[:, 0]
        score = mech.estimate(counts, n, NOMINAL)
        normal = FrequencyEstimate.normal(n, score.estimate, score.stderr, NOMINAL)
        assert score.interval == "score" and normal.interval == "normal"
        for est, short in ((score, False), (normal, True)):
            covered = int(np.sum((est.ci_low <= f) & (f <= est.ci_high)))
            assert one_sided_short(covered, RUNS, tests) is short, (name, d, epsilon, f, covered)


def grid_coverage(n: int, epsilon_scale: float, rng: np.random.Generator) -> tuple[int, int]:
    """Covered and total intervals over :data:`GRID` × :data:`FREQUENCIES`, with reports
    drawn from the channel at ``ε · epsilon_scale`` and estimated at the stated ε."""
    covered = total = 0
    for name, d, epsilon in GRID:
        stated = mechanism(name, d, epsilon)
        actual = mechanism(name, d, epsilon * epsilon_scale)
        for f in FREQUENCIES:
            holders = round(n * f)
            count = rng.binomial(holders, actual.p, RUNS) + rng.binomial(
                n - holders, actual.q, RUNS
            )
            est = stated.estimate(count, n, NOMINAL)
            truth = holders / n
            covered += int(np.sum((est.ci_low <= truth) & (truth <= est.ci_high)))
            total += RUNS
    return covered, total


@pytest.mark.parametrize("n", [100, 1_000])
def test_score_covers_in_every_setting_of_the_grid(n: int) -> None:
    rng = seeded_rng(SEED + n)
    tests = len(GRID) * len(FREQUENCIES)
    for name, d, epsilon in GRID:
        mech = mechanism(name, d, epsilon)
        for f in FREQUENCIES:
            holders = round(n * f)
            count = rng.binomial(holders, mech.p, RUNS) + rng.binomial(n - holders, mech.q, RUNS)
            est = mech.estimate(count, n, NOMINAL)
            truth = holders / n
            covered = int(np.sum((est.ci_low <= truth) & (truth <= est.ci_high)))
            assert not one_sided_short(covered, RUNS, tests), (name, d, epsilon, f, covered)


@pytest.mark.parametrize("n", [1_000, 100_000])
def test_score_coverage_pooled_over_the_grid(n: int) -> None:
    covered, total = grid_coverage(n, 1.0, seeded_rng(SEED + 2 * n))
    assert not one_sided_short(covered, total, 1), (n, covered / total)


def expected_wrong_coverage(n: int, scale: float) -> float:
    """The pooled coverage of :func:`grid_coverage` by the normal approximation of the
    estimate under the wrong channel (its bias over its standard deviation)."""
    z = z_critical(1.0 - NOMINAL)
    rates = []
    for name, d, epsilon in GRID:
        stated, actual = mechanism(name, d, epsilon), mechanism(name, d, epsilon * scale)
        for f in FREQUENCIES:
            bias = (f * (actual.p - stated.p) + (1 - f) * (actual.q - stated.q)) / (
                stated.p - stated.q
            )
            sd = math.sqrt(float(actual.variance(np.array([f]), n)[0])) * (
                (actual.p - actual.q) / (stated.p - stated.q)
            )
            dist = NormalDist(bias, sd) if sd > 0 else None
            rates.append(1.0 if dist is None else dist.cdf(z * sd) - dist.cdf(-z * sd))
    return float(np.mean(rates))


@pytest.mark.parametrize("scale", wrong_epsilons(1.0))
def test_wrong_epsilon_channel_is_caught(scale: float) -> None:
    n = 100_000
    total = len(GRID) * len(FREQUENCIES) * RUNS
    assert_z_power(total, NOMINAL, expected_wrong_coverage(n, scale), ALPHA)
    covered, total = grid_coverage(n, scale, seeded_rng(SEED + 7))
    assert one_sided_short(covered, total, 1), (scale, covered / total)
