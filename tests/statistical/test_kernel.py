"""``bernoulli_matrix``: the rate and the independence of its bits, on every sampling path.

Rates below 1/32 draw the positions of the ones (geometric gaps), rates above 31/32 the
positions of the zeros, the rest one random byte per bit with an exact tie-break.
Each case runs one family of four tests (Bonferroni at ``ALPHA``):

* the overall rate (binomial z-test);
* adjacent pairs in the flat order (lag 1) and vertically (lag ``cols``, the next row):
  the 2×2 table of pair values against ``[(1-r)², r(1-r); r(1-r), r²]`` (χ², 3 df);
* homogeneity along the flat vector: the ones in 100 equal blocks against ``r`` per
  block (χ², 100 df), which catches a sampler that loses ones at chunk boundaries or
  near the end.

Power: the same family rejects bits drawn at the wrong rate (×1.3 and ÷1.3 on the
minority side), bits where 5% copy their left neighbour (same rate, correlated), and
bits whose last block was dropped.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from numpy.typing import NDArray

from ldp_shared.kernel import GAP_SAMPLING_BELOW, bernoulli_matrix
from ldp_shared.rand import seeded_rng

from ._stats import (
    ALPHA,
    assert_z_power,
    binomial_pvalue,
    bonferroni_reject,
    chi2_gof,
    chi2_sf,
)

pytestmark = pytest.mark.statistical

SEED = 20260601
COLS = 997  # not a multiple of 8 or of a chunk size
BLOCKS = 100
MIN_PAIR_COUNT = 50.0  # expected count of the rarest pair cell

RATES = [0.002, 0.01, GAP_SAMPLING_BELOW, 0.1, 0.3775, 0.5, 0.9, 0.99]


def _rows_for(rate: float) -> int:
    minority = min(rate, 1.0 - rate)
    bits = max(1_000_000, math.ceil(MIN_PAIR_COUNT / minority**2))
    return math.ceil(bits / COLS)


def _wrong_rates(rate: float) -> list[float]:
    if rate <= 0.5:
        return [rate * 1.3, rate / 1.3]
    return [1.0 - (1.0 - rate) * 1.3, 1.0 - (1.0 - rate) / 1.3]


def _pair_pvalue(first: NDArray[np.bool_], second: NDArray[np.bool_], rate: float) -> float:
    cells = first.astype(np.int64) * 2 + second.astype(np.int64)
    observed = np.bincount(cells, minlength=4)
    r = rate
    probabilities = [(1 - r) ** 2, (1 - r) * r, r * (1 - r), r * r]
    return chi2_gof(observed, probabilities, pool=False).pvalue


def bernoulli_family_pvalues(bits: NDArray[np.bool_], rate: float) -> list[float]:
    """The four p-values of the family described in the module docstring."""
    flat = bits.ravel()
    size = flat.size
    rate_p = binomial_pvalue(int(flat.sum()), size, rate)
    lag1_p = _pair_pvalue(flat[:-1], flat[1:], rate)
    lag_row_p = _pair_pvalue(bits[:-1, :].ravel(), bits[1:, :].ravel(), rate)
    edges = np.linspace(0, size, BLOCKS + 1).astype(np.int64)
    ones = np.add.reduceat(flat.astype(np.int64), edges[:-1])
    lengths = np.diff(edges)
    # per block a binomial count; the blocks are independent: a χ² with BLOCKS df
    expected = lengths * rate
    variances = lengths * rate * (1.0 - rate)
    assert expected.min() >= 5.0
    block_stat = float(np.sum((ones - expected) ** 2 / variances))
    block_p = chi2_sf(block_stat, BLOCKS)
    return [rate_p, lag1_p, lag_row_p, block_p]


@pytest.mark.parametrize("rate", RATES)
def test_bernoulli_matrix_rate_and_independence(rate: float) -> None:
    rows = _rows_for(rate)
    bits = bernoulli_matrix(rate, rows, COLS, seeded_rng(SEED))
    assert bits.shape == (rows, COLS) and bits.dtype == np.bool_
    pvalues = bernoulli_family_pvalues(bits, rate)
    assert not bonferroni_reject(pvalues, ALPHA), pvalues


@pytest.mark.parametrize("rate", RATES)
def test_power_wrong_rate(rate: float) -> None:
    rows = _rows_for(rate)
    for wrong in _wrong_rates(rate):
        assert_z_power(rows * COLS, rate, wrong, ALPHA / 4)
        bits = bernoulli_matrix(wrong, rows, COLS, seeded_rng(SEED + 1))
        assert bonferroni_reject(bernoulli_family_pvalues(bits, rate), ALPHA), wrong


@pytest.mark.parametrize("rate", RATES)
def test_power_correlated_neighbours(rate: float) -> None:
    rows = _rows_for(rate)
    rng = seeded_rng(SEED + 2)
    flat = bernoulli_matrix(rate, rows, COLS, rng).ravel()
    copy = rng.random(flat.size) < 0.05
    copy[0] = False
    sticky = np.where(copy, np.roll(flat, 1), flat)  # same marginal rate, correlated pairs
    assert bonferroni_reject(bernoulli_family_pvalues(sticky.reshape(rows, COLS), rate), ALPHA)


@pytest.mark.parametrize("rate", RATES)
def test_power_lost_tail(rate: float) -> None:
    rows = _rows_for(rate)
    flat = bernoulli_matrix(rate, rows, COLS, seeded_rng(SEED + 3)).ravel()
    truncated = flat.copy()
    truncated[-(flat.size // BLOCKS) :] = rate > 0.5  # the last block lost its minority bits
    assert bonferroni_reject(bernoulli_family_pvalues(truncated.reshape(rows, COLS), rate), ALPHA)
