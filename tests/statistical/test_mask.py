"""MASK bit flips against the stated keep probability, with power checks.

Cases: p = 0.9 (flips drawn by the byte sampler) and p = 0.99 (flip rate 0.01 < 1/32,
drawn by the gap sampler).

* Flip rates: the ones among the true 1-bits are Binomial(·, p), among the true 0-bits
  Binomial(·, 1-p) (two z-tests, Bonferroni).
* Whole basket channel (4 items): for each of the 16 true baskets, the 16 distorted
  baskets against ``Π_j p^[y_j = x_j] (1-p)^[y_j ≠ x_j]`` (per-row χ², small cells pooled).

Power: baskets distorted by MASK at per-item ε·1.3 and ε/1.3 (``p' = 1/(1 + e^{-ε'})``)
are rejected by the same tests against the RIGHT p.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from numpy.typing import NDArray

from ldp_shared.mechanisms import Mask
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

SEED = 3_141_593
D_FLIP = 50
N_FLIP = 20_000
D_CHANNEL = 4
N_PER_BASKET = 20_000
KEEP = [pytest.param(0.9, id="p0.9-bytes"), pytest.param(0.99, id="p0.99-gaps")]


def _keep_for_item_epsilon(item_epsilon: float) -> float:
    return 1.0 / (1.0 + math.exp(-item_epsilon))


def _wrong_masks(right: Mask) -> list[Mask]:
    return [
        Mask(right.d, _keep_for_item_epsilon(eps)) for eps in wrong_epsilons(right.item_epsilon)
    ]


def _random_baskets(n: int, d: int, rng: np.random.Generator) -> NDArray[np.bool_]:
    # items of unequal popularity, from 2% to 60%
    support = np.linspace(0.02, 0.6, d)
    return rng.random((n, d)) < support


def flip_pvalues(
    right: Mask, baskets: NDArray[np.bool_], reported: NDArray[np.bool_]
) -> list[float]:
    ones = int(baskets.sum())
    zeros = baskets.size - ones
    return [
        binomial_pvalue(int(reported[baskets].sum()), ones, right.p),
        binomial_pvalue(int(reported[~baskets].sum()), zeros, right.q),
    ]


def basket_channel(d: int, p: float) -> NDArray[np.float64]:
    """``M[y, x]`` over all ``2^d`` baskets, index ``Σ_j bit_j 2^j``."""
    patterns = np.array(list(itertools.product([0, 1], repeat=d)))[:, ::-1]  # bit j = column j
    same = patterns[:, None, :] == patterns[None, :, :]
    return np.prod(np.where(same, p, 1.0 - p), axis=2)


def channel_pvalue(right: Mask, baskets: NDArray[np.bool_], reported: NDArray[np.bool_]) -> float:
    weights = 1 << np.arange(right.d)
    x = baskets.astype(np.int64) @ weights
    y = reported.astype(np.int64) @ weights
    table = np.zeros((2**right.d, 2**right.d), dtype=np.int64)
    np.add.at(table, (x, y), 1)
    return chi2_gof_rows(table, basket_channel(right.d, right.p).T).pvalue


def _all_baskets(d: int, per_basket: int) -> NDArray[np.bool_]:
    index = np.tile(np.arange(2**d), per_basket)
    return ((index[:, None] >> np.arange(d)) & 1).astype(bool)


def test_basket_channel_helper_is_a_channel() -> None:
    m = basket_channel(3, 0.8)
    assert np.allclose(m.sum(axis=0), 1.0)
    assert m[0b101, 0b101] == pytest.approx(0.8**3)
    assert m[0b100, 0b101] == pytest.approx(0.8**2 * 0.2)  # item 0 flipped


@pytest.mark.parametrize("keep", KEEP)
def test_flip_rates(keep: float) -> None:
    mech = Mask(D_FLIP, keep)
    rng = seeded_rng(SEED)
    baskets = _random_baskets(N_FLIP, D_FLIP, rng)
    reported = mech.perturb(baskets, rng)
    assert reported.shape == baskets.shape and reported.dtype == np.bool_
    pvalues = flip_pvalues(mech, baskets, reported)
    assert not bonferroni_reject(pvalues, ALPHA), pvalues


@pytest.mark.parametrize("keep", KEEP)
def test_flip_rates_power(keep: float) -> None:
    right = Mask(D_FLIP, keep)
    rng = seeded_rng(SEED + 1)
    baskets = _random_baskets(N_FLIP, D_FLIP, rng)
    for wrong in _wrong_masks(right):
        assert_z_power(int((~baskets).sum()), right.q, wrong.q, ALPHA / 2)
        reported = wrong.perturb(baskets, rng)
        assert bonferroni_reject(flip_pvalues(right, baskets, reported), ALPHA), wrong.p


@pytest.mark.parametrize("keep", KEEP)
def test_whole_basket_channel(keep: float) -> None:
    mech = Mask(D_CHANNEL, keep)
    baskets = _all_baskets(D_CHANNEL, N_PER_BASKET)
    reported = mech.perturb(baskets, seeded_rng(SEED + 2))
    assert channel_pvalue(mech, baskets, reported) >= ALPHA


@pytest.mark.parametrize("keep", KEEP)
def test_whole_basket_channel_power(keep: float) -> None:
    right = Mask(D_CHANNEL, keep)
    baskets = _all_baskets(D_CHANNEL, N_PER_BASKET)
    for wrong in _wrong_masks(right):
        reported = wrong.perturb(baskets, seeded_rng(SEED + 3))
        assert channel_pvalue(right, baskets, reported) < ALPHA, wrong.p
