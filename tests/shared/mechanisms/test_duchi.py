"""Duchi et al.'s one-bit mechanism: parameters, exact ε, encoding, segment (exact tests)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from ldp_shared.codec import Privatizer, decode_reports
from ldp_shared.collection import build_config
from ldp_shared.errors import InvalidRecordError
from ldp_shared.mechanisms import DuchiRandomizer
from ldp_shared.mechanisms.duchi import _as_drawn
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import CollectionSpec


def spec(**attribute: Any) -> CollectionSpec:
    numeric = {"name": "age", "mechanism": "duchi", "lo": 17.0, "hi": 90.0, **attribute}
    return CollectionSpec.model_validate({"name": "n", "epsilon": 1.0, "attributes": [numeric]})


@pytest.mark.parametrize("epsilon", [0.01, 0.5, 1.0, 2.0, 8.0])
def test_scale_and_probabilities(epsilon: float) -> None:
    m = DuchiRandomizer(epsilon=epsilon, lo=0.0, hi=1.0)
    e = math.exp(epsilon)
    assert m.c == pytest.approx((e + 1) / (e - 1), rel=1e-12)
    p = m.positive_probability(np.array([-1.0, 0.0, 1.0]))
    assert p.tolist() == pytest.approx([1 / (e + 1), 0.5, e / (e + 1)], rel=1e-12)
    # the answer ±C is unbiased for t: E = C(2P - 1) = t
    t = np.linspace(-1, 1, 9)
    assert m.c * (2 * m.positive_probability(t) - 1) == pytest.approx(t, abs=1e-12)


@pytest.mark.parametrize("epsilon", [1e-6, 0.1, 1.0, 4.0, 30.0])
def test_exact_epsilon_is_that_of_the_probabilities_drawn(epsilon: float) -> None:
    m = DuchiRandomizer(epsilon=epsilon, lo=0.0, hi=1.0)
    high = _as_drawn(float(m.positive_probability(np.array([1.0]))[0]))
    low = _as_drawn(float(m.positive_probability(np.array([-1.0]))[0]))
    assert high * 2**53 == math.ceil(high * 2**53)  # on the generator's lattice
    assert m.exact_epsilon == max(math.log(high / low), math.log((1 - low) / (1 - high)))
    # near the float limit the lattice of uniform doubles shows: P(+C|−1) ≈ 1e-13 moves
    # by up to 2^-53, so the stated ε is the drawn one, a little off the nominal
    assert m.exact_epsilon == pytest.approx(epsilon, rel=1e-9 if epsilon < 10 else 1e-4)


def _duchi_config(epsilon: float) -> None:
    attribute = {"name": "a", "mechanism": "duchi", "lo": 0, "hi": 1}
    build_config(
        CollectionSpec.model_validate({"name": "n", "epsilon": epsilon, "attributes": [attribute]})
    )


def test_epsilon_at_the_float_boundary() -> None:
    """P(+C|−1) ≈ e^-ε is drawn on the lattice k/2^53: at ε = 15 the drawn channel spends ε
    to 1e-9 and is accepted; at ε = 26 it would spend 26.0000127, more than allotted,
    and at ε = 40 the probability rounds to 0 (infinite ε): both refused."""
    assert DuchiRandomizer(epsilon=15.0, lo=0.0, hi=1.0).exact_epsilon == pytest.approx(15.0)
    _duchi_config(15.0)
    with pytest.raises(ValueError, match=r"more than the 26\.0 allotted"):
        _duchi_config(26.0)
    assert math.isinf(DuchiRandomizer(epsilon=40.0, lo=0.0, hi=1.0).exact_epsilon)
    with pytest.raises(ValueError, match=r"ε is too large: at ε = 40\.0 "):
        _duchi_config(40.0)


def test_the_output_lattice_does_not_depend_on_the_input() -> None:
    config = build_config(spec())
    rng = seeded_rng(3)
    for age in (17.0, 17.000000000000004, 53.123456789, 90.0, -1e9, 1e9):
        packed = Privatizer(config).privatize_columns({"age": np.full(2000, age)}, rng)
        assert set(np.unique(packed).tolist()) <= {0, 1}


def test_clipping_encoding_and_bad_values() -> None:
    s = spec().attributes[0]
    t = s.encode([17.0, 53.5, 90.0, -5.0, 1000.0, 30])
    assert t.tolist() == pytest.approx([-1.0, 0.0, 1.0, -1.0, 1.0, 2 * 13 / 73 - 1])
    for bad in ([math.nan], [math.inf], [-math.inf], ["53"], [True], [None], [[1.0]]):
        with pytest.raises(InvalidRecordError):
            s.encode(bad)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"lo": 5.0, "hi": 5.0}, "lo must be below hi"),
        ({"lo": 9.0, "hi": 5.0}, "lo must be below hi"),
        ({"lo": -1.7e308, "hi": 1.7e308}, "hi − lo must be a finite number"),
        ({"lo": -math.inf}, "finite"),
        ({"hi": math.nan}, "finite"),
        ({"lo": None}, "lo"),
        ({"domain": ["a", "b"]}, "domain"),
    ],
)
def test_bad_bounds_are_refused_in_one_line(change: dict[str, Any], match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        spec(**change)


def test_segment_statistics_and_a_bad_byte() -> None:
    config = build_config(spec())
    age = config.attributes[0]
    assert (age.encoding, age.byte_length, age.domain) == ("sign", 1, None)
    assert age.model_dump()["lo"] == 17.0 and age.model_dump()["hi"] == 90.0
    batch = decode_reports(config, np.array([[0], [1], [1], [2]], dtype=np.uint8))
    assert batch.valid.tolist() == [True, True, True, False]
    assert batch.reasons[3] == "attribute 'age': sign byte is neither 0 nor 1"
    assert batch.sums.tolist() == [2]


def test_a_numeric_attribute_cannot_be_a_naive_bayes_feature() -> None:
    with pytest.raises(ValidationError, match="oue"):
        CollectionSpec.model_validate(
            {
                "name": "n",
                "epsilon": 1.0,
                "label": "c",
                "attributes": [
                    {"name": "age", "mechanism": "duchi", "lo": 0, "hi": 1},
                    {"name": "c", "domain": ["a", "b"]},
                ],
            }
        )
