"""SUE and OUE perturbation against their stated channel, with power checks.

Cases cover both samplers of the ``q`` bits: the byte sampler (``q ≥ 1/32``: SUE and OUE
at ε = 1) and the sparse gap sampler (``q < 1/32``: SUE at ε = 8, OUE at ε = 5).

* Flip rates: the ones among the true bits are Binomial(n, p), the ones among the false
  bits Binomial(n(d-1), q): two z-tests, Bonferroni at ``ALPHA``.
* Whole channel (d = 4): for each true value, the 16 output patterns against the column
  of ``channel_matrix()`` (χ², per-row, small cells pooled), which also catches
  correlated bits or a bit that depends on its position.

Power: data perturbed by the mechanism built with ε·1.3 or ε/1.3, tested against the
RIGHT p and q, must be rejected by the same test.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.typing import NDArray

from ldp_shared.kernel import GAP_SAMPLING_BELOW
from ldp_shared.mechanisms import UnaryEncoding
from ldp_shared.rand import seeded_rng

from ._stats import (
    ALPHA,
    assert_z_power,
    binomial_pvalue,
    bonferroni_reject,
    chi2_gof_rows,
    wrong_epsilons,
)

pytestmark = pytest.mark.statistical

SEED = 7_000_001
D_FLIP = 6
N_FLIP = 30_000  # reports: N true bits, N(d-1) false bits
D_CHANNEL = 4
N_PER_VALUE = 20_000

CASES = [
    pytest.param("sue", 1.0, id="sue-eps1-bytes"),
    pytest.param("sue", 8.0, id="sue-eps8-gaps"),
    pytest.param("oue", 1.0, id="oue-eps1-bytes"),
    pytest.param("oue", 5.0, id="oue-eps5-gaps"),
]


def _values(d: int, per_value: int) -> NDArray[np.int64]:
    return np.tile(np.arange(d, dtype=np.int64), per_value)


def flip_pvalues(
    right: UnaryEncoding, values: NDArray[np.int64], bits: NDArray[np.bool_]
) -> list[float]:
    n = values.size
    true_ones = int(bits[np.arange(n), values].sum())
    false_ones = int(bits.sum()) - true_ones
    return [
        binomial_pvalue(true_ones, n, right.p),
        binomial_pvalue(false_ones, n * (right.d - 1), right.q),
    ]


def channel_pvalue(
    right: UnaryEncoding, values: NDArray[np.int64], bits: NDArray[np.bool_]
) -> float:
    d = right.d
    patterns = bits.astype(np.int64) @ (1 << np.arange(d))  # output index of channel_matrix
    table = np.zeros((d, 2**d), dtype=np.int64)
    np.add.at(table, (values, patterns), 1)
    return chi2_gof_rows(table, right.channel_matrix().T).pvalue


def test_cases_cover_both_samplers() -> None:
    qs = [UnaryEncoding(2, eps, variant).q for variant, eps in (c.values for c in CASES)]
    assert any(q < GAP_SAMPLING_BELOW for q in qs)
    assert any(q >= GAP_SAMPLING_BELOW for q in qs)


@pytest.mark.parametrize(("variant", "epsilon"), CASES)
def test_flip_rates(variant: str, epsilon: float) -> None:
    mech = UnaryEncoding(D_FLIP, epsilon, variant)  # type: ignore[arg-type]
    values = _values(D_FLIP, N_FLIP // D_FLIP)
    bits = mech.perturb(values, seeded_rng(SEED))
    pvalues = flip_pvalues(mech, values, bits)
    assert not bonferroni_reject(pvalues, ALPHA), pvalues


@pytest.mark.parametrize(("variant", "epsilon"), CASES)
def test_flip_rates_power(variant: str, epsilon: float) -> None:
    right = UnaryEncoding(D_FLIP, epsilon, variant)  # type: ignore[arg-type]
    values = _values(D_FLIP, N_FLIP // D_FLIP)
    for wrong_eps in wrong_epsilons(epsilon):
        wrong = UnaryEncoding(D_FLIP, wrong_eps, variant)  # type: ignore[arg-type]
        # design: the q test alone has the power (OUE's p does not depend on ε)
        assert_z_power(values.size * (D_FLIP - 1), right.q, wrong.q, ALPHA / 2)
        bits = wrong.perturb(values, seeded_rng(SEED + 1))
        assert bonferroni_reject(flip_pvalues(right, values, bits), ALPHA), wrong_eps


@pytest.mark.parametrize(("variant", "epsilon"), CASES)
def test_whole_channel(variant: str, epsilon: float) -> None:
    mech = UnaryEncoding(D_CHANNEL, epsilon, variant)  # type: ignore[arg-type]
    values = _values(D_CHANNEL, N_PER_VALUE)
    bits = mech.perturb(values, seeded_rng(SEED + 2))
    assert channel_pvalue(mech, values, bits) >= ALPHA


@pytest.mark.parametrize(("variant", "epsilon"), CASES)
def test_whole_channel_power(variant: str, epsilon: float) -> None:
    right = UnaryEncoding(D_CHANNEL, epsilon, variant)  # type: ignore[arg-type]
    values = _values(D_CHANNEL, N_PER_VALUE)
    for wrong_eps in wrong_epsilons(epsilon):
        wrong = UnaryEncoding(D_CHANNEL, wrong_eps, variant)  # type: ignore[arg-type]
        bits = wrong.perturb(values, seeded_rng(SEED + 3))
        assert channel_pvalue(right, values, bits) < ALPHA, wrong_eps


def test_whole_channel_power_correlated_bits() -> None:
    """A sampler whose false bits are right one by one but not independent is caught."""
    right = UnaryEncoding(D_CHANNEL, 1.0, "sue")
    values = _values(D_CHANNEL, N_PER_VALUE)
    rng = seeded_rng(SEED + 4)
    bits = right.perturb(values, rng)
    # copy each row's false bits from one shared draw with probability 0.1: the marginal
    # rate of every bit is unchanged, the pairs are not
    shared = rng.random(values.size) < right.q
    tied = rng.random(values.size) < 0.1
    false_mask = np.ones_like(bits)
    false_mask[np.arange(values.size), values] = False
    bits = np.where(tied[:, None] & false_mask, shared[:, None], bits)
    pvalues = flip_pvalues(right, values, bits)
    assert not bonferroni_reject(pvalues, ALPHA)  # the flip rates cannot see it ...
    assert channel_pvalue(right, values, bits) < ALPHA  # ... the whole channel does
