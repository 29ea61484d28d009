"""Hadamard randomized response: parameters, exact ε from its channel, segment, transform,
estimator, a domain of 2^20 integers, refused inputs (exact tests)."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from pydantic import ValidationError

from ldp_shared.analyses.joint import attribute_estimate
from ldp_shared.codec import Privatizer, decode_reports
from ldp_shared.collection import build_config
from ldp_shared.errors import InvalidQueryError, InvalidRecordError
from ldp_shared.kernel import channel_epsilon
from ldp_shared.mechanisms import HadamardResponse, HadamardSpec
from ldp_shared.mechanisms.hadamard import fwht, parity
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import CollectionSpec

from ._channel import assert_tight

EPSILONS = [0.1, 0.5, 1.0, 2.0, 4.0, 8.0, 30.0]


def hadamard(size: int) -> NDArray[np.int64]:
    """``H[j, v] = (−1)^{popcount(j & v)}``, written independently of the module."""
    return np.array([[(-1) ** bin(j & v).count("1") for v in range(size)] for j in range(size)])


def channel(m: HadamardResponse) -> NDArray[np.float64]:
    """``M[2j + s, v] = P(report (j, s) | v)`` from the mechanism's own ``p`` and ``q``."""
    signs = hadamard(m.rows)[:, : m.d]
    out = np.empty((2 * m.rows, m.d))
    out[1::2] = np.where(signs == 1, m.p, m.q) / m.rows  # s = 1: reported +1
    out[0::2] = np.where(signs == -1, m.p, m.q) / m.rows
    return out


def spec(**fields: Any) -> HadamardSpec:
    attribute = HadamardSpec.model_validate({"name": "a", "mechanism": "hadamard", **fields})
    assert isinstance(attribute, HadamardSpec)
    return attribute


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_parameters_and_exact_epsilon(epsilon: float) -> None:
    m = HadamardResponse(5, epsilon)
    e = math.exp(epsilon)
    assert m.rows == 8
    assert m.p == pytest.approx(e / (e + 1), rel=1e-14)
    assert m.q == pytest.approx(1 / (e + 1), rel=1e-14)
    assert m.exact_epsilon == pytest.approx(epsilon, rel=1e-12)


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_channel_epsilon_of_every_pair_of_values(epsilon: float) -> None:
    m = HadamardResponse(5, epsilon)
    full = channel(m)
    assert_tight(full, epsilon)  # columns are distributions; ε-LDP and not (ε − 1e-6)-LDP
    assert channel_epsilon(full) == pytest.approx(epsilon, rel=1e-9)
    for a, b in itertools.combinations(range(m.d), 2):
        assert channel_epsilon(full[:, [a, b]]) == pytest.approx(epsilon, rel=1e-9), (a, b)


def test_infinite_and_large_epsilon() -> None:
    exact = HadamardResponse(6, math.inf)
    assert (exact.p, exact.q, exact.exact_epsilon) == (1.0, 0.0, math.inf)
    values = np.arange(6).repeat(50)
    code = exact.perturb(values, seeded_rng(3))
    signs = hadamard(8)[code >> 1, values]
    assert np.array_equal(code & 1, (signs == 1).astype(np.int64))  # always the true sign
    large = HadamardResponse(6, 700.0)
    assert large.q > 0.0 and large.exact_epsilon == pytest.approx(700.0, rel=1e-12)


def test_parity_is_popcount_mod_2() -> None:
    x = np.concatenate([np.arange(4096), seeded_rng(1).integers(0, 2**32, 4096)])
    expected = [bin(int(v)).count("1") % 2 for v in x]
    assert parity(x.astype(np.int64)).tolist() == expected


def test_fwht_equals_the_dense_product() -> None:
    x = seeded_rng(2).integers(-50, 50, 16)
    before = x.copy()
    assert np.array_equal(fwht(x), hadamard(16) @ x)
    assert np.array_equal(x, before)  # the input is left alone
    assert np.array_equal(fwht(fwht(x)), 16 * x)  # H² = D·I
    y = seeded_rng(3).normal(size=16)
    np.testing.assert_allclose(fwht(y), hadamard(16) @ y, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="power of two"):
        fwht(np.ones(12))


def test_pack_unpack_round_trip_and_bytes() -> None:
    m = HadamardResponse(2**20, 1.0)
    code = m.perturb(seeded_rng(4).integers(0, 2**20, 1000), seeded_rng(5))
    packed = m.pack(code)
    assert packed.shape == (1000, 3) and packed.dtype == np.uint8
    back = m.unpack(packed)
    assert np.array_equal(back.values, code) and not back.bad.any()
    # row 5 and +1 → 2·5 + 1 = 11; row 2^20 − 1 and −1 → 0x1FFFFE
    assert m.pack(np.array([11, 2 * (2**20 - 1)])).tolist() == [[0, 0, 11], [0x1F, 0xFF, 0xFE]]
    widest = HadamardResponse(2**22, 1.0)  # D = 2^22: the top code 2^23 − 1 fits 24 bits
    assert widest.pack(np.array([2**23 - 1])).tolist() == [[0x7F, 0xFF, 0xFF]]
    assert not widest.unpack(np.array([[0x7F, 0xFF, 0xFF]], dtype=np.uint8)).bad.any()


def test_rows_beyond_d_are_bad() -> None:
    m = HadamardResponse(5, 1.0)  # D = 8: codes 0..15
    segment = np.array([[0, 0, 15], [0, 0, 16], [0, 0, 17], [0xFF, 0xFF, 0xFF]], dtype=np.uint8)
    unpacked = m.unpack(segment)
    assert unpacked.bad.tolist() == [False, True, True, True]
    assert unpacked.problem == "Hadamard row ≥ 8"


def test_accumulate_counts_signs_per_row() -> None:
    m = HadamardResponse(3, 1.0)  # D = 4
    signs = m.accumulate(np.array([1, 0, 1, 3, 7, 6, 6], dtype=np.int64))["signs"]
    assert signs.dtype == np.int64 and signs.tolist() == [1, 1, 0, -1]
    assert m.stats_layout[0].name == "signs" and m.stats_layout[0].length == 4


@pytest.mark.parametrize("epsilon", [0.5, 2.0, math.inf])
def test_estimator_inverts_the_expected_statistics(epsilon: float) -> None:
    m = HadamardResponse(11, epsilon)  # D = 16
    n = 1_000_000
    f = seeded_rng(6).dirichlet(np.ones(11))
    expected = n * (m.p - m.q) * (hadamard(16)[:, :11] @ f) / m.rows  # E T[j]
    estimate = m.estimate_stats({"signs": np.rint(expected)}, n, 0.95)
    rounding = m.rows * 0.5 / (n * (m.p - m.q))  # each T[j] rounded by at most 1/2
    np.testing.assert_allclose(estimate.estimate, f, rtol=0, atol=rounding)
    picked = m.estimate_values({"signs": np.rint(expected)}, n, np.array([10, 0]), 0.95)
    assert np.array_equal(picked.estimate, estimate.estimate[[10, 0]])
    assert np.array_equal(picked.stderr, estimate.stderr[[10, 0]])


@pytest.mark.parametrize("epsilon", [0.5, 2.0, math.inf])
def test_variance_by_enumerating_each_reports_outputs(epsilon: float) -> None:
    """``Var f̂_v = Σ_i Var z_i / n²``, with each report's ``z`` distribution written out
    over its ``2D`` outputs, equals ``(1/(p − q)² − f_v)/n``."""
    m = HadamardResponse(5, epsilon)
    values = np.array([0, 0, 0, 1, 1, 3, 4, 4, 4, 4])
    f = np.bincount(values, minlength=5) / values.size
    full = channel(m)
    y = np.tile([-1.0, 1.0], m.rows)  # output 2j + s has sign 2s − 1
    z = y[:, None] * hadamard(8)[np.arange(16) // 2, :5] / (m.p - m.q)  # z[output, v]
    total = np.zeros(5)
    for value in values:
        mean = full[:, value] @ z
        total += full[:, value] @ z**2 - mean**2
    np.testing.assert_allclose(total / values.size**2, m.variance(f, values.size), rtol=1e-12)


def test_no_reports_is_refused() -> None:
    m = HadamardResponse(5, 1.0)
    with pytest.raises(InvalidQueryError):
        m.estimate_stats({"signs": np.zeros(8)}, 0, 0.95)


def test_listed_domain() -> None:
    s = spec(domain=["x", "y", "z"])
    assert (s.values, s.is_open, s.d, s.parse_candidate("y")) == (["x", "y", "z"], False, 3, "y")
    assert s.encode(["z", "x"]).tolist() == [2, 0]
    with pytest.raises(InvalidRecordError, match="value 'w' is not in its domain"):
        s.encode(["w"])
    assert s.randomizer(1.0).rows == 4


def test_integer_domain_encoding() -> None:
    s = spec(domain_size=10)
    assert (s.values, s.is_open, s.d) == ([], True, 10)
    assert s.encode([0, 9, np.int32(4)]).tolist() == [0, 9, 4]
    assert s.encode(np.array([3, 1], dtype=np.uint8)).tolist() == [3, 1]
    assert s.parse_candidate("7") == 7 and s.parse_candidate("007") == 7
    for text in ("-1", "+3", " 3", "1" * 21):
        with pytest.raises(InvalidRecordError, match=r"decimal integer|digits"):
            s.parse_candidate(text)


@pytest.mark.parametrize(
    ("column", "match"),
    [
        ([10], "value 10 is outside 0 to 9"),
        ([-1], "value -1 is outside 0 to 9"),
        (np.array([2, 12]), "value 12 is outside 0 to 9"),
        ([True], "value True is not an integer"),
        ([3.0], "value 3.0 is not an integer"),
        (["3"], "value '3' is not an integer"),
        ([None], "value None is not an integer"),
        ([2**70], "is outside 0 to 9"),
    ],
)
def test_integer_domain_refuses_bad_values(column: Any, match: str) -> None:
    with pytest.raises(InvalidRecordError, match=match) as error:
        spec(domain_size=10).encode(column)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("text", ["", "x", "1.5", "0x10", "١٢", " 3", "1e3"])
def test_a_candidate_must_be_a_decimal_integer(text: str) -> None:
    with pytest.raises(InvalidRecordError, match="is not a decimal integer"):
        spec(domain_size=10).parse_candidate(text)


def test_a_huge_candidate_is_refused_in_one_line() -> None:
    """More digits than Python converts (4,300) must not escape as a ValueError."""
    with pytest.raises(InvalidRecordError, match="more than 20 digits") as error:
        spec(domain_size=10).parse_candidate("9" * 5000)
    assert len(str(error.value)) < 200


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        ({"domain_size": 1}, "greater than or equal to 2"),
        ({"domain_size": 2**22 + 1}, "less than or equal to 4194304"),
        ({"domain_size": True}, "valid integer"),
        ({"domain_size": 8.5}, "valid integer"),  # 8.0 is 8, as JSON Schema's integer
        ({}, "exactly one of domain"),
        ({"domain": ["a", "b"], "domain_size": 2}, "exactly one of domain"),
        ({"domain": ["a"]}, "2 to 65536 values, got 1"),
        ({"domain": ["a", "b", "a"]}, "duplicate domain value 'a'"),
        ({"domain": ["a", ""]}, "at least 1 character"),
    ],
)
def test_bad_specs_are_refused(fields: dict[str, Any], match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        spec(**fields)


def collection(*attributes: dict[str, Any], **fields: Any) -> CollectionSpec:
    document = {"name": "h", "epsilon": 2.0, "attributes": list(attributes), **fields}
    return CollectionSpec.model_validate(document)


def test_a_collection_privatizes_and_decodes() -> None:
    listed = {"name": "colour", "mechanism": "hadamard", "domain": ["r", "g", "b"]}
    numbered = {"name": "item", "mechanism": "hadamard", "domain_size": 1000}
    config = build_config(collection(listed, numbered, {"name": "o", "domain": ["u", "v"]}))
    colour, item, _ = config.attributes
    assert (colour.encoding, colour.byte_length, colour.domain) == ("hadamard", 3, ["r", "g", "b"])
    assert (item.byte_offset, item.domain, item.model_dump()["rows"]) == (3, None, 1024)
    assert config.stats_length == 4 + 1024 + 2 and config.report_bytes == 7
    records = [{"colour": "rgb"[i % 3], "item": i % 997, "o": "uv"[i % 2]} for i in range(3000)]
    reports = Privatizer(config).privatize_many(records, seeded_rng(7))
    batch = decode_reports(config, reports)
    assert batch.valid.all()
    for attribute in (colour, item):
        randomizer = config.randomizer(attribute)
        at = attribute.byte_offset
        unpacked = randomizer.unpack(reports[:, at : at + 3])
        signs = randomizer.accumulate(unpacked.values)["signs"]
        start = attribute.stats_offset
        assert np.array_equal(batch.sums[start : start + signs.size], signs)
    tampered = reports[:1].copy()
    tampered[0, 3:6] = [0, 0x08, 0x00]  # row 1024 of 1024
    bad = decode_reports(config, tampered)
    assert bad.reasons == ["attribute 'item': Hadamard row ≥ 1024"]


def test_a_domain_of_2_to_the_20_integers() -> None:
    config = build_config(collection({"name": "id", "mechanism": "hadamard", "domain_size": 2**20}))
    (attribute,) = config.attributes
    assert config.report_bytes == 3 and config.stats_length == 2**20
    assert attribute.domain is None and config.spec_of(attribute).is_open
    assert len(Privatizer(config).privatize({"id": 2**20 - 1}, seeded_rng(8))) == 3
    ids = np.concatenate([np.full(30_000, 123_456), np.arange(50_000) * 20 + 7])
    records = [{"id": int(v)} for v in ids]
    batch = decode_reports(config, Privatizer(config).privatize_many(records, seeded_rng(9)))
    spec_ = config.spec_of(attribute)
    named = spec_.encode([spec_.parse_candidate(t) for t in ["123456", "7", "1048575"]])
    estimate = attribute_estimate(config, attribute, ids.size, batch.sums, 0.95, encoded=named)
    assert estimate.estimate.shape == (3,)
    truth = np.array([30_000, 1, 0]) / ids.size
    assert np.all(np.abs(estimate.estimate - truth) < 5 * estimate.stderr)
    assert estimate.estimate[0] > 0.3  # 0.375 ± 0.008 at ε = 2
