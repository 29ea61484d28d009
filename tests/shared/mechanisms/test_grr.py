"""GRR: parameters, exact ε from its channel, the estimator, edge cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldp_shared.errors import ConfigurationError, InvalidRecordError
from ldp_shared.kernel import channel_epsilon
from ldp_shared.mechanisms import GeneralizedRandomizedResponse
from ldp_shared.rand import seeded_rng

from ._channel import assert_tight, max_log_ratio

EPSILONS = [0.1, 0.5, 1.0, 2.0, 4.0, 8.0, 30.0]
DOMAINS = [2, 3, 7, 40]


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("d", DOMAINS)
def test_parameters_follow_the_design(epsilon: float, d: int) -> None:
    m = GeneralizedRandomizedResponse(d, epsilon)
    e = math.exp(epsilon)
    assert m.p == pytest.approx(e / (e + d - 1), rel=1e-14)
    assert m.q == pytest.approx(1.0 / (e + d - 1), rel=1e-14)
    assert m.p + (d - 1) * m.q == pytest.approx(1.0, rel=1e-14)


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("d", DOMAINS)
def test_exact_epsilon_from_the_channel(epsilon: float, d: int) -> None:
    m = GeneralizedRandomizedResponse(d, epsilon)
    channel = m.channel_matrix()
    expected = np.full((d, d), m.q)
    np.fill_diagonal(expected, m.p)
    np.testing.assert_array_equal(channel, expected)
    assert channel_epsilon(channel) == pytest.approx(epsilon, rel=1e-9)
    assert m.channel_epsilon() == pytest.approx(epsilon, rel=1e-9)
    assert max_log_ratio(channel) == pytest.approx(epsilon, rel=1e-9)
    assert m.exact_epsilon == pytest.approx(epsilon, rel=1e-9)
    assert_tight(channel, epsilon)


def test_infinite_epsilon_is_the_identity() -> None:
    m = GeneralizedRandomizedResponse(9, math.inf)
    assert (m.p, m.q) == (1.0, 0.0)
    assert m.exact_epsilon == math.inf and m.channel_epsilon() == math.inf
    values = np.arange(9).repeat(40)
    np.testing.assert_array_equal(m.perturb(values, seeded_rng(1)), values)


def test_large_finite_epsilon_stays_finite() -> None:
    m = GeneralizedRandomizedResponse(300, 700.0)
    assert m.q > 0.0 and m.exact_epsilon == pytest.approx(700.0, rel=1e-12)


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("d", DOMAINS)
def test_estimator_inverts_the_expected_channel(epsilon: float, d: int) -> None:
    n = 1_000_000
    m = GeneralizedRandomizedResponse(d, epsilon)
    f = np.random.default_rng(d).dirichlet(np.ones(d))
    np.testing.assert_allclose(
        m.estimate(n * (m.q + (m.p - m.q) * f), n).estimate, f, rtol=0.0, atol=1e-12
    )
    # the same through the channel matrix: expected counts n·M f
    np.testing.assert_allclose(
        m.estimate(n * (m.channel_matrix() @ f), n).estimate, f, rtol=0.0, atol=1e-12
    )


def test_variance_at_zero_is_wang_et_al_var_star() -> None:
    for eps in EPSILONS[:-1]:
        for d in DOMAINS:
            m = GeneralizedRandomizedResponse(d, eps)
            var_star = (math.exp(eps) + d - 2) / (math.exp(eps) - 1) ** 2
            assert m.variance(np.array([0.0]), 1)[0] == pytest.approx(var_star, rel=1e-12)


def test_counts() -> None:
    m = GeneralizedRandomizedResponse(4, 1.0)
    np.testing.assert_array_equal(m.counts([0, 3, 3, 1, 3]), [1, 1, 0, 3])
    assert m.counts(np.array([], dtype=np.int64)).tolist() == [0, 0, 0, 0]
    with pytest.raises(InvalidRecordError):
        m.counts([4])


def test_perturb_range_shape_and_never_a_wrong_type() -> None:
    m = GeneralizedRandomizedResponse(3, 0.1)
    values = np.arange(3).repeat(1000)
    reported = m.perturb(values, seeded_rng(2))
    assert reported.shape == values.shape and reported.dtype == np.int64
    assert set(np.unique(reported).tolist()) == {0, 1, 2}


def test_perturb_is_reproducible_with_a_seed() -> None:
    m = GeneralizedRandomizedResponse(10, 1.0)
    values = np.arange(10).repeat(10)
    np.testing.assert_array_equal(
        m.perturb(values, seeded_rng(9)), m.perturb(values, seeded_rng(9))
    )


@pytest.mark.parametrize("values", [[0, 5], [-1], [[0]], [1.0]])
def test_perturb_rejects_bad_values(values: object) -> None:
    with pytest.raises(InvalidRecordError):
        GeneralizedRandomizedResponse(5, 1.0).perturb(values, seeded_rng(0))  # type: ignore[arg-type]


@pytest.mark.parametrize(("d", "epsilon"), [(1, 1.0), (5, 0.0), (5, -2.0), (5, math.nan)])
def test_bad_parameters(d: int, epsilon: float) -> None:
    with pytest.raises(ConfigurationError):
        GeneralizedRandomizedResponse(d, epsilon)
