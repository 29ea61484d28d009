"""SUE and OUE: parameters, exact ε from the full channel, the estimator, edge cases."""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pytest

from ldp_shared.errors import ConfigurationError, InvalidRecordError
from ldp_shared.kernel import channel_epsilon
from ldp_shared.mechanisms import OptimizedUnaryEncoding, SymmetricUnaryEncoding, UnaryEncoding
from ldp_shared.rand import seeded_rng

from ._channel import assert_tight, max_log_ratio

EPSILONS = [0.1, 0.5, 1.0, math.log(16.0), 4.0, 8.0]
VARIANTS = ["sue", "oue"]


def _channel_by_hand(d: int, p: float, q: float) -> np.ndarray:
    """``M[y, x]`` over the ``2^d`` outputs, output index ``Σ_j y_j 2^j``."""
    m = np.empty((2**d, d))
    for index, bits in enumerate(itertools.product([0, 1], repeat=d)):
        y = bits[::-1]  # bit j of the index is y_j
        for x in range(d):
            prob = 1.0
            for j in range(d):
                one = p if j == x else q
                prob *= one if y[j] else 1.0 - one
            m[index, x] = prob
    return m


def test_sue_parameters_follow_the_design() -> None:
    for eps in EPSILONS:
        m = SymmetricUnaryEncoding(5, eps)
        half = math.exp(eps / 2.0)
        assert m.p == pytest.approx(half / (half + 1.0), rel=1e-14)
        assert m.q == pytest.approx(1.0 / (half + 1.0), rel=1e-14)
        assert m.p + m.q == pytest.approx(1.0, rel=1e-15)


def test_oue_parameters_follow_the_design() -> None:
    for eps in EPSILONS:
        m = OptimizedUnaryEncoding(5, eps)
        assert m.p == 0.5
        assert m.q == pytest.approx(1.0 / (math.exp(eps) + 1.0), rel=1e-14)


def test_notebook_p08_is_sue_at_ln16() -> None:
    m = SymmetricUnaryEncoding(4, math.log(16.0))
    assert m.p == pytest.approx(0.8, rel=1e-14) and m.q == pytest.approx(0.2, rel=1e-13)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("d", [2, 3, 5])
def test_exact_epsilon_from_the_channel(variant: str, epsilon: float, d: int) -> None:
    m = UnaryEncoding(d, epsilon, variant)  # type: ignore[arg-type]
    channel = m.channel_matrix()
    np.testing.assert_allclose(channel, _channel_by_hand(d, m.p, m.q), rtol=1e-13, atol=0.0)
    assert channel_epsilon(channel) == pytest.approx(epsilon, rel=1e-9)
    assert max_log_ratio(channel) == pytest.approx(epsilon, rel=1e-9)
    assert m.exact_epsilon == pytest.approx(epsilon, rel=1e-9)
    assert_tight(channel, epsilon)


def test_channel_is_only_built_for_small_domains() -> None:
    assert OptimizedUnaryEncoding(12, 1.0).channel_matrix().shape == (4096, 12)
    with pytest.raises(ValueError):
        OptimizedUnaryEncoding(13, 1.0).channel_matrix()


def test_sue_at_infinite_epsilon_is_the_identity() -> None:
    m = SymmetricUnaryEncoding(7, math.inf)
    assert (m.p, m.q) == (1.0, 0.0)
    values = np.arange(7).repeat(50)
    bits = m.perturb(values, seeded_rng(1))
    np.testing.assert_array_equal(bits, np.eye(7, dtype=bool)[values])
    assert channel_epsilon(m.channel_matrix()) == math.inf


def test_oue_at_infinite_epsilon_reports_no_false_ones() -> None:
    m = OptimizedUnaryEncoding(7, math.inf)
    assert (m.p, m.q) == (0.5, 0.0)
    values = np.arange(7).repeat(50)
    bits = m.perturb(values, seeded_rng(2))
    assert not bits[~np.eye(7, dtype=bool)[values]].any()


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("epsilon", EPSILONS)
def test_estimator_inverts_the_expected_channel(variant: str, epsilon: float) -> None:
    d, n = 6, 1_000_000
    m = UnaryEncoding(d, epsilon, variant)  # type: ignore[arg-type]
    f = np.array([0.5, 0.2, 0.15, 0.1, 0.05, 0.0])
    sums = n * (m.q + (m.p - m.q) * f)
    np.testing.assert_allclose(m.estimate(sums, n).estimate, f, rtol=0.0, atol=1e-12)


@pytest.mark.parametrize("variant", VARIANTS)
def test_expected_bit_sums_from_the_channel_are_inverted(variant: str) -> None:
    """The estimator inverts the marginals of the full channel, not only the formula."""
    d, n = 4, 10_000
    m = UnaryEncoding(d, 1.3, variant)  # type: ignore[arg-type]
    f = np.array([0.55, 0.25, 0.2, 0.0])
    outputs = ((np.arange(2**d)[:, None] >> np.arange(d)) & 1).astype(float)
    bit_marginals = outputs.T @ (m.channel_matrix() @ f)  # P(y_j = 1)
    np.testing.assert_allclose(m.estimate(n * bit_marginals, n).estimate, f, atol=1e-12)


@pytest.mark.parametrize("variant", VARIANTS)
def test_variance_formula(variant: str) -> None:
    m = UnaryEncoding(5, 1.0, variant)  # type: ignore[arg-type]
    f = np.array([0.0, 0.25, 1.0])
    expected = (f * m.p * (1 - m.p) + (1 - f) * m.q * (1 - m.q)) / (100 * (m.p - m.q) ** 2)
    np.testing.assert_allclose(m.variance(f, 100), expected, rtol=1e-14)


def test_oue_variance_at_zero_is_wang_et_al_var_star() -> None:
    for eps in EPSILONS:
        m = OptimizedUnaryEncoding(10, eps)
        var_star = 4.0 * math.exp(eps) / (math.exp(eps) - 1.0) ** 2
        assert m.variance(np.array([0.0]), 1)[0] == pytest.approx(var_star, rel=1e-12)


def test_perturb_shape_and_type() -> None:
    m = OptimizedUnaryEncoding(11, 1.0)
    bits = m.perturb([0, 3, 10], seeded_rng(3))
    assert bits.shape == (3, 11) and bits.dtype == np.bool_
    assert m.perturb(np.array([], dtype=np.int64), seeded_rng(3)).shape == (0, 11)


def test_perturb_is_reproducible_with_a_seed() -> None:
    m = SymmetricUnaryEncoding(9, 2.0)
    values = np.arange(9).repeat(10)
    a = m.perturb(values, seeded_rng(42))
    b = m.perturb(values, seeded_rng(42))
    np.testing.assert_array_equal(a, b)


def test_perturb_uses_secure_randomness_by_default() -> None:
    m = SymmetricUnaryEncoding(64, 0.5)
    values = np.zeros(64, dtype=np.int64)
    assert not np.array_equal(m.perturb(values), m.perturb(values))


@pytest.mark.parametrize(
    "values",
    [[0, 5], [-1], [[0, 1]], [0.0, 1.0], ["a"]],
    ids=["too-large", "negative", "2d", "floats", "strings"],
)
def test_perturb_rejects_bad_values(values: object) -> None:
    with pytest.raises(InvalidRecordError):
        OptimizedUnaryEncoding(5, 1.0).perturb(values, seeded_rng(0))  # type: ignore[arg-type]


@pytest.mark.parametrize("epsilon", [0.0, -1.0, math.nan, -math.inf])
def test_bad_epsilon(epsilon: float) -> None:
    with pytest.raises(ConfigurationError):
        OptimizedUnaryEncoding(4, epsilon)


@pytest.mark.parametrize("d", [1, 0, -3, 2.5])
def test_bad_domain(d: float) -> None:
    with pytest.raises(ConfigurationError):
        SymmetricUnaryEncoding(d, 1.0)  # type: ignore[arg-type]


def test_unknown_variant_is_refused() -> None:
    with pytest.raises(ConfigurationError):
        UnaryEncoding(4, 1.0, "rappor")  # type: ignore[arg-type]


def test_large_epsilon_oue_still_perturbs() -> None:
    """q below 1e-19: the sparse sampler's gaps exceed int64 and must not overflow."""
    m = OptimizedUnaryEncoding(8, 50.0)
    assert 0.0 < m.q < 1e-21
    values = np.arange(8).repeat(500)
    bits = m.perturb(values, seeded_rng(5))
    assert not bits[~np.eye(8, dtype=bool)[values]].any()
    assert 0 < bits.sum() < values.size


@pytest.mark.parametrize("variant", VARIANTS)
def test_huge_epsilon_does_not_overflow(variant: str) -> None:
    """A finite ε beyond exp()'s range used to raise OverflowError instead of q → 0;
    above ln(largest double) the one rule on ε refuses it (``_checks.check_epsilon``)."""
    m = UnaryEncoding(3, 709.0, variant)  # type: ignore[arg-type]
    assert 0.0 <= m.q < 1e-150
    assert m.p == (0.5 if variant == "oue" else 1.0 - m.q)
    for epsilon in (800.0, 1500.0, 1e6):
        with pytest.raises(ConfigurationError, match=re.escape(f"ε = {epsilon:g} is too large")):
            UnaryEncoding(3, epsilon, variant)  # type: ignore[arg-type]
