"""Score intervals (ldp_shared.intervals): the quadratic's roots, the curves, clipping."""

from __future__ import annotations

import numpy as np

from ldp_shared.intervals import VarianceCurve, score_bounds
from ldp_shared.kernel import frequency_variance


def test_bit_sum_curve_is_the_kernel_variance() -> None:
    f = np.array([-0.2, 0.0, 0.3, 1.0, 1.4])
    curve = VarianceCurve.bit_sum(700, 0.6, 0.1)
    np.testing.assert_allclose(curve(f), frequency_variance(f, 700, 0.6, 0.1), rtol=1e-14)


def test_curves_add_and_scale() -> None:
    f = np.array([0.0, 0.25, 1.0])
    marginal = VarianceCurve.bit_sum(100, 0.5, 0.2, cells=3)
    sampling = VarianceCurve.bernoulli(0.01)
    both = (marginal + sampling).scaled(4.0)
    expected = 4.0 * ((f * 0.25 + (3 - f) * 0.16) / (100 * 0.09) + 0.01 * f * (1 - f))
    np.testing.assert_allclose(both(f), expected, rtol=1e-14)


def test_score_bounds_solve_the_test_with_a_sampling_term() -> None:
    curve = VarianceCurve.bit_sum(400, 0.7, 0.2) + VarianceCurve.bernoulli(0.002)
    f_hat = np.array([0.3, 0.6])
    z = 1.96
    low, high = score_bounds(f_hat, curve, z)
    np.testing.assert_allclose(f_hat - low, z * np.sqrt(curve(low)), rtol=1e-12)
    np.testing.assert_allclose(high - f_hat, z * np.sqrt(curve(high)), rtol=1e-12)
    # just outside each end the test rejects, just inside it accepts
    for end, step in ((low, -1e-6), (high, 1e-6)):
        assert np.all(np.abs(f_hat - (end + step)) > z * np.sqrt(curve(end + step)))
        assert np.all(np.abs(f_hat - (end - step)) < z * np.sqrt(curve(end - step)))


def test_score_bounds_clip_to_the_feasible_frequencies() -> None:
    curve = VarianceCurve.bit_sum(100, 0.5, 0.25)
    low, high = score_bounds(np.array([-0.05, 1.02, 0.5]), curve, 1.96)
    assert low[0] == 0.0 and 0.0 < high[0] < 1.0
    assert high[1] == 1.0 and 0.0 < low[1] < 1.0
    assert 0.0 < low[2] < 0.5 < high[2] < 1.0


def test_score_bounds_outside_the_simplex_stay_outside() -> None:
    # f̂ far below 0: every f in [0, 1] is rejected, so the interval must not invent 0
    curve = VarianceCurve.bit_sum(10_000, 0.5, 0.25)
    low, high = score_bounds(np.array([-0.5]), curve, 1.96)
    assert high[0] < 0.0 and low[0] < high[0]
    # no real f accepted at all (the extrapolated variance is negative at f̂): the point f̂
    steep = VarianceCurve.of(0.0001, 0.01)
    low, high = score_bounds(np.array([-0.5]), steep, 1.96)
    assert low[0] == high[0] == -0.5


def test_continuity_correction_widens_by_half_a_step_each_side() -> None:
    curve = VarianceCurve.bit_sum(200, 0.6, 0.2)
    f_hat, z, h = np.array([0.4]), 1.96, 0.5 / (200 * 0.4)
    low, high = score_bounds(f_hat, curve, z, h)
    np.testing.assert_allclose(f_hat - low - h, z * np.sqrt(curve(low)), rtol=1e-12)
    np.testing.assert_allclose(high - f_hat - h, z * np.sqrt(curve(high)), rtol=1e-12)
    plain_low, plain_high = score_bounds(f_hat, curve, z)
    assert low[0] < plain_low[0] and high[0] > plain_high[0]
