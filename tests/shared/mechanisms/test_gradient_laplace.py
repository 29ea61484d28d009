"""Discrete Laplace on L1-clipped gradients: exact tests of the rounding's L1 bound (the
sensitivity), the report's ε (brute force over whole reports, from both sides), the
choice of L, the decoder, the segment and bad input."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from ldp_shared.errors import ConfigurationError, InvalidRecordError
from ldp_shared.kernel import channel_epsilon
from ldp_shared.mechanisms.base import EPSILON_SLACK
from ldp_shared.mechanisms.gradient_laplace import (
    L1Laplace,
    build_steps,
    step_ratio,
    systematic_round,
)
from ldp_shared.mechanisms.lattice import LatticeChannel, level_values
from ldp_shared.rand import seeded_rng

from ._channel import BELOW

EPSILONS = [0.1, 0.5, 1.0, 2.0, 4.0, 8.0]


def ball_points(d: int, steps: int) -> list[tuple[int, ...]]:
    """Every integer vector of ``d`` coordinates with ``‖z‖₁ <= steps``."""
    span = range(-steps, steps + 1)
    return [z for z in itertools.product(span, repeat=d) if sum(map(abs, z)) <= steps]


def report_channel(channel: LatticeChannel, points: list[tuple[int, ...]]) -> np.ndarray:
    """``P(cells | z)`` for every report of two coordinates (rows) and lattice vector z."""
    steps = channel.levels // 2
    m = channel.matrix
    return np.stack([np.outer(m[:, a + steps], m[:, b + steps]).ravel() for a, b in points], 1)


def test_systematic_rounding_keeps_every_row_in_the_lattice_ball() -> None:
    rng = seeded_rng(11)
    for steps in (1, 2, 5):
        u = rng.standard_normal((20_000, 12)) * rng.random((20_000, 1)) * 3
        u *= steps / np.maximum(np.abs(u).sum(axis=1, keepdims=True), steps)  # ‖u‖₁ <= L
        u[:500] *= steps / np.abs(u[:500]).sum(axis=1, keepdims=True)  # on the sphere
        z = systematic_round(u, steps, rng)
        assert (np.abs(z).sum(axis=1) <= steps).all()
        assert (np.abs(z - u) < 1).all() and (np.sign(z) * np.sign(u) >= 0).all()


def test_independent_rounding_would_exceed_the_ball() -> None:
    """Why the rounding is dependent: four coordinates of ¼ each round up together with
    probability 1/256 under independent rounding (‖z‖₁ = 4 > L = 1); never here."""
    u = np.full((4000, 4), 0.25)
    rng = seeded_rng(2)
    independent = (rng.random(u.shape) < u).sum(axis=1)
    assert independent.max() > 1
    z = systematic_round(u, 1, rng)
    assert np.abs(z).sum(axis=1).max() == 1  # exactly one: Σ frac = 1


class _ZeroUniforms:
    """A stand-in generator whose uniforms are all 0 (the worst case for the excess)."""

    def random(self, size: tuple[int, int]) -> np.ndarray:
        return np.zeros(size)


def test_a_floating_point_excess_is_taken_off_on_the_integers() -> None:
    u = np.array([[0.5 + 1e-13, 0.5], [0.5, 0.25]])  # the first row's sum exceeds 1 by 1e-13
    z = systematic_round(u, 1, _ZeroUniforms())  # type: ignore[arg-type]
    assert z.tolist() == [[1, 0], [1, 0]]


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_epsilon_is_2l_rho_and_whole_reports_attain_it(epsilon: float) -> None:
    """Reports on two coordinates (the others at 0 answer alike under both vectors)."""
    m = L1Laplace(dimension=12, epsilon=epsilon)
    assert m.steps == 1
    assert m.exact_epsilon == pytest.approx(2 * step_ratio(m.channel), rel=1e-15)
    assert m.exact_epsilon <= epsilon * (1 + EPSILON_SLACK)
    exact = channel_epsilon(report_channel(m.channel, ball_points(2, 1)))
    assert exact <= m.exact_epsilon * (1 + 1e-12)
    assert exact > m.exact_epsilon - BELOW
    assert exact > m.exact_epsilon * (1 - 1e-9)


@pytest.mark.parametrize("epsilon", [0.5, 4.0])
def test_two_steps_per_unit_compose_over_the_ball(epsilon: float) -> None:
    channel = build_steps(epsilon, 2)
    assert channel is not None and channel.levels == 4
    stated = channel.levels * step_ratio(channel)
    assert stated <= epsilon * (1 + EPSILON_SLACK)
    exact = channel_epsilon(report_channel(channel, ball_points(2, 2)))
    assert stated * (1 - 1e-9) < exact <= stated * (1 + 1e-12)


@pytest.mark.parametrize(
    ("epsilon", "variance"),
    [(0.1, 409.91), (1.0, 4.8772), (2.0, 1.3461), (4.0, 0.31888), (8.0, 0.037327)],
)
def test_one_step_is_chosen_from_d_12_and_its_variance_at_zero_is_as_documented(
    epsilon: float, variance: float
) -> None:
    for d in (12, 92):
        m = L1Laplace(dimension=d, epsilon=epsilon)
        assert m.steps == 1
        assert float(m.coordinate_variance(np.zeros((1, d)))[0, 0]) == pytest.approx(
            variance, rel=2e-4
        )
        assert variance < 8 / epsilon**2  # below the continuous Laplace mechanism's
    assert L1Laplace(dimension=2, epsilon=epsilon).steps == (
        1 if epsilon < 2 else 16 if epsilon == 2 else 32
    )


def test_the_decoder_is_unbiased_on_the_exact_answer_distribution() -> None:
    m = L1Laplace(dimension=3, epsilon=2.0, bound=4.0)
    levels = np.array([0, 1, 2])  # z = −1, 0, +1 (times bound/L), coordinate by coordinate
    t = level_values(m.channel.levels)[levels]
    n = 500
    counts = n * m.channel.matrix[:, levels].T
    mean, variance = m.estimate_mean({"counts": counts.ravel()}, n)
    np.testing.assert_allclose(mean, 4.0 * t, atol=1e-12)
    exact = 16.0 * m.channel.report_variance(t) / n
    np.testing.assert_allclose(variance, exact, rtol=1e-9)


def test_clip_scales_rows_into_the_l1_ball() -> None:
    m = L1Laplace(dimension=3, epsilon=1.0, bound=2.0)
    g = np.array([[1.0, -2.0, 1.0], [0.5, 0.5, -0.5], [0.0, 0.0, 0.0]])
    clipped = m.clip(g)
    np.testing.assert_allclose(clipped[0], [0.5, -1.0, 0.5])
    np.testing.assert_array_equal(clipped[1:], g[1:])
    with pytest.raises(InvalidRecordError, match=r"L1 norm of at most 2\.0"):
        m.perturb(g)


def test_pack_unpack_round_trip_one_and_two_byte_cells() -> None:
    rng = seeded_rng(5)
    for epsilon, width in [(4.0, 1), (0.1, 2)]:
        m = L1Laplace(dimension=6, epsilon=epsilon)
        assert m.segment.byte_length == 6 * width
        g = m.clip(rng.standard_normal((300, 6)))
        answers = m.perturb(g, rng)
        assert answers.shape == (300, 6) and answers.max() < m.channel.cells
        unpacked = m.unpack(m.pack(answers))
        assert not unpacked.bad.any()
        np.testing.assert_array_equal(unpacked.values, answers)
    bad = m.pack(answers[:2])
    bad[0, :2] = [0xFF, 0xFF]
    assert m.unpack(bad).bad.tolist() == [True, False]


def test_accumulate_and_bad_parameters() -> None:
    m = L1Laplace(dimension=2, epsilon=8.0)
    g = m.channel.cells
    counts = m.accumulate(np.array([[0, 1], [0, g - 1]]))["counts"].reshape(2, g)
    assert counts[0, 0] == 2 and counts[1, 1] == 1 and counts[1, g - 1] == 1
    assert counts.sum() == 4 and counts.dtype == np.int64
    for bad in [(0, 1.0), (2, -1.0), (2, math.inf), (2, 1000.0)]:
        with pytest.raises(ConfigurationError):
            L1Laplace(*bad)
    with pytest.raises(ConfigurationError, match="takes no δ"):
        L1Laplace.create(2, 1.0, delta=1e-6)
