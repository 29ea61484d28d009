"""Discrete Gaussian on L2-clipped gradients: exact tests of the rounding's L2 bound (the
sensitivity the δ assumes), the Rényi bound and the conversion behind δ, the exact δ of
the sampled noise against the stated one, the calibration at its boundary, the decoder,
the segment and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldp_shared.errors import ConfigurationError, InvalidRecordError
from ldp_shared.mechanisms.gaussian import analytic_gaussian_delta
from ldp_shared.mechanisms.gradient_gaussian import (
    L2Gaussian,
    noise_margin,
    round_in_ball,
    vector_delta,
    zcdp_delta,
)
from ldp_shared.mechanisms.gradient_mechanisms import gradient_mechanism_names, gradient_randomizer
from ldp_shared.rand import seeded_rng

EPSILONS = [0.1, 0.5, 1.0, 2.0, 4.0, 8.0]


class _AllUp:
    """A stand-in generator whose uniforms are all 0: every fractional part rounds up."""

    def random(self, size: tuple[int, int]) -> np.ndarray:
        return np.zeros(size)


def test_rounding_is_within_one_step_and_keeps_the_stated_l2_bound() -> None:
    rng = seeded_rng(21)
    d, steps = 10, 8
    squared = math.floor((steps + math.sqrt(d)) ** 2)
    u = rng.standard_normal((20_000, d))
    u *= steps / np.maximum(np.sqrt(np.square(u).sum(axis=1, keepdims=True)), steps)
    u[:500] *= steps / np.sqrt(np.square(u[:500]).sum(axis=1, keepdims=True))  # on the sphere
    z = round_in_ball(u, squared, rng)
    assert (np.square(z).sum(axis=1) <= squared).all()
    assert (np.abs(z - u) < 1).all() and (np.sign(z) * np.sign(u) >= 0).all()
    np.testing.assert_allclose(z.mean(axis=0), u.mean(axis=0), atol=0.02)  # unbiased


def test_the_worst_case_of_rounding_is_why_the_bound_is_l_plus_root_d() -> None:
    """Every |u_j| just above L/√d, all rounded up: ‖z‖₂ = √d·⌈L/√d⌉, far above L, and
    within Q = ⌊(L + √d)²⌋, which the mechanism's sensitivity uses."""
    d, steps = 16, 10
    u = np.full((1, d), steps / math.sqrt(d) * (1 - 1e-12))  # 2.5 each, on the sphere
    u[0, 0] = math.sqrt(steps**2 - (d - 1) * u[0, 1] ** 2)
    z = round_in_ball(u, math.floor((steps + math.sqrt(d)) ** 2), _AllUp())  # type: ignore[arg-type]
    assert int(np.square(z).sum()) == 16 * 9 > steps**2
    assert int(np.square(z).sum()) <= (steps + math.sqrt(d)) ** 2


def test_a_floating_point_excess_is_taken_off_on_the_integers() -> None:
    u = np.array([[0.5, 0.5, 0.5, 0.5 + 1e-12]])  # ‖u‖₂ = 1 (+ rounding error)
    z = round_in_ball(u, 3, _AllUp())  # type: ignore[arg-type]
    assert z.tolist() == [[1, 1, 1, 0]]


@pytest.mark.parametrize("sigma", [0.6, 1.3, 3.0])
@pytest.mark.parametrize("shift", [1, 2, 5])
def test_the_discrete_gaussian_renyi_divergence_is_at_most_the_continuous_one(
    sigma: float, shift: int
) -> None:
    y = np.arange(-400, 401, dtype=np.float64)
    log_p = -np.square(y) / (2 * sigma**2)
    log_p -= np.logaddexp.reduce(log_p)
    log_q = -np.square(y - shift) / (2 * sigma**2)
    log_q -= np.logaddexp.reduce(log_q)
    for alpha in (1.5, 2.0, 5.0, 20.0):
        renyi = float(np.logaddexp.reduce(alpha * log_q + (1 - alpha) * log_p)) / (alpha - 1)
        assert renyi <= alpha * shift**2 / (2 * sigma**2) * (1 + 1e-9)
        if sigma >= 1.3:  # θ(αa)/θ(0) is within 1e-10 of 1 from s ≈ 1.3: nearly equal
            assert renyi == pytest.approx(alpha * shift**2 / (2 * sigma**2), rel=1e-6)


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_the_zcdp_conversion_is_above_the_continuous_gaussians_exact_delta(
    epsilon: float,
) -> None:
    """The continuous Gaussian is ρ-zCDP with ρ = Δ²/(2σ²) and its δ(ε) is exact (Balle and
    Wang), so a valid conversion can never claim less; it is also not far above it."""
    for sigma_over_delta in (0.5, 1.0, 2.0, 5.0, 20.0):
        rho = 1 / (2 * sigma_over_delta**2)
        exact = analytic_gaussian_delta(epsilon, sigma_over_delta, 1.0)
        bound = zcdp_delta(epsilon, rho)
        assert bound >= exact
        if 1e-12 < exact < 0.1:
            assert bound < 12 * exact


def test_the_exact_delta_of_what_is_sampled_is_within_the_stated_delta() -> None:
    """d = 1: the largest shift is 2⌊√Q⌋ steps; the quantised, truncated table's exact
    hockey-stick δ at that shift (the worst) is below the stated bound, and the bound is
    not vacuous."""
    for epsilon in (0.5, 1.0, 4.0):
        m = L2Gaussian(dimension=1, epsilon=epsilon, target_delta=1e-6)
        noise = m.noise
        assert noise.steps == 64 and noise.squared_bound == 65**2
        w = m.noise.table.matrix[:, 0]
        shift = 2 * 65
        p = np.concatenate([w, np.zeros(shift)])
        q = np.concatenate([np.zeros(shift), w])
        exact = float(np.maximum(p - math.exp(epsilon) * q, 0.0).sum())
        assert exact <= m.delta <= 1e-6
        assert exact > m.delta / 10


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_delta_is_at_most_the_requested_one_and_the_calibration_is_tight(epsilon: float) -> None:
    for d, delta in [(92, 1e-6), (31, 1e-6), (3, 1e-5)]:
        m = L2Gaussian(dimension=d, epsilon=epsilon, target_delta=delta)
        noise = m.noise
        assert m.exact_epsilon == epsilon
        assert m.delta == vector_delta(epsilon, d, noise.squared_bound, noise.sigma)
        assert m.delta <= delta
        smaller = noise.sigma * (1 - 1e-9)
        assert vector_delta(epsilon, d, noise.squared_bound, smaller) > delta
        assert vector_delta(epsilon * (1 - 1e-6), d, noise.squared_bound, noise.sigma) > delta
        assert m.continuous_delta < m.delta  # the continuous reference is below the bound
        assert noise.squared_bound == math.floor((noise.steps + math.sqrt(d)) ** 2)
        assert noise.margin == noise_margin(noise.sigma)


def test_steps_are_the_power_of_two_from_64_root_d() -> None:
    assert L2Gaussian(dimension=92, epsilon=1.0, target_delta=1e-6).noise.steps == 1024
    assert L2Gaussian(dimension=31, epsilon=1.0, target_delta=1e-6).noise.steps == 512
    # at ε = 8 the table's sampling slack (1 + e⁸)·d·G/2⁵³ leaves no room at 1024: halved
    assert L2Gaussian(dimension=92, epsilon=8.0, target_delta=1e-6).noise.steps == 512


def test_the_decoder_is_unbiased_and_its_variance_is_the_sample_variance() -> None:
    m = L2Gaussian(dimension=2, epsilon=2.0, target_delta=1e-6, bound=3.0)
    noise = m.noise
    y = np.array([[5, -7], [1, 3], [-2, 10], [4, 0]])
    stats = m.accumulate(y + noise.offset)
    assert stats["sums"].tolist() == [8, 6] and stats["squares"].tolist() == [46, 158]
    mean, variance = m.estimate_mean(stats, 4)
    scale = 3.0 / noise.steps
    np.testing.assert_allclose(mean, (y.mean(axis=0) - noise.mean) * scale, rtol=1e-12)
    np.testing.assert_allclose(variance, y.var(axis=0, ddof=1) / 4 * scale**2, rtol=1e-12)
    assert abs(noise.mean) < 1e-9 and noise.variance == pytest.approx(noise.sigma**2, rel=1e-9)
    g = np.array([[0.0, 0.0], [3.0 * 0.6, -3.0 * 0.8]])
    v = m.coordinate_variance(g)
    np.testing.assert_allclose(v[0], noise.variance * scale**2, rtol=1e-12)
    f = np.abs(g[1] / 3.0 * noise.steps) % 1.0
    np.testing.assert_allclose(v[1], (f * (1 - f) + noise.variance) * scale**2, rtol=1e-9)


def test_clip_scales_rows_into_the_l2_ball_and_the_report_refuses_others() -> None:
    m = L2Gaussian(dimension=3, epsilon=1.0, target_delta=1e-6, bound=2.0)
    g = np.array([[3.0, 0.0, 4.0], [0.5, 0.5, -0.5], [0.0, 0.0, 0.0]])
    clipped = m.clip(g)
    np.testing.assert_allclose(clipped[0], [1.2, 0.0, 1.6])
    np.testing.assert_array_equal(clipped[1:], g[1:])
    with pytest.raises(InvalidRecordError, match=r"L2 norm of at most 2\.0"):
        m.perturb(g)
    with pytest.raises(InvalidRecordError, match="finite"):
        m.perturb(np.array([[math.nan, 0.0, 0.0]]))


def test_pack_unpack_round_trip_and_widths() -> None:
    rng = seeded_rng(5)
    for epsilon, width in [(4.0, 2), (0.1, 3)]:
        m = L2Gaussian(dimension=6, epsilon=epsilon, target_delta=1e-6)
        assert m.segment.byte_length == 6 * width
        answers = m.perturb(m.clip(rng.standard_normal((300, 6))), rng)
        assert answers.min() >= 0 and answers.max() < m.cells
        unpacked = m.unpack(m.pack(answers))
        assert not unpacked.bad.any()
        np.testing.assert_array_equal(unpacked.values, answers)
    bad = m.pack(answers[:2])
    bad[0, :3] = [0xFF, 0xFF, 0xFF]
    assert m.unpack(bad).bad.tolist() == [True, False]


def test_registry_and_bad_parameters() -> None:
    assert "l2-gaussian" in gradient_mechanism_names()
    m = gradient_randomizer("l2-gaussian", 4, 1.0, 0.5, 1e-6)
    assert isinstance(m, L2Gaussian) and m.bound == 0.5 and m.norm == "l2"
    with pytest.raises(ConfigurationError, match="needs a δ"):
        gradient_randomizer("l2-gaussian", 4, 1.0)
    for delta in (0.0, 1.0, -1e-6, math.nan):
        with pytest.raises(ConfigurationError, match="open interval"):
            L2Gaussian(dimension=4, epsilon=1.0, target_delta=delta)
    for dimension, epsilon in [(0, 1.0), (4, -1.0), (4, math.inf)]:
        with pytest.raises(ConfigurationError):
            L2Gaussian(dimension=dimension, epsilon=epsilon, target_delta=1e-6)
    with pytest.raises(ConfigurationError, match="noise table"):
        L2Gaussian(dimension=92, epsilon=1e-5, target_delta=1e-6)
