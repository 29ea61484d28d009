"""MASK: per-item and per-basket ε from the channel, the estimator, its own privacy measure."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from ldp_shared.errors import ConfigurationError, InvalidRecordError
from ldp_shared.kernel import bernoulli_matrix, channel_epsilon
from ldp_shared.mechanisms import Mask
from ldp_shared.rand import seeded_rng

from ._channel import assert_tight, max_log_ratio

KEEP = [0.51, 0.6, 0.8, 0.9, 0.95, 0.99]


def item_channel(m: Mask) -> np.ndarray:
    """``M[y, x]`` of one item bit, ``x, y ∈ {0, 1}``."""
    return np.array([[1.0 - m.q, 1.0 - m.p], [m.q, m.p]])


def basket_channel(m: Mask) -> np.ndarray:
    """``M[y, x]`` over all ``2^d`` baskets of a small catalogue."""
    baskets = list(itertools.product([0, 1], repeat=m.d))
    out = np.empty((len(baskets), len(baskets)))
    for iy, y in enumerate(baskets):
        for ix, x in enumerate(baskets):
            out[iy, ix] = math.prod(m.p if a == b else 1.0 - m.p for a, b in zip(x, y, strict=True))
    return out


@pytest.mark.parametrize("keep", KEEP)
def test_item_epsilon_from_the_bit_channel(keep: float) -> None:
    m = Mask(5, keep)
    assert (m.p, m.q) == (keep, 1.0 - keep)
    stated = math.log(keep / (1.0 - keep))
    assert m.item_epsilon == pytest.approx(stated, rel=1e-12)
    channel = item_channel(m)
    assert channel_epsilon(channel) == pytest.approx(stated, rel=1e-9)
    assert_tight(channel, m.item_epsilon)


@pytest.mark.parametrize("keep", KEEP)
@pytest.mark.parametrize("d", [2, 3, 4])
def test_basket_epsilon_from_the_basket_channel(keep: float, d: int) -> None:
    m = Mask(d, keep)
    stated = d * math.log(keep / (1.0 - keep))
    assert m.epsilon == pytest.approx(stated, rel=1e-12)
    assert m.exact_epsilon == m.epsilon
    channel = basket_channel(m)
    assert channel_epsilon(channel) == pytest.approx(stated, rel=1e-9)
    assert max_log_ratio(channel) == pytest.approx(stated, rel=1e-9)
    assert_tight(channel, m.epsilon)


def test_realistic_mask_is_about_220_per_basket() -> None:
    m = Mask(100, 0.9)
    assert m.epsilon == pytest.approx(100 * math.log(9.0), rel=1e-12)
    assert m.epsilon == pytest.approx(219.7, abs=0.05)


@pytest.mark.parametrize("keep", KEEP)
def test_estimator_inverts_the_expected_channel(keep: float) -> None:
    n, m = 1_000_000, Mask(6, keep)
    f = np.array([0.9, 0.5, 0.3, 0.1, 0.01, 0.0])
    np.testing.assert_allclose(
        m.estimate(n * (m.q + (m.p - m.q) * f), n).estimate, f, rtol=0.0, atol=1e-12
    )


def test_estimator_inverts_the_basket_channel_marginals() -> None:
    m, n = Mask(3, 0.8), 10_000
    baskets = np.array(list(itertools.product([0, 1], repeat=3)), dtype=float)
    weights = np.random.default_rng(3).dirichlet(np.ones(8))  # a distribution over baskets
    supports = baskets.T @ weights
    expected_sums = n * (baskets.T @ (basket_channel(m) @ weights))
    np.testing.assert_allclose(m.estimate(expected_sums, n).estimate, supports, atol=1e-12)


def test_perturb_flips_xor() -> None:
    m = Mask(4, 0.9)
    baskets = np.array([[1, 0, 0, 1], [0, 0, 0, 0]], dtype=bool)
    a = m.perturb(baskets, seeded_rng(7))
    rng = seeded_rng(7)
    flips = bernoulli_matrix(m.q, 2, 4, rng)
    np.testing.assert_array_equal(a, baskets ^ flips)
    assert a.dtype == np.bool_


@pytest.mark.parametrize("shape", [(3,), (2, 5), (2, 3), (1, 4, 1)])
def test_perturb_rejects_bad_shapes(shape: tuple[int, ...]) -> None:
    with pytest.raises(InvalidRecordError):
        Mask(4, 0.9).perturb(np.zeros(shape, dtype=bool), seeded_rng(0))


@pytest.mark.parametrize("keep", [0.5, 1.0, 0.3, 1.2, math.nan, -0.9])
def test_bad_keep_probability(keep: float) -> None:
    with pytest.raises(ConfigurationError):
        Mask(4, keep)


def test_bad_catalogue_size() -> None:
    with pytest.raises(ConfigurationError):
        Mask(1, 0.9)


def test_reconstruction_privacy_matches_bayes() -> None:
    """R1 is P(guess 1 | x = 1) when the guess is a draw from the posterior P(x | y)."""
    p, s0, a = 0.9, 0.1, 0.5
    m = Mask(10, p)
    out = m.reconstruction_privacy(s0, a)

    def reconstruct(prior_one: float) -> float:
        total = 0.0
        for y_one in (True, False):
            likelihood = p if y_one else 1.0 - p  # P(y | x=1)
            evidence = prior_one * likelihood + (1.0 - prior_one) * (1.0 - likelihood)
            total += likelihood * prior_one * likelihood / evidence
        return total

    assert out["R1"] == pytest.approx(reconstruct(s0), rel=1e-12)
    assert out["R0"] == pytest.approx(reconstruct(1.0 - s0), rel=1e-12)
    assert out["R"] == pytest.approx(a * out["R1"] + (1 - a) * out["R0"], rel=1e-12)
    assert out["privacy"] == pytest.approx((1.0 - out["R"]) * 100.0, rel=1e-12)


def test_reconstruction_privacy_is_total_at_half() -> None:
    """At p → 0.5 the report says nothing: reconstructing a 1 succeeds with the prior."""
    out = Mask(10, 0.5 + 1e-12).reconstruction_privacy(0.3, 1.0)
    assert out["R1"] == pytest.approx(0.3, rel=1e-9)


@pytest.mark.parametrize(("support", "weight"), [(0.0, 0.5), (1.0, 0.5), (0.5, -0.1), (0.5, 1.1)])
def test_reconstruction_privacy_bad_arguments(support: float, weight: float) -> None:
    with pytest.raises(ConfigurationError):
        Mask(10, 0.9).reconstruction_privacy(support, weight)
