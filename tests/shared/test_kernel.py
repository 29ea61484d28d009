"""The debiased-bit kernel: ε formulas, debiasing, variance, intervals, Bernoulli samplers.

Exact properties only; the rates and independence of the samplers are tested in
``tests/statistical/test_kernel.py``.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest

from ldp_shared import kernel
from ldp_shared.errors import ConfigurationError, InvalidQueryError
from ldp_shared.kernel import (
    GAP_SAMPLING_BELOW,
    bernoulli_flat_positions,
    bernoulli_matrix,
    bit_epsilon,
    channel_epsilon,
    debias,
    estimate_frequencies,
    frequency_variance,
    unary_epsilon,
    z_value,
)
from ldp_shared.rand import seeded_rng

# ---------------------------------------------------------------- ε of bits and channels


def _bit_channel(p: float, q: float) -> np.ndarray:
    return np.array([[1.0 - q, 1.0 - p], [q, p]])


@pytest.mark.parametrize(("p", "q"), [(0.8, 0.2), (0.5, 0.1), (0.9, 0.5), (0.75, 0.3)])
def test_bit_epsilon_is_the_bit_channel_epsilon(p: float, q: float) -> None:
    expected = max(math.log(p / q), math.log((1 - q) / (1 - p)))
    assert bit_epsilon(p, q) == pytest.approx(expected, rel=1e-14)
    assert channel_epsilon(_bit_channel(p, q)) == pytest.approx(expected, rel=1e-12)


def test_bit_epsilon_symmetric_case_is_mask() -> None:
    assert bit_epsilon(0.9, 0.1) == pytest.approx(math.log(9.0), rel=1e-14)


@pytest.mark.parametrize(("p", "q"), [(0.8, 0.2), (0.5, 0.1), (0.9, 0.5)])
def test_unary_epsilon_is_two_bit_flips(p: float, q: float) -> None:
    assert unary_epsilon(p, q) == pytest.approx(math.log(p * (1 - q) / ((1 - p) * q)), rel=1e-14)


def test_infinite_epsilons() -> None:
    assert bit_epsilon(1.0, 0.5) == math.inf  # output 0 impossible under x = 1
    assert bit_epsilon(0.5, 0.0) == math.inf
    assert unary_epsilon(0.5, 0.0) == math.inf
    assert unary_epsilon(1.0, 0.2) == math.inf
    assert channel_epsilon(np.array([[1.0, 0.0], [0.0, 1.0]])) == math.inf


def test_channel_epsilon_ignores_impossible_outputs() -> None:
    # output 2 never happens; the others have ratio 3
    m = np.array([[0.75, 0.25], [0.25, 0.75], [0.0, 0.0]])
    assert channel_epsilon(m) == pytest.approx(math.log(3.0), rel=1e-14)


def test_channel_epsilon_of_a_constant_channel_is_zero() -> None:
    assert channel_epsilon(np.full((4, 3), 0.25)) == 0.0


@pytest.mark.parametrize(("p", "q"), [(0.5, 0.5), (0.2, 0.8), (1.1, 0.2), (0.5, -0.1)])
def test_bad_pq(p: float, q: float) -> None:
    with pytest.raises(ConfigurationError):
        bit_epsilon(p, q)
    with pytest.raises(ConfigurationError):
        unary_epsilon(p, q)


# ---------------------------------------------------------------- debiasing and variance


def test_debias_inverts_expected_sums() -> None:
    p, q, n = 0.7, 0.25, 12_345
    f = np.array([0.0, 0.1, 0.5, 1.0])
    np.testing.assert_allclose(debias(n * (q + (p - q) * f), n, p, q), f, atol=1e-12)


def test_debias_accepts_integer_sums() -> None:
    out = debias(np.array([50, 25], dtype=np.int64), 100, 0.5, 0.25)
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, [1.0, 0.0])


@pytest.mark.parametrize("n", [0, -5])
def test_debias_needs_reports(n: int) -> None:
    with pytest.raises(InvalidQueryError):
        debias(np.array([1.0]), n, 0.7, 0.3)


def test_frequency_variance_formula_and_clipping() -> None:
    p, q, n = 0.5, 0.2, 1000
    f = np.array([-0.3, 0.0, 0.4, 1.0, 1.7])
    fc = np.clip(f, 0, 1)
    expected = (fc * p * (1 - p) + (1 - fc) * q * (1 - q)) / (n * (p - q) ** 2)
    np.testing.assert_allclose(frequency_variance(f, n, p, q), expected, rtol=1e-15)
    assert frequency_variance(f, n, p, q)[0] == frequency_variance(f, n, p, q)[1]


def test_z_value_just_below_one_is_finite() -> None:
    """0.5 + c/2 rounds to 1.0 for c = 1 - 2^-53: the quantile must still be finite
    (it once raised, which the API turned into a 500)."""
    c = 0.9999999999999999
    assert 0.5 + c / 2.0 == 1.0
    assert z_value(c) == pytest.approx(-NormalDist().inv_cdf((1.0 - c) / 2.0), rel=1e-12)
    assert 8.0 < z_value(c) < 8.6
    assert z_value(1.0 - 2**-40) < z_value(c)


def test_z_value() -> None:
    assert z_value(0.95) == pytest.approx(1.959963984540054, rel=1e-12)
    assert z_value(0.5) == pytest.approx(NormalDist().inv_cdf(0.75), rel=1e-12)


@pytest.mark.parametrize("confidence", [0.0, 1.0, -0.5, 1.5, math.nan, math.inf])
def test_z_value_rejects(confidence: float) -> None:
    with pytest.raises(InvalidQueryError):
        z_value(confidence)


def test_estimate_frequencies_intervals() -> None:
    p, q, n = 0.5, 0.2689414213699951, 5000
    sums = np.array([2000, 1400, 1300, 1345])
    est = estimate_frequencies(sums, n, p, q, confidence=0.9)
    f_hat = (sums / n - q) / (p - q)
    se = np.sqrt(frequency_variance(f_hat, n, p, q))
    z = NormalDist().inv_cdf(0.95)
    assert est.n == n and est.confidence == 0.9
    np.testing.assert_allclose(est.estimate, f_hat, rtol=1e-14)
    np.testing.assert_allclose(est.stderr, se, rtol=1e-14)
    np.testing.assert_allclose(est.counts, n * f_hat, rtol=1e-14)
    # score interval: its ends inside [0, 1] are where |f̂ − f| − h = z·√Var(f) (variance
    # at f, not at f̂; h = 1/(2n(p − q)) is half a report); f̂ < 0 is clipped at 0.
    assert est.interval == "score"
    h = 0.5 / (n * (p - q))
    inside = est.ci_low > 0.0
    assert inside.tolist() == [True, True, False, False]
    bound = est.ci_low[inside]
    np.testing.assert_allclose(
        f_hat[inside] - bound - h, z * np.sqrt(frequency_variance(bound, n, p, q)), rtol=1e-9
    )
    np.testing.assert_allclose(
        est.ci_high - f_hat - h,
        z * np.sqrt(frequency_variance(est.ci_high, n, p, q)),
        rtol=1e-9,
    )


# ---------------------------------------------------------------- Bernoulli samplers


def test_flat_positions_edge_cases() -> None:
    rng = seeded_rng(0)
    assert bernoulli_flat_positions(0.0, 100, rng).size == 0
    assert bernoulli_flat_positions(-1.0, 100, rng).size == 0
    assert bernoulli_flat_positions(0.3, 0, rng).size == 0
    np.testing.assert_array_equal(bernoulli_flat_positions(1.0, 5, rng), np.arange(5))
    assert bernoulli_flat_positions(0.3, 5, rng).dtype == np.int64


@pytest.mark.parametrize("rate", [1e-300, 1e-20, 1e-9, 0.001, 0.02, 0.3, 0.999])
@pytest.mark.parametrize("size", [1, 7, 1000, 250_000])
def test_flat_positions_are_sorted_unique_and_inside(rate: float, size: int) -> None:
    pos = bernoulli_flat_positions(rate, size, seeded_rng(11))
    assert pos.dtype == np.int64
    assert np.all(np.diff(pos) > 0)
    if pos.size:
        assert pos[0] >= 0 and pos[-1] < size


def test_flat_positions_tiny_rate_has_no_ones() -> None:
    """Regression: gaps beyond int64 used to be cast to INT64_MIN (negative positions)."""
    for seed in range(20):
        assert bernoulli_flat_positions(1e-20, 10_000, seeded_rng(seed)).size == 0


def test_flat_positions_continue_past_the_first_chunk() -> None:
    # a rate near one needs many chunks of draws: all of them must be stitched together
    pos = bernoulli_flat_positions(0.999, 100_000, seeded_rng(4))
    assert pos.size > 99_000 and pos[-1] >= 99_000


@pytest.mark.parametrize("rate", [0.0, 1.0])
@pytest.mark.parametrize("shape", [(3, 5), (0, 4), (4, 0)])
def test_bernoulli_matrix_degenerate_rates(rate: float, shape: tuple[int, int]) -> None:
    out = bernoulli_matrix(rate, *shape, seeded_rng(1))
    assert out.shape == shape and out.dtype == np.bool_
    assert np.all(out == bool(rate))


@pytest.mark.parametrize("rate", [0.001, 0.03, 0.5, 0.97, 0.999])
def test_bernoulli_matrix_shape_and_reproducibility(rate: float) -> None:
    a = bernoulli_matrix(rate, 30, 17, seeded_rng(2))
    b = bernoulli_matrix(rate, 30, 17, seeded_rng(2))
    assert a.shape == (30, 17) and a.dtype == np.bool_
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    ("rate", "path"),
    [
        (0.001, "ones"),
        (GAP_SAMPLING_BELOW * 0.999, "ones"),
        (GAP_SAMPLING_BELOW, "bytes"),
        (0.3775, "bytes"),
        (0.5, "bytes"),
        (1.0 - GAP_SAMPLING_BELOW, "bytes"),
        (1.0 - GAP_SAMPLING_BELOW * 0.999, "zeros"),
        (0.99, "zeros"),
    ],
)
def test_bernoulli_matrix_routing(rate: float, path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Which sampler serves which rate (the statistical tests cover each path)."""
    calls: list[tuple[str, float]] = []
    real_bytes = kernel._bernoulli_by_bytes
    real_gaps = kernel.bernoulli_flat_positions

    def spy_bytes(r: float, size: int, rng: np.random.Generator) -> np.ndarray:
        calls.append(("bytes", r))
        return real_bytes(r, size, rng)

    def spy_gaps(r: float, size: int, rng: np.random.Generator) -> np.ndarray:
        calls.append(("gaps", r))
        return real_gaps(r, size, rng)

    monkeypatch.setattr(kernel, "_bernoulli_by_bytes", spy_bytes)
    monkeypatch.setattr(kernel, "bernoulli_flat_positions", spy_gaps)
    bernoulli_matrix(rate, 10, 10, seeded_rng(0))
    if path == "bytes":
        assert calls == [("bytes", rate)]
    elif path == "ones":
        assert calls == [("gaps", rate)]
    else:
        assert calls == [("gaps", pytest.approx(1.0 - rate, rel=1e-12))]


class _ScriptedRng:
    """Stands in for a Generator: scripted uniforms for the ties."""

    def __init__(self, uniforms: list[float]) -> None:
        self.uniforms = uniforms

    def random(self, size: int) -> np.ndarray:
        assert size == len(self.uniforms)
        return np.array(self.uniforms)


@pytest.mark.parametrize("rate", [0.3775406687981454, 0.5, 0.1, GAP_SAMPLING_BELOW, 0.8])
def test_byte_sampler_is_exact(rate: float) -> None:
    """``P(1) = t/256 + f/256`` with ``256·rate = t + f``: no rounding of the rate.

    Fed each byte value once (as the random bytes), exactly ``t`` bytes are below the
    threshold and one byte ties; the tie gives 1 iff its uniform is below the fraction ``f``.
    """
    t = math.floor(rate * 256)
    f = rate * 256 - t
    every_byte = np.arange(256, dtype=np.uint8)
    below = kernel.bernoulli_from_bytes(rate, every_byte, _ScriptedRng([np.nextafter(f, 0.0)]))  # type: ignore[arg-type]
    at = kernel.bernoulli_from_bytes(rate, every_byte, _ScriptedRng([f]))  # type: ignore[arg-type]
    assert below[:t].all() and not below[t + 1 :].any()
    assert at[:t].all() and not at[t + 1 :].any()
    assert below[t] == (f > 0.0)
    assert not at[t]
