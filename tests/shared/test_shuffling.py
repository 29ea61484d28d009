"""The shuffle-amplification accountant: published vectors, an exact reference, monotonicity."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import pytest

from ldp_shared.errors import ConfigurationError
from ldp_shared.shuffling import (
    central_epsilon,
    closed_form_applies,
    closed_form_epsilon,
    numerical_epsilon,
)


def test_apple_reference_vector() -> None:
    """apple/ml-shuffling-amplification README: n = 10⁵, ε₀ = 4, δ = 10⁻⁶."""
    g = central_epsilon(4.0, 10**5, 1e-6)
    assert g.epsilon_closed_form == pytest.approx(0.5378040242374512, rel=1e-9)
    # their numerical lower and upper bounds bracket the true ε; ours is an upper bound
    assert 0.1675 <= g.epsilon_numerical <= 0.1728
    assert g.epsilon == g.epsilon_numerical


def test_issue_vector_million_reports() -> None:
    """ε₀ = 4, n = 10⁶, δ = 10⁻⁶: about 0.20 by the closed form, lower numerically."""
    g = central_epsilon(4.0, 10**6, 1e-6)
    assert g.epsilon_closed_form == pytest.approx(0.2016, abs=5e-4)
    assert g.epsilon_numerical < g.epsilon_closed_form


def _exact_delta(epsilon0: float, n: int, epsilon: float) -> float:
    """δ(ε) of the clone pair by full enumeration in exact binomials (small n only)."""
    q = math.exp(-epsilon0)
    p = math.exp(epsilon0) / (math.exp(epsilon0) + 1.0)
    total = 0.0
    for c in range(n):
        weight = math.comb(n - 1, c) * q**c * (1.0 - q) ** (n - 1 - c)
        m = c + 1
        inner = 0.0
        for a in range(m + 1):
            b = float(Fraction(math.comb(m, a), 2**m))
            pa = 2.0 * b * (p * a + (1.0 - p) * (m - a)) / m
            qa = 2.0 * b * ((1.0 - p) * a + p * (m - a)) / m
            inner += max(0.0, pa - math.exp(epsilon) * qa)
        total += weight * inner
    return total


@pytest.mark.parametrize(("epsilon0", "n", "delta"), [(1.0, 300, 1e-3), (2.0, 400, 1e-2)])
def test_numerical_matches_exact_enumeration(epsilon0: float, n: int, delta: float) -> None:
    eps = numerical_epsilon(epsilon0, n, delta)
    assert eps < epsilon0
    # a valid bound: the exact δ at our ε is within the target …
    assert _exact_delta(epsilon0, n, eps) <= delta
    # … and a tight one: 2% below it, the exact δ exceeds the target
    assert _exact_delta(epsilon0, n, eps * 0.98) > delta


def test_numerical_never_above_closed_form() -> None:
    for epsilon0 in (0.5, 1.0, 2.0, 4.0):
        for n in (10**4, 10**5):
            g = central_epsilon(epsilon0, n, 1e-6)
            assert g.epsilon_numerical <= g.epsilon_closed_form <= epsilon0


def test_monotone_in_n_epsilon0_and_delta() -> None:
    by_n = [central_epsilon(2.0, n, 1e-6) for n in (10**3, 10**4, 10**5)]
    for weaker, stronger in itertools.pairwise(by_n):
        assert stronger.epsilon_numerical < weaker.epsilon_numerical
        assert stronger.epsilon_closed_form <= weaker.epsilon_closed_form
    by_eps0 = [central_epsilon(e, 10**4, 1e-6) for e in (0.5, 1.0, 2.0, 3.0)]
    for low, high in itertools.pairwise(by_eps0):
        assert low.epsilon_numerical < high.epsilon_numerical
        assert low.epsilon_closed_form < high.epsilon_closed_form
    by_delta = [central_epsilon(2.0, 10**4, d) for d in (1e-8, 1e-6, 1e-4)]
    for strict, loose in itertools.pairwise(by_delta):
        assert loose.epsilon_numerical < strict.epsilon_numerical
        assert loose.epsilon_closed_form < strict.epsilon_closed_form


def test_condition_boundary_falls_back_to_local_epsilon() -> None:
    n, delta = 10**4, 1e-6
    limit = math.log(n / (16.0 * math.log(4.0 / delta)))
    assert closed_form_applies(limit - 1e-9, n, delta)
    assert not closed_form_applies(limit + 1e-9, n, delta)
    assert closed_form_epsilon(limit - 1e-9, n, delta) < limit
    assert closed_form_epsilon(limit + 1e-9, n, delta) == limit + 1e-9
    # too few reports for the theorem at all: central is the local ε, never more
    g = central_epsilon(3.0, 50, 1e-6)
    assert g.epsilon_closed_form == 3.0
    assert g.epsilon <= 3.0
    assert central_epsilon(3.0, 1, 1e-6).epsilon == 3.0


@pytest.mark.parametrize(
    ("epsilon0", "n", "delta"),
    [
        (0.0, 100, 1e-6),
        (-1.0, 100, 1e-6),
        (math.inf, 100, 1e-6),
        (1.0, 0, 1e-6),
        (1.0, 100, 0.0),
        (1.0, 100, 1.0),
    ],
)
def test_bad_parameters_raise_configuration_error(epsilon0: float, n: int, delta: float) -> None:
    with pytest.raises(ConfigurationError):
        central_epsilon(epsilon0, n, delta)
