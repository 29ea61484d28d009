"""The estimator (ldp_shared.analyses.itemsets.estimator, Rizvi and Haritsa, VLDB 2002).

It is unbiased and its variance formula exact: both checked by enumerating every
distortion of a tiny data set (no sampling). Statistical properties (coverage, ρ against
its prediction) are in ``tests/statistical/test_itemsets.py``.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ldp_shared.analyses.itemsets import (
    BitChannel,
    PackedBits,
    estimate_itemsets,
    mine_frequent_itemsets,
)
from ldp_shared.errors import InvalidQueryError
from ldp_shared.kernel import frequency_variance

from ._baskets import EXACT, distort, quest


def _all_distortions(x: np.ndarray, p: float, q: float):
    """Every distorted version of the n × k true matrix with its probability."""
    n, k = x.shape
    for bits in itertools.product([0, 1], repeat=n * k):
        y = np.array(bits, dtype=bool).reshape(n, k)
        probability = np.where(x, np.where(y, p, 1 - p), np.where(y, q, 1 - q)).prod()
        yield y, float(probability)


@pytest.mark.parametrize(("p", "q"), [(0.8, 0.2), (0.7, 0.1)])
def test_estimator_is_unbiased_and_its_variance_exact(p: float, q: float) -> None:
    # three baskets over three items: enumerate all 2^9 distortions
    x = np.array([[1, 1, 0], [1, 1, 1], [0, 1, 1]], dtype=bool)
    channel = BitChannel(p, q)
    targets = [(0,), (1,), (0, 1), (1, 2), (0, 1, 2)]
    true_support = np.array([x[:, list(t)].all(axis=1).mean() for t in targets])
    mean = np.zeros(len(targets))
    second = np.zeros(len(targets))
    for y, probability in _all_distortions(x, p, q):
        got = estimate_itemsets(PackedBits.from_bool(y), 3, channel, targets)
        mean += probability * got.support
        second += probability * got.support**2
    np.testing.assert_allclose(mean, true_support, rtol=0, atol=1e-12)
    variance = second - mean**2
    # the standard error formula evaluated at the true supports
    exact = estimate_itemsets(PackedBits.from_bool(x), 3, EXACT, targets)
    np.testing.assert_allclose(exact.support, true_support, atol=0)
    e0, d = channel.e0, channel.e1 - channel.e0
    predicted = []
    for t in targets:
        k = len(t)
        total = -x[:, list(t)].all(axis=1).mean()
        for size in range(k + 1):
            for u in itertools.combinations(t, size):
                s_u = x[:, list(u)].all(axis=1).mean() if u else 1.0
                total += e0 ** (k - size) * d**size * s_u
        predicted.append(total / 3)
    np.testing.assert_allclose(variance, predicted, rtol=1e-10)


def test_singleton_standard_error_is_the_kernel_variance() -> None:
    packed = quest()
    distorted = distort(packed, 0.85, 1)
    found = mine_frequent_itemsets(PackedBits(distorted), 40, BitChannel.mask(0.85), 0.05)
    level = found.levels[0]
    expected = np.sqrt(frequency_variance(level.support, found.n, 0.85, 0.15))
    np.testing.assert_allclose(level.stderr, expected, rtol=1e-12)


def test_estimate_itemsets_agrees_with_mining() -> None:
    packed = quest()
    distorted = distort(packed, 0.9, 5)
    channel = BitChannel.mask(0.9)
    found = mine_frequent_itemsets(PackedBits(distorted), 40, channel, 0.05)
    rows = [items for items, _, _ in found.records()]
    got = estimate_itemsets(PackedBits(distorted), 40, channel, rows)
    mined = np.array([s for _, s, _ in found.records()])
    errors = np.array([e for _, _, e in found.records()])
    np.testing.assert_allclose(got.support, mined, rtol=1e-12)
    np.testing.assert_allclose(got.stderr, errors, rtol=1e-12)
    with pytest.raises(InvalidQueryError):
        estimate_itemsets(PackedBits(distorted), 40, channel, [(3, 40)])
    with pytest.raises(InvalidQueryError):
        estimate_itemsets(PackedBits(distorted), 40, channel, [()])
