"""``bernoulli_rows``: packed Bernoulli bits at the exact rate, independent, padding zero.

The same family of four tests as ``bernoulli_matrix`` (``test_kernel.py``: the rate,
lag-1 and next-row pairs, homogeneity over 100 blocks) on the unpacked rows, for the
bit-sliced dense path and the gap-sampled sparse one, with a row length that is not a
multiple of 8 (so the padding bits and the words that straddle rows are exercised).
Power: bits drawn at a wrong rate are rejected.
"""

from __future__ import annotations

import numpy as np
import pytest

from ldp_shared.kernel import GAP_SAMPLING_BELOW
from ldp_shared.mechanisms.packed_bits import bernoulli_rows, rate_bits
from ldp_shared.rand import seeded_rng

from ._stats import ALPHA, bonferroni_reject
from .test_kernel import COLS, SEED, _rows_for, _wrong_rates, bernoulli_family_pvalues

pytestmark = pytest.mark.statistical

RATES = [0.01, GAP_SAMPLING_BELOW, 0.1, 0.1192029220221176, 0.3775406687981454, 0.5, 0.9]


def _unpacked(rate: float, rows: int, seed: int) -> np.ndarray:
    packed = bernoulli_rows(rate, rows, COLS, seeded_rng(seed))
    assert packed.shape == (rows, (COLS + 7) // 8) and packed.dtype == np.uint8
    bits = np.unpackbits(packed, axis=1)
    assert not bits[:, COLS:].any(), "padding bits must be zero"
    return bits[:, :COLS].astype(bool)


@pytest.mark.parametrize("rate", RATES)
def test_bernoulli_rows_rate_and_independence(rate: float) -> None:
    rows = _rows_for(rate)
    pvalues = bernoulli_family_pvalues(_unpacked(rate, rows, SEED), rate)
    assert not bonferroni_reject(pvalues, ALPHA), pvalues


@pytest.mark.parametrize("rate", [0.1, 0.3775406687981454])
def test_bernoulli_rows_power_wrong_rate(rate: float) -> None:
    rows = _rows_for(rate)
    for wrong in _wrong_rates(rate):
        bits = _unpacked(wrong, rows, SEED + 1)
        assert bonferroni_reject(bernoulli_family_pvalues(bits, rate), ALPHA), wrong


def test_rate_bits_is_the_exact_expansion() -> None:
    for rate in RATES:
        bits = rate_bits(rate)
        assert sum(b * 2.0 ** -(i + 1) for i, b in enumerate(bits)) == rate
        assert bits[-1] == 1
