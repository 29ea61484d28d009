"""The exponential mechanism: exact ε of the integer channel, calibration, exact sampling,
the spec's errors, the estimator, and the central mechanism's table."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from pydantic import ValidationError

from ldp_shared.collection import build_config
from ldp_shared.errors import ConfigurationError, InvalidQueryError, InvalidRecordError
from ldp_shared.kernel import channel_epsilon
from ldp_shared.mechanisms import AttributeSpec, ExponentialSpec
from ldp_shared.mechanisms.central_exponential import (
    exponential_mechanism,
    exponential_probabilities,
)
from ldp_shared.mechanisms.exponential import (
    MAX_DOMAIN,
    TOTAL,
    ExponentialRandomizer,
    build_channel,
    calibrate,
    ideal_channel,
    quantise,
    utility_matrix,
)
from ldp_shared.mechanisms.grr import grr_probabilities
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import CollectionSpec

from ._channel import assert_tight, max_log_ratio

EPSILONS = [0.1, 0.5, 1.0, 4.0, 10.0]
DOMAINS = [2, 3, 7, 40]
NAMED = ["equality", "ordinal"]
CUSTOM = [[0.0, 1.0, 2.0, 3.0], [1.0, 0.0, 1.0, 2.0], [3.0, 2.0, 0.0, 1.0], [0.0, 0.0, 1.0, 5.0]]


@pytest.mark.parametrize("utility", NAMED)
@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("d", DOMAINS)
def test_tight_calibration_spends_exactly_epsilon(utility: str, epsilon: float, d: int) -> None:
    m = ExponentialRandomizer(d, epsilon, utility)
    channel = m.channel_matrix()
    # the published ε is the channel's, at the boundary from both sides
    assert m.exact_epsilon == channel_epsilon(channel)
    assert max_log_ratio(channel) == pytest.approx(m.exact_epsilon, rel=1e-12)
    assert_tight(channel, m.exact_epsilon)
    # ... and it is the target: quantisation moves it by less than 1e-9 (relative)
    assert m.exact_epsilon == pytest.approx(epsilon, rel=1e-9)


@pytest.mark.parametrize("utility", NAMED)
@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("d", DOMAINS)
def test_textbook_calibration_spends_half(utility: str, epsilon: float, d: int) -> None:
    m = ExponentialRandomizer(d, epsilon, utility, "textbook")
    assert_tight(m.channel_matrix(), m.exact_epsilon)
    assert m.exact_epsilon == pytest.approx(epsilon / 2.0, rel=1e-9)


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("d", DOMAINS)
def test_closed_form_scales_are_what_bisection_finds(epsilon: float, d: int) -> None:
    """The tight ordinal scale is ε/(d-1) and the equality scale ε: bisection on the
    channel's exact ε (the path a custom matrix takes) lands on the same numbers."""
    ordinal = utility_matrix("ordinal", d)
    assert calibrate(ordinal, epsilon, "tight") == epsilon / (d - 1)
    assert calibrate(ordinal, epsilon, "textbook") == epsilon / (2 * (d - 1))
    shifted = ordinal + 1e-300  # not equal to the named matrix: takes the bisection
    assert calibrate(shifted, epsilon, "tight") == pytest.approx(epsilon / (d - 1), rel=1e-10)
    equality = utility_matrix("equality", d) * 2.0  # Δu = 2: the same channel at ε
    assert calibrate(equality, epsilon, "tight") == pytest.approx(epsilon / 2.0, rel=1e-10)


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_equality_is_grr(epsilon: float) -> None:
    for d in DOMAINS:
        m = ExponentialRandomizer(d, epsilon, "equality").channel_matrix()
        p, q = grr_probabilities(d, epsilon)
        expected = np.full((d, d), q)
        np.fill_diagonal(expected, p)
        # quantisation moves each probability by at most one weight, 2^-53
        np.testing.assert_allclose(m, expected, rtol=1e-14, atol=2.0 / TOTAL)


@pytest.mark.parametrize("calibration", ["tight", "textbook"])
@pytest.mark.parametrize("epsilon", [0.3, 1.0, 3.0])
def test_custom_utility(calibration: str, epsilon: float) -> None:
    key = tuple(tuple(row) for row in CUSTOM)
    m = ExponentialRandomizer(4, epsilon, key, calibration)  # type: ignore[arg-type]
    assert_tight(m.channel_matrix(), m.exact_epsilon)
    if calibration == "tight":
        assert m.exact_epsilon == pytest.approx(epsilon, rel=1e-9)
    else:  # McSherry-Talwar's bound holds, and is loose here (ε(λ) <= 2λΔu = ε)
        assert m.exact_epsilon < epsilon * 0.5


@pytest.mark.parametrize("utility", NAMED)
@pytest.mark.parametrize("d", [2, 5, 40, 300])
def test_columns_are_integers_summing_to_two_to_the_53(utility: str, d: int) -> None:
    channel = ExponentialRandomizer(d, 2.0, utility).channel
    assert channel.weights.dtype == np.int64
    assert np.all(channel.weights.sum(axis=0) == TOTAL) and channel.weights.min() >= 1
    np.testing.assert_array_equal(channel.cumulative[-1], np.full(d, TOTAL, dtype=np.uint64))
    assert not channel.weights.flags.writeable


def test_quantise_keeps_every_weight_positive_and_rounds_by_largest_remainder() -> None:
    probabilities = np.array([[1e-30, 0.5], [1.0 / 3.0, 0.25], [2.0 / 3.0, 0.25]])
    weights = quantise(probabilities)
    assert np.all(weights.sum(axis=0) == TOTAL) and weights.min() >= 1
    assert weights[0, 0] == 1 and weights[:, 1].tolist() == [TOTAL // 2, TOTAL // 4, TOTAL // 4]
    assert np.all(np.abs(weights - probabilities * TOTAL) <= 2.0)


def test_output_lattice_is_the_domain_for_every_input() -> None:
    """Every value can be reported whatever the truth (all weights >= 1), and the reports
    of each true value cover the same set: the domain's indices."""
    d = 6
    m = ExponentialRandomizer(d, 2.0, "ordinal")
    assert np.all(m.channel.weights >= 1)
    values = np.repeat(np.arange(d), 4_000)
    reported = m.perturb(values, seeded_rng(11))
    for x in range(d):
        assert sorted(set(reported[values == x].tolist())) == list(range(d))
    unpacked = m.unpack(m.pack(reported))
    np.testing.assert_array_equal(unpacked.values, reported)
    assert not unpacked.bad.any()


class _Raw:
    """A stand-in generator whose raw words are given (to test the inverse CDF)."""

    def __init__(self, words: NDArray[np.uint64]) -> None:
        self.bit_generator = self
        self.words = words

    def random_raw(self, size: int) -> NDArray[np.uint64]:
        assert size == self.words.size
        return self.words


def test_sampling_is_the_exact_inverse_cdf_of_the_integer_weights() -> None:
    m = ExponentialRandomizer(5, 1.0, "ordinal")
    cumulative = m.channel.cumulative.astype(np.int64)
    for x in range(5):
        edges = np.concatenate([[0], cumulative[:-1, x]])  # first 53-bit value of each y
        lasts = cumulative[:, x] - 1
        for draws, expected in ((edges, np.arange(5)), (lasts, np.arange(5))):
            words = (draws.astype(np.uint64) << np.uint64(11)) | np.uint64(2047)
            values = np.full(5, x)
            got = m.perturb(values, _Raw(words))  # type: ignore[arg-type]
            np.testing.assert_array_equal(got, expected)


def test_perturb_is_reproducible_and_checks_values() -> None:
    m = ExponentialRandomizer(10, 1.0, "ordinal")
    values = np.arange(10).repeat(20)
    np.testing.assert_array_equal(
        m.perturb(values, seeded_rng(9)), m.perturb(values, seeded_rng(9))
    )
    assert m.perturb(np.array([], dtype=np.int64), seeded_rng(1)).size == 0
    for bad in ([0, 10], [-1], [1.5]):
        with pytest.raises(InvalidRecordError):
            m.perturb(bad, seeded_rng(0))


def test_estimator_inverts_the_channel_and_sums_to_one() -> None:
    m = ExponentialRandomizer(7, 1.0, "ordinal")
    f = np.random.default_rng(7).dirichlet(np.ones(7))
    n = 1_000_000
    pi = m.channel_matrix() @ f
    f_hat, covariance = m.estimate_covariance(n * pi, n)
    np.testing.assert_allclose(f_hat, f, rtol=0.0, atol=1e-12)
    # the covariance formula against its definition M^-1 (diag π - ππᵀ) M^-T / n
    inverse = np.linalg.inv(m.channel_matrix())
    expected = inverse @ (np.diag(pi) - np.outer(pi, pi)) @ inverse.T / n
    np.testing.assert_allclose(covariance, expected, rtol=1e-9, atol=1e-18)
    estimate = m.estimate_stats({"counts": np.rint(n * pi).astype(np.int64)}, n, 0.9)
    assert estimate.estimate.sum() == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(estimate.stderr**2, np.diag(covariance), rtol=1e-4)
    assert np.all(estimate.ci_low < estimate.estimate) and estimate.confidence == 0.9
    with pytest.raises(InvalidQueryError):
        m.estimate_covariance(np.zeros(7), 0)


@pytest.mark.parametrize(("d", "epsilon"), [(1, 1.0), (5, 0.0), (5, -1.0), (5, math.nan)])
def test_bad_parameters(d: int, epsilon: float) -> None:
    with pytest.raises(ConfigurationError):
        ExponentialRandomizer(d, epsilon)
    with pytest.raises(ConfigurationError, match="finite"):
        ExponentialRandomizer(5, math.inf)
    with pytest.raises(ConfigurationError):
        build_channel(MAX_DOMAIN + 1, "ordinal", 1.0, "tight")


def _spec(**fields: Any) -> dict[str, Any]:
    return {"name": "a", "mechanism": "exponential", "domain": list("abcd"), **fields}


BAD_SPECS = {
    "unknown-name": (_spec(utility="median"), "utility 'median' is unknown"),
    "missing": (_spec(), "Field required"),
    "not-a-matrix": (_spec(utility=3), "a d×d matrix (a list of rows)"),
    "flat-list": (_spec(utility=[0, 1, 2, 3]), "a d×d matrix (a list of rows)"),
    "too-few-rows": (_spec(utility=[[0, 1, 2, 3]] * 3), "must be a 4×4 matrix"),
    "ragged": (_spec(utility=[*CUSTOM[:3], [0, 1, 2]]), "rows of lengths [4, 4, 4, 3]"),
    "nan": (_spec(utility=[*CUSTOM[:3], [0, math.nan, 0, 0]]), "must be finite numbers"),
    "inf": (_spec(utility=[*CUSTOM[:3], [0, math.inf, 0, 0]]), "must be finite numbers"),
    "string": (_spec(utility=[*CUSTOM[:3], [0, "1", 0, 0]]), "entries must be numbers"),
    "bool": (_spec(utility=[*CUSTOM[:3], [True, 0, 0, 0]]), "entries must be numbers"),
    "additive": (
        _spec(utility=[[r + c for c in range(4)] for r in range(4)]),
        "the same report distribution",
    ),
    "calibration": (_spec(utility="ordinal", calibration="loose"), "'tight' or 'textbook'"),
    "too-large": (
        _spec(domain=[str(i) for i in range(MAX_DOMAIN + 1)], utility="ordinal"),
        f"at most {MAX_DOMAIN} values",
    ),
}


@pytest.mark.parametrize("case", BAD_SPECS)
def test_bad_specs_give_one_clear_error(case: str) -> None:
    data, message = BAD_SPECS[case]
    with pytest.raises(ValidationError) as caught:
        AttributeSpec.model_validate(data)
    assert caught.value.error_count() == 1, caught.value.errors()
    assert message in str(caught.value)


def test_spec_parses_and_serialises() -> None:
    spec = AttributeSpec.model_validate(_spec(utility=[[0, 1, 2, 3], *CUSTOM[1:]]))
    assert isinstance(spec, ExponentialSpec) and spec.calibration == "tight"
    assert spec.model_dump(mode="json")["utility"][0] == [0.0, 1.0, 2.0, 3.0]
    np.testing.assert_array_equal(spec.utility_matrix(), np.array(CUSTOM))
    with pytest.raises(ConfigurationError):
        spec.randomizer(None)
    with pytest.raises(ConfigurationError):
        spec.randomizer(1.0, classes=2)


def _collection(attribute: dict[str, Any], epsilon: float = 2.0) -> CollectionSpec:
    return CollectionSpec.model_validate(
        {
            "name": "c",
            "epsilon": epsilon,
            "attributes": [attribute, {"name": "b", "domain": ["x", "y"]}],
        }
    )


def test_config_publishes_the_integer_channels_epsilon_and_scale() -> None:
    config = build_config(_collection(_spec(utility="ordinal")))
    attribute = config.attribute("a")
    randomizer = config.randomizer(attribute)
    assert isinstance(randomizer, ExponentialRandomizer)
    assert (
        attribute.epsilon
        == randomizer.exact_epsilon
        == channel_epsilon(randomizer.channel_matrix())
    )
    assert attribute.epsilon == pytest.approx(1.0, rel=1e-9)
    assert attribute.model_dump()["scale"] == 1.0 / 3.0
    assert (attribute.encoding, attribute.byte_length, attribute.p, attribute.q) == (
        "index",
        1,
        None,
        None,
    )


def test_config_refuses_a_singular_or_unrepresentable_channel() -> None:
    singular = [CUSTOM[0], CUSTOM[0], CUSTOM[2], CUSTOM[3]]  # two values, one column
    with pytest.raises(ConfigurationError, match=r"ill-conditioned.*condition number"):
        build_config(_collection(_spec(utility=singular)))
    # ε = 20 over 40 values: probabilities near 2e-9 (weights ~1.8e7) round the ratio up
    forty = _spec(domain=[f"v{i}" for i in range(40)], utility="equality")
    with pytest.raises(ConfigurationError, match="53-bit"):
        build_config(_collection(forty, epsilon=40.0))
    # ε = 40: the smallest weights are held at 1, so the channel spends less than allotted
    spent = build_config(_collection(_spec(utility="equality"), epsilon=80.0)).attribute("a")
    assert spent.epsilon == pytest.approx(math.log(TOTAL - 3), rel=1e-12)


def test_ideal_channel_columns_are_distributions() -> None:
    m = ideal_channel(utility_matrix("ordinal", 9), 700.0)  # no overflow at a huge scale
    np.testing.assert_allclose(m.sum(axis=0), 1.0, rtol=0.0, atol=1e-15)
    np.testing.assert_allclose(np.diag(m), 1.0)


SCORES = [24, 8, 28, 5]


def test_central_table_from_the_notebook() -> None:
    np.testing.assert_array_equal(exponential_probabilities(SCORES, 0.0, 1.0), [0.25] * 4)
    p = exponential_probabilities(SCORES, 0.1, 1.0)
    exact = np.exp(0.05 * np.array(SCORES)) / np.exp(0.05 * np.array(SCORES)).sum()
    np.testing.assert_allclose(p, exact, rtol=1e-12)
    # printed 0.327/0.147/0.400/0.126; the third is 0.39948 (0.3995 printed to 4 places)
    np.testing.assert_allclose(p, [0.327, 0.147, 0.3995, 0.126], rtol=0.0, atol=0.0005)
    p = exponential_probabilities(SCORES, 1.0, 1.0)
    assert (round(p[0], 2), round(p[2], 2)) == (0.12, 0.88)
    assert (f"{p[1]:.0e}", f"{p[3]:.1e}") == ("4e-05", "8.9e-06")


def test_central_mechanism_is_stable_and_checks_its_arguments() -> None:
    p = exponential_probabilities([1e6, 0.0, 1e6 - 1.0], 50.0, 1.0)  # exponents beyond overflow
    assert np.all(np.isfinite(p)) and p.argmax() == 0 and p.sum() == pytest.approx(1.0)
    assert exponential_mechanism([0.0, 1e9], 1.0, 1.0, seeded_rng(1)) == 1
    draws = exponential_mechanism(SCORES, 0.1, 1.0, seeded_rng(2), size=100)
    assert draws.shape == (100,) and set(draws.tolist()) <= {0, 1, 2, 3}
    for args in [
        ([], 1.0, 1.0),
        ([1.0, math.nan], 1.0, 1.0),
        ([[1.0]], 1.0, 1.0),
        (SCORES, -0.1, 1.0),
        (SCORES, math.inf, 1.0),
        (SCORES, math.nan, 1.0),
        (SCORES, 1.0, 0.0),
        (SCORES, 1.0, math.inf),
    ]:
        with pytest.raises(ConfigurationError):
            exponential_probabilities(*args)


def test_the_wire_format_example() -> None:
    """docs/wire-format.md: ordinal over 5 values at ε = 2, true value 3, U = 2·10^15."""
    m = ExponentialRandomizer(5, 2.0, "ordinal")
    assert (m.channel.scale, m.exact_epsilon) == (0.5, 1.9999999999999998)
    assert m.channel.weights[:, 3].tolist() == [
        716735727805739,
        1181697439904059,
        1948289704701708,
        3212186677627778,
        1948289704701708,
    ]
    words = np.array([(2 * 10**15) << 11], dtype=np.uint64)
    reported = m.perturb(np.array([3]), _Raw(words))  # type: ignore[arg-type]
    assert m.pack(reported).tobytes() == b"\x02"


def test_an_integer_too_large_for_a_float_is_a_clear_error_not_a_crash() -> None:
    """int(10**400) overflows float(): once an OverflowError (a 500 over HTTP)."""
    from pydantic import ValidationError

    from ldp_shared.schema import CollectionSpec

    attribute = {
        "name": "r",
        "mechanism": "exponential",
        "domain": ["a", "b"],
        "utility": [[1, 10**400], [0, 1]],
    }
    with pytest.raises(ValidationError, match="entries must be finite numbers"):
        CollectionSpec.model_validate({"name": "x", "epsilon": 1.0, "attributes": [attribute]})
