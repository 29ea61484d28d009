"""The discrete Gaussian mechanism: exact tests of its calibrations, the exact δ of the
channel it samples (at the boundary from both sides), its output lattice, its published
fields and its refusals."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from ldp_shared.codec import Privatizer, decode_reports
from ldp_shared.collection import build_config, verify_config
from ldp_shared.errors import ConfigurationError, InvalidRecordError
from ldp_shared.mechanisms import GaussianRandomizer
from ldp_shared.mechanisms.gaussian import (
    STEP,
    analytic_gaussian_delta,
    analytic_gaussian_sigma,
    classical_gaussian_sigma,
    gaussian_channel,
    hockey_stick_delta,
    ideal_channel,
)
from ldp_shared.mechanisms.integer_channel import TOTAL, integer_channel
from ldp_shared.mechanisms.laplace import worst_variance
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import CollectionSpec

EPSILONS = [0.5, 1.0, 2.0, 4.0, 8.0]
DELTAS = [1e-5, 1e-6]


def make(epsilon: float, delta: float = 1e-5, **kwargs: Any) -> GaussianRandomizer:
    return GaussianRandomizer(epsilon=epsilon, lo=17.0, hi=90.0, target_delta=delta, **kwargs)


def spec(epsilon: float = 2.0, **attribute: Any) -> CollectionSpec:
    numeric = {"name": "age", "mechanism": "gaussian", "lo": 17, "hi": 90, "delta": 1e-5}
    return CollectionSpec.model_validate(
        {"name": "g", "epsilon": epsilon, "attributes": [{**numeric, **attribute}]}
    )


def brute_delta(matrix: np.ndarray, epsilon: float) -> float:
    """The hockey-stick δ by an explicit loop over ordered pairs of columns."""
    ratio = math.exp(epsilon)
    return max(
        math.fsum(max(0.0, a - ratio * b) for a, b in zip(matrix[:, i], matrix[:, j], strict=True))
        for i, j in itertools.permutations(range(matrix.shape[1]), 2)
    )


def integrated_delta(epsilon: float, sigma: float, sensitivity: float) -> float:
    """``∫ max(0, φ_σ(x) − e^ε φ_σ(x − Δ)) dx`` by the midpoint rule (no Φ involved)."""
    edges = np.linspace(-40 * sigma, 40 * sigma + sensitivity, 4_000_001)
    x = (edges[:-1] + edges[1:]) / 2
    p = np.exp(-(x**2) / (2 * sigma**2))
    q = np.exp(-((x - sensitivity) ** 2) / (2 * sigma**2))
    gap = np.maximum(p - math.exp(epsilon) * q, 0.0)
    return float(gap.sum() * (edges[1] - edges[0]) / (sigma * math.sqrt(2 * math.pi)))


# -- calibrations ----------------------------------------------------------------------


@pytest.mark.parametrize("delta", DELTAS)
def test_the_classical_sigma_is_dwork_and_roth_s_and_only_below_epsilon_one(delta: float) -> None:
    assert classical_gaussian_sigma(0.5, delta, 3.0) == pytest.approx(
        3.0 * math.sqrt(2 * math.log(1.25 / delta)) / 0.5, rel=1e-15
    )
    below = math.nextafter(1.0, 0.0)
    assert classical_gaussian_sigma(below, delta, 1.0) > 0
    with pytest.raises(ConfigurationError, match=r"only for ε < 1.*analytic") as error:
        classical_gaussian_sigma(1.0, delta, 1.0)
    assert "\n" not in str(error.value)
    # the theorem holds where it is stated: the classical σ meets δ (loosely) below ε = 1
    assert analytic_gaussian_delta(below, classical_gaussian_sigma(below, delta, 1.0), 1.0) < delta
    # and fails where it is not: at ε = 10 its σ is below the exact one
    classical_at_10 = math.sqrt(2 * math.log(1.25 / delta)) / 10
    assert analytic_gaussian_delta(10.0, classical_at_10, 1.0) > delta


@pytest.mark.parametrize(("epsilon", "delta"), list(itertools.product([0.1, *EPSILONS], DELTAS)))
def test_the_analytic_sigma_is_the_least_meeting_delta(epsilon: float, delta: float) -> None:
    sigma = analytic_gaussian_sigma(epsilon, delta, 1.0)
    # at the boundary from both sides
    assert analytic_gaussian_delta(epsilon, sigma, 1.0) <= delta
    assert analytic_gaussian_delta(epsilon, sigma * (1 - 1e-9), 1.0) > delta
    # σ scales with the sensitivity
    assert analytic_gaussian_sigma(epsilon, delta, 7.0) == pytest.approx(7 * sigma, rel=1e-12)
    if epsilon < 1:
        assert sigma < classical_gaussian_sigma(epsilon, delta, 1.0)


@pytest.mark.parametrize(("epsilon", "sigma"), [(0.5, 7.0), (1.0, 3.73), (4.0, 1.08), (8.0, 0.6)])
def test_the_analytic_delta_against_integrating_the_densities(epsilon: float, sigma: float) -> None:
    assert analytic_gaussian_delta(epsilon, sigma, 1.0) == pytest.approx(
        integrated_delta(epsilon, sigma, 1.0), rel=1e-6
    )


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((0.0, 1e-5, 1.0), "ε > 0"),
        ((math.inf, 1e-5, 1.0), "ε > 0"),
        ((1.0, 0.0, 1.0), r"\(0, 1\)"),
        ((1.0, 1.0, 1.0), r"\(0, 1\)"),
        ((1.0, math.nan, 1.0), r"\(0, 1\)"),
        ((1.0, 1e-5, 0.0), "sensitivity"),
        ((1.0, 1e-5, math.inf), "sensitivity"),
    ],
)
def test_bad_calibration_arguments(args: tuple[float, float, float], match: str) -> None:
    for calibrate in (analytic_gaussian_sigma, classical_gaussian_sigma):
        with pytest.raises(ConfigurationError, match=match):
            calibrate(*args)


# -- the channel and its exact δ --------------------------------------------------------


def test_hockey_stick_delta_of_randomized_response_and_of_a_channel() -> None:
    p = 0.8
    rr = np.array([[p, 1 - p], [1 - p, p]])
    for eps in (0.5, 1.0, math.log(4.0) - 1e-9, 2.0):
        expected = max(0.0, p - math.exp(eps) * (1 - p))
        assert hockey_stick_delta(rr, eps) == pytest.approx(expected, abs=1e-15)
    m = integer_channel(ideal_channel(1.3, 4), math.inf).matrix
    assert hockey_stick_delta(m, 1.0) == pytest.approx(brute_delta(m, 1.0), rel=1e-12)


def test_the_discrete_gaussian_channel_is_the_clamped_distribution() -> None:
    s, k, margin = 2.5, 4, 3
    ch = gaussian_channel(s, k, margin)
    z = np.arange(-200, 201)
    mass = np.exp(-(z**2) / (2 * s * s))
    mass /= mass.sum()
    assert np.allclose(ch.sum(axis=0), 1.0, atol=1e-15)
    assert ch[5, 2] == pytest.approx(mass[200 + (5 - margin - 2)], rel=1e-13)
    assert ch[0, 1] == pytest.approx(mass[z <= -margin - 1].sum(), rel=1e-13)
    assert ch[-1, 1] == pytest.approx(mass[z >= k + margin - 1].sum(), rel=1e-13)


@pytest.mark.parametrize(("epsilon", "delta"), list(itertools.product(EPSILONS, DELTAS)))
def test_the_stated_epsilon_and_delta_are_exact_for_the_sampled_channel(
    epsilon: float, delta: float
) -> None:
    m = make(epsilon, delta)
    ch = m.channel
    weights = ch.integer.weights
    assert weights.min() >= 1 and np.all(weights.sum(axis=0) == TOTAL)
    matrix = weights / float(TOTAL)
    assert m.exact_epsilon == epsilon
    assert m.delta == pytest.approx(brute_delta(matrix, epsilon), rel=1e-12, abs=1e-300)
    # (ε, δ) at the boundary from both sides: within the request, and exactly the
    # channel's (a smaller ε, or a smaller δ, does not hold)
    assert 0 < m.delta <= delta
    assert hockey_stick_delta(matrix, epsilon * (1 - 1e-6)) > m.delta
    assert hockey_stick_delta(matrix, epsilon * (1 + 1e-6)) < m.delta
    # σ: the analytic one for Δ = K, raised only as far as the exact δ required
    start = analytic_gaussian_sigma(epsilon, delta, float(ch.levels))
    s = m.lattice.sigma_levels
    steps = round(math.log(s / start) / math.log1p(STEP))
    assert s == start * (1.0 + STEP) ** steps
    if steps > 0:  # one step less spends more than δ
        smaller = integer_channel(ideal_channel(s / (1.0 + STEP), ch.levels), math.inf).matrix
        assert hockey_stick_delta(smaller, epsilon) > delta


def test_the_classical_calibration_states_its_smaller_delta() -> None:
    analytic, classical = make(0.5), make(0.5, calibration="classical")
    assert classical.lattice.sigma_levels == pytest.approx(
        classical_gaussian_sigma(0.5, 1e-5, float(classical.channel.levels)), rel=1e-15
    )
    assert classical.delta < 1e-7 < analytic.delta <= 1e-5
    with pytest.raises(ConfigurationError, match="analytic"):
        make(1.0, calibration="classical")


def test_the_grid_per_epsilon_and_its_worst_case_variance() -> None:
    grids = {eps: (make(eps).channel.levels, make(eps).channel.cells) for eps in EPSILONS}
    assert grids == {0.5: (1, 130), 1.0: (2, 139), 2.0: (4, 149), 4.0: (8, 165), 8.0: (16, 191)}
    for eps in EPSILONS:
        m = make(eps)
        sigma_t = 2 * m.lattice.sigma_levels / m.channel.levels
        worst = worst_variance(m.channel)
        # the Gaussian noise plus at most the rounding's 1/K², to the decoder's 1%
        assert 0.99 * sigma_t**2 <= worst <= 1.01 * (sigma_t**2 + 1 / m.channel.levels**2)


# -- the device -------------------------------------------------------------------------


def test_the_output_lattice_does_not_depend_on_the_input() -> None:
    config = build_config(spec())
    cells = config.attributes[0].model_dump()["cells"]
    x = 53.123456789
    inputs = [17.0, 17.000000000000004, x, np.nextafter(x, 100.0), 90.0, -1e9, 1e9]
    for value in inputs:
        packed = Privatizer(config).privatize_columns(
            {"age": np.full(20_000, value)}, seeded_rng(3)
        )
        assert decode_reports(config, packed).valid.all()
        assert int(packed[:, 0].max()) < cells  # one byte: G <= 256
    randomizer = config.randomizers[0]
    assert isinstance(randomizer, GaussianRandomizer)
    assert randomizer.channel.integer.weights.min() >= 1  # every cell under every value
    # values differing in their last bit give the very same answers from the same stream
    a = Privatizer(config).privatize_columns({"age": np.full(5000, x)}, seeded_rng(9))
    b = Privatizer(config).privatize_columns(
        {"age": np.full(5000, np.nextafter(x, 100.0))}, seeded_rng(9)
    )
    assert np.array_equal(a, b)
    # out of bounds is clipped on the device: 1e9 answers as 90 does
    top = Privatizer(config).privatize_columns({"age": np.full(5000, 90.0)}, seeded_rng(9))
    far = Privatizer(config).privatize_columns({"age": np.full(5000, 1e9)}, seeded_rng(9))
    assert np.array_equal(top, far)


def test_published_fields_and_the_accountant() -> None:
    config = verify_config(build_config(spec()))
    fields = config.attributes[0].model_dump()
    m = config.randomizers[0]
    assert isinstance(m, GaussianRandomizer)
    assert fields["calibration"] == "analytic" and fields["levels"] == 4
    assert fields["sigma_levels"] == m.lattice.sigma_levels
    assert fields["sigma"] == pytest.approx(fields["sigma_levels"] * 73.0 / 4, rel=1e-15)
    assert fields["margin"] == math.ceil(9 * fields["sigma_levels"])
    assert fields["delta"] == m.delta == config.delta and fields["epsilon"] == 2.0
    two = CollectionSpec.model_validate(
        {
            "name": "g2",
            "epsilon": 2.0,
            "attributes": [
                {"name": "a", "mechanism": "gaussian", "lo": 0, "hi": 1, "delta": 1e-5},
                {"name": "b", "mechanism": "gaussian", "lo": 0, "hi": 1, "delta": 1e-6},
                {"name": "c", "domain": ["x", "y"], "mechanism": "grr"},
            ],
        }
    )
    split = build_config(two)
    deltas = [a.delta for a in split.attributes]
    assert split.delta == pytest.approx(deltas[0] + deltas[1]) and deltas[2] == 0
    sample = build_config(two.model_copy(update={"budget": "sample"}))
    assert sample.delta == max(a.delta for a in sample.attributes)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"delta": 0.0}, r"delta must be in the open interval \(0, 1\)"),
        ({"delta": 1.0}, r"delta must be in the open interval \(0, 1\)"),
        ({"delta": -1e-5}, r"delta must be in the open interval \(0, 1\)"),
        ({"delta": 2.0}, r"delta must be in the open interval \(0, 1\)"),
        ({"delta": math.nan}, r"delta must be in the open interval \(0, 1\)"),
        ({"delta": math.inf}, r"delta must be in the open interval \(0, 1\)"),
        ({"delta": "small"}, "valid number"),
        ({"delta": None}, "valid number"),
        ({"calibration": "exact"}, "'analytic' or 'classical'"),
        ({"lo": 5, "hi": 5}, "lo must be below hi"),
        ({"lo": 9, "hi": 5}, "lo must be below hi"),
        ({"hi": math.inf}, "finite"),
    ],
)
def test_bad_specs_are_refused_in_one_line(change: dict[str, Any], match: str) -> None:
    with pytest.raises(ValidationError, match=match) as error:
        spec(**change)
    assert len(error.value.errors()) == 1
    assert "\n" not in error.value.errors()[0]["msg"]


def test_a_missing_delta_and_configurations_that_cannot_be_built() -> None:
    with pytest.raises(ValidationError, match="delta") as error:
        CollectionSpec.model_validate(
            {
                "name": "g",
                "epsilon": 1,
                "attributes": [{"name": "a", "mechanism": "gaussian", "lo": 0, "hi": 1}],
            }
        )
    assert len(error.value.errors()) == 1
    with pytest.raises(ConfigurationError, match=r"attribute 'age'.*ε < 1.*analytic"):
        build_config(spec(epsilon=1.0, calibration="classical"))
    with pytest.raises(ConfigurationError, match="more than 2048 cells") as too_wide:
        build_config(spec(epsilon=0.02))
    assert "\n" not in str(too_wide.value)
    with pytest.raises(ConfigurationError, match="finite"):
        make(math.inf)
    with pytest.raises(ConfigurationError, match="'analytic' or 'classical'"):
        make(1.0, calibration="exact")
    with pytest.raises(ConfigurationError, match=r"\(0, 1\)"):
        make(1.0, delta=0.0)


def test_bad_values_on_the_device() -> None:
    config = build_config(spec())
    for bad in (math.nan, math.inf, -math.inf, "53", None):
        with pytest.raises(InvalidRecordError) as error:
            Privatizer(config).privatize_columns({"age": [40.0, bad]}, seeded_rng(1))
        assert "\n" not in str(error.value)
    with pytest.raises(InvalidRecordError, match=r"t in \[-1, 1\]"):
        make(1.0).perturb(np.array([1.5]), seeded_rng(1))
