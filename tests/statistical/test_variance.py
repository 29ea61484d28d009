"""Each estimator against its own variance formula, on simulated reports.

A fixed data set of ``N`` records (exact true frequencies ``f``) is perturbed afresh
``R`` times; every repetition gives an estimate ``f̂`` of the ``d`` frequencies. For each
mechanism (SUE, OUE, GRR, MASK):

* unbiasedness: ``mean(f̂_j)`` against ``f_j`` with standard error ``σ_j/√R``
  (z-tests, Bonferroni over ``d``);
* variance: ``(R-1) s²_j / σ²_j ~ χ²_{R-1}`` with ``σ²_j = mechanism.variance(f, N)_j``
  (``frequency_variance``), two-sided, Bonferroni over ``d``. With the true values fixed,
  every bit (every report) is independent, so ``σ²_j`` is exact, not an approximation;
* the 95% intervals of ``estimate()`` cover ``f_j`` in 90%..99% of the ``R·d`` cases.

Power: estimates made from reports of the mechanism at ε·1.3 and ε/1.3 (debiased with
that mechanism's own, unbiased estimator) have another variance; the variance test
against the RIGHT ``σ²`` must reject them (:func:`assert_variance_power` checks the
design first). The coverage check must reject 80% intervals passed off as 95% ones.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from numpy.typing import NDArray

from ldp_shared.kernel import FrequencyEstimate
from ldp_shared.mechanisms import GeneralizedRandomizedResponse, Mask, UnaryEncoding
from ldp_shared.rand import seeded_rng

from ._stats import (
    ALPHA,
    assert_variance_power,
    bonferroni_reject,
    normal_two_sided_pvalue,
    variance_ratio_pvalue,
    wrong_epsilons,
)

pytestmark = pytest.mark.statistical

SEED = 27_182_818
N = 2_000  # reports per repetition
R = 500  # repetitions
COVERAGE_RANGE = (0.90, 0.99)

FREQUENCIES = np.array([0.4, 0.2, 0.15, 0.1, 0.08, 0.05, 0.02, 0.0])  # categorical
SUPPORTS = np.array([0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.05, 0.0])  # MASK item supports
D = FREQUENCIES.size

Mechanism = UnaryEncoding | GeneralizedRandomizedResponse | Mask


def _categorical_data() -> NDArray[np.int64]:
    counts = np.rint(FREQUENCIES * N).astype(np.int64)
    assert counts.sum() == N
    return np.repeat(np.arange(D, dtype=np.int64), counts)


def _basket_data() -> NDArray[np.bool_]:
    counts = np.rint(SUPPORTS * N).astype(np.int64)
    baskets = np.zeros((N, D), dtype=bool)
    for j, c in enumerate(counts):
        baskets[np.arange(c) * 7 % N, j] = True  # spread over the rows (7 is coprime to N)
    assert np.array_equal(baskets.sum(axis=0), counts)
    return baskets


def simulate_sums(mech: Mechanism, rng: np.random.Generator) -> NDArray[np.int64]:
    """``R × d`` sufficient statistics, each row from a fresh perturbation of the data."""
    if isinstance(mech, Mask):
        data_b = _basket_data()
        reported = mech.perturb(np.tile(data_b, (R, 1)), rng)
        sums = reported.reshape(R, N, D).sum(axis=1)
    elif isinstance(mech, GeneralizedRandomizedResponse):
        values = np.tile(_categorical_data(), R)
        reported_v = mech.perturb(values, rng).reshape(R, N)
        offsets = (np.arange(R) * D)[:, None]
        sums = np.bincount((reported_v + offsets).ravel(), minlength=R * D).reshape(R, D)
    else:
        values = np.tile(_categorical_data(), R)
        sums = mech.perturb(values, rng).reshape(R, N, D).sum(axis=1)
    return np.asarray(sums, dtype=np.int64)


def simulate(mech: Mechanism, rng: np.random.Generator) -> list[FrequencyEstimate]:
    """``R`` estimates (95% intervals), each from a fresh perturbation of the data."""
    return [mech.estimate(row, N) for row in simulate_sums(mech, rng)]


def truth(mech: Mechanism) -> NDArray[np.float64]:
    return SUPPORTS if isinstance(mech, Mask) else FREQUENCIES


def moment_pvalues(
    estimates: NDArray[np.float64], f: NDArray[np.float64], variance: NDArray[np.float64]
) -> tuple[list[float], list[float]]:
    mean = estimates.mean(axis=0)
    s2 = estimates.var(axis=0, ddof=1)
    bias_p = [
        normal_two_sided_pvalue((mean[j] - f[j]) / math.sqrt(variance[j] / R)) for j in range(D)
    ]
    var_p = [variance_ratio_pvalue(float(s2[j]), float(variance[j]), R) for j in range(D)]
    return bias_p, var_p


def coverage(estimates: list[FrequencyEstimate], f: NDArray[np.float64]) -> float:
    low = np.array([e.ci_low for e in estimates])
    high = np.array([e.ci_high for e in estimates])
    return float(np.mean((low <= f) & (f <= high)))


MECHANISMS: dict[str, Callable[[float], Mechanism]] = {
    "sue": lambda eps: UnaryEncoding(D, eps, "sue"),
    "oue": lambda eps: UnaryEncoding(D, eps, "oue"),
    "grr": lambda eps: GeneralizedRandomizedResponse(D, eps),
    # MASK is parameterised by p; ε here is the per-item ε = ln(p/(1-p))
    "mask": lambda eps: Mask(D, 1.0 / (1.0 + math.exp(-eps))),
}
EPSILON = {"sue": 1.0, "oue": 1.0, "grr": 2.0, "mask": math.log(4.0)}  # MASK: p = 0.8


Simulated = tuple[Mechanism, NDArray[np.int64]]


@pytest.fixture(scope="module", params=sorted(MECHANISMS))
def simulated(request: pytest.FixtureRequest) -> Simulated:
    name: str = request.param
    mech = MECHANISMS[name](EPSILON[name])
    return mech, simulate_sums(mech, seeded_rng(SEED))


def test_mask_case_is_p_08() -> None:
    assert MECHANISMS["mask"](EPSILON["mask"]).p == pytest.approx(0.8, rel=1e-12)


def test_unbiased_with_the_stated_variance(simulated: Simulated) -> None:
    mech, sums = simulated
    f = truth(mech)
    f_hat = np.array([mech.estimate(row, N).estimate for row in sums])
    bias_p, var_p = moment_pvalues(f_hat, f, mech.variance(f, N))
    assert not bonferroni_reject(bias_p, ALPHA), bias_p
    assert not bonferroni_reject(var_p, ALPHA), var_p


def test_interval_coverage(simulated: Simulated) -> None:
    mech, sums = simulated
    estimates = [mech.estimate(row, N) for row in sums]  # the default: 95% intervals
    assert all(e.confidence == 0.95 for e in estimates)
    lo, hi = COVERAGE_RANGE
    assert lo <= coverage(estimates, truth(mech)) <= hi


def test_interval_coverage_power(simulated: Simulated) -> None:
    """80% intervals passed off as 95% ones fall outside the accepted coverage range."""
    mech, sums = simulated
    narrow = [mech.estimate(row, N, confidence=0.80) for row in sums]
    lo, hi = COVERAGE_RANGE
    assert not lo <= coverage(narrow, truth(mech)) <= hi


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_variance_power_wrong_epsilon(name: str) -> None:
    right = MECHANISMS[name](EPSILON[name])
    f = truth(right)
    right_var = right.variance(f, N)
    for k, wrong_eps in enumerate(wrong_epsilons(EPSILON[name])):
        wrong = MECHANISMS[name](wrong_eps)
        ratios = wrong.variance(f, N) / right_var
        strongest = float(ratios[np.argmax(np.abs(np.log(ratios)))])
        assert_variance_power(strongest, R, ALPHA / D)
        f_hat = np.array([e.estimate for e in simulate(wrong, seeded_rng(SEED + 1 + k))])
        _, var_p = moment_pvalues(f_hat, f, right_var)
        assert bonferroni_reject(var_p, ALPHA), (wrong_eps, var_p)
