"""GRR perturbation against its stated channel, with power checks.

* Keep rate: the reports equal to the true value are Binomial(n, p) (z-test).
* Uniformity over the others: for each true value ``x``, the reports ``y ≠ x`` are
  uniform over the ``d - 1`` other values (per-row χ², ``d(d-2)`` df).
* Whole channel: the ``d × d`` table of (true, reported) against ``channel_matrix()``.

Power: the keep-rate and whole-channel tests reject GRR built with ε·1.3 and ε/1.3
(tested against the RIGHT p, q). The uniformity test does not depend on ε; its power
check is a sampler with the classic off-by-one (draw among all ``d`` values and move a
hit on the true value to the next one), whose keep rate is still exactly ``p``.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.typing import NDArray

from ldp_shared.mechanisms import GeneralizedRandomizedResponse
from ldp_shared.rand import seeded_rng

from ._stats import (
    ALPHA,
    assert_z_power,
    binomial_pvalue,
    chi2_gof_rows,
    wrong_epsilons,
)

pytestmark = pytest.mark.statistical

SEED = 5_550_001
CASES = [
    pytest.param(5, 1.0, 12_000, id="d5-eps1"),
    pytest.param(40, 2.0, 1_000, id="d40-eps2"),
]


def _values(d: int, per_value: int) -> NDArray[np.int64]:
    return np.tile(np.arange(d, dtype=np.int64), per_value)


def keep_pvalue(
    right: GeneralizedRandomizedResponse, values: NDArray[np.int64], reported: NDArray[np.int64]
) -> float:
    return binomial_pvalue(int(np.sum(reported == values)), values.size, right.p)


def uniformity_pvalue(d: int, values: NDArray[np.int64], reported: NDArray[np.int64]) -> float:
    moved = reported != values
    table = np.zeros((d, d), dtype=np.int64)
    np.add.at(table, (values[moved], reported[moved]), 1)
    # drop the diagonal: row x is a sample over the d-1 values other than x
    off = table[~np.eye(d, dtype=bool)].reshape(d, d - 1)
    return chi2_gof_rows(off, np.full((d, d - 1), 1.0 / (d - 1)), pool=False).pvalue


def channel_pvalue(
    right: GeneralizedRandomizedResponse, values: NDArray[np.int64], reported: NDArray[np.int64]
) -> float:
    table = np.zeros((right.d, right.d), dtype=np.int64)
    np.add.at(table, (values, reported), 1)
    return chi2_gof_rows(table, right.channel_matrix().T, pool=False).pvalue


@pytest.mark.parametrize(("d", "epsilon", "per_value"), CASES)
def test_keep_rate(d: int, epsilon: float, per_value: int) -> None:
    mech = GeneralizedRandomizedResponse(d, epsilon)
    values = _values(d, per_value)
    reported = mech.perturb(values, seeded_rng(SEED))
    assert reported.min() >= 0 and reported.max() < d
    assert keep_pvalue(mech, values, reported) >= ALPHA


@pytest.mark.parametrize(("d", "epsilon", "per_value"), CASES)
def test_keep_rate_power(d: int, epsilon: float, per_value: int) -> None:
    right = GeneralizedRandomizedResponse(d, epsilon)
    values = _values(d, per_value)
    for wrong_eps in wrong_epsilons(epsilon):
        wrong = GeneralizedRandomizedResponse(d, wrong_eps)
        assert_z_power(values.size, right.p, wrong.p, ALPHA)
        reported = wrong.perturb(values, seeded_rng(SEED + 1))
        assert keep_pvalue(right, values, reported) < ALPHA, wrong_eps


@pytest.mark.parametrize(("d", "epsilon", "per_value"), CASES)
def test_uniform_over_the_others(d: int, epsilon: float, per_value: int) -> None:
    mech = GeneralizedRandomizedResponse(d, epsilon)
    values = _values(d, per_value)
    reported = mech.perturb(values, seeded_rng(SEED + 2))
    assert uniformity_pvalue(d, values, reported) >= ALPHA


def _off_by_one_perturb(
    mech: GeneralizedRandomizedResponse, values: NDArray[np.int64], rng: np.random.Generator
) -> NDArray[np.int64]:
    keep = rng.random(values.size) < mech.p
    other = rng.integers(0, mech.d, size=values.size)
    other = np.where(other == values, (values + 1) % mech.d, other)  # x+1 twice as likely
    return np.where(keep, values, other)


@pytest.mark.parametrize(("d", "epsilon", "per_value"), CASES)
def test_uniform_over_the_others_power(d: int, epsilon: float, per_value: int) -> None:
    mech = GeneralizedRandomizedResponse(d, epsilon)
    values = _values(d, per_value)
    reported = _off_by_one_perturb(mech, values, seeded_rng(SEED + 3))
    assert keep_pvalue(mech, values, reported) >= ALPHA  # the keep rate is right ...
    assert uniformity_pvalue(d, values, reported) < ALPHA  # ... the others are not uniform


@pytest.mark.parametrize(("d", "epsilon", "per_value"), CASES)
def test_whole_channel(d: int, epsilon: float, per_value: int) -> None:
    mech = GeneralizedRandomizedResponse(d, epsilon)
    values = _values(d, per_value)
    reported = mech.perturb(values, seeded_rng(SEED + 4))
    assert channel_pvalue(mech, values, reported) >= ALPHA


@pytest.mark.parametrize(("d", "epsilon", "per_value"), CASES)
def test_whole_channel_power(d: int, epsilon: float, per_value: int) -> None:
    right = GeneralizedRandomizedResponse(d, epsilon)
    values = _values(d, per_value)
    for wrong_eps in wrong_epsilons(epsilon):
        wrong = GeneralizedRandomizedResponse(d, wrong_eps)
        reported = wrong.perturb(values, seeded_rng(SEED + 5))
        assert channel_pvalue(right, values, reported) < ALPHA, wrong_eps
