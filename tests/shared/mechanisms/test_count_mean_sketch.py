"""HCMS: exact ε over its whole channel (collisions included), the realised keep
probability, the 5-byte segment, the spec, and a collection through build_config."""

from __future__ import annotations

import itertools
import math
import string
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from pydantic import ValidationError

from ldp_shared.codec import Privatizer, decode_reports
from ldp_shared.collection import build_config
from ldp_shared.errors import ConfigurationError, InvalidQueryError, InvalidRecordError
from ldp_shared.kernel import channel_epsilon
from ldp_shared.mechanisms import CountMeanSketch, CountMeanSketchSpec
from ldp_shared.mechanisms.base import AttributeSpec, Segment, StatsBlock
from ldp_shared.mechanisms.hashing import buckets, hash_keys
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import CollectionSpec

from ._channel import assert_tight

SALT = "00" * 16
WORDS = list(string.ascii_lowercase)


def spec(**changes: Any) -> CountMeanSketchSpec:
    fields: dict[str, Any] = {"name": "word", "mechanism": "hcms", "salt": SALT}
    fields.update(changes)
    return CountMeanSketchSpec.model_validate(fields)


def hcms_channel(m: CountMeanSketch, keys: NDArray[np.uint64]) -> NDArray[np.float64]:
    """``M[(j, l, y), v]``: ``p/(km)`` when ``y = H[l, h_j(x_v)]``, else ``q/(km)``, with
    ``H`` the Sylvester matrix built by Kronecker products (not by parity)."""
    hadamard = np.array([[1.0]])
    while hadamard.shape[0] < m.m:
        hadamard = np.kron(hadamard, np.array([[1.0, 1.0], [1.0, -1.0]]))
    columns = buckets(keys[:, None], np.arange(m.k)[None, :], m.m)
    channel = np.empty((m.k, m.m, 2, keys.size))
    for v in range(keys.size):
        for j in range(m.k):
            sign = hadamard[:, columns[v, j]]
            channel[j, :, 1, v] = np.where(sign > 0, m.p, m.q)  # y = +1
            channel[j, :, 0, v] = np.where(sign < 0, m.p, m.q)  # y = −1
    return channel.reshape(-1, keys.size) / (m.k * m.m)


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 3.0, 8.0])
def test_the_whole_channel_is_tight_at_epsilon_collisions_included(epsilon: float) -> None:
    m = CountMeanSketch(k=2, m=4, epsilon=epsilon)
    keys = hash_keys(WORDS, SALT, "string", 64, "w")
    columns = buckets(keys[:, None], np.arange(2)[None, :], 4)
    a, b = next(
        (a, b)
        for a, b in itertools.combinations(range(len(WORDS)), 2)
        if (columns[a] == columns[b]).sum() == 1
    )
    chosen = keys[[a, b, 2, 5, 11]] if a not in (2, 5, 11) and b not in (2, 5, 11) else keys[:5]
    channel = hcms_channel(m, chosen)
    assert channel.shape == (2 * 4 * 2, chosen.size)
    assert channel_epsilon(channel) == pytest.approx(epsilon, rel=1e-9)
    assert m.exact_epsilon == pytest.approx(epsilon, rel=1e-9)
    assert_tight(channel, epsilon)
    # the pair colliding under one function only is still separated at exactly ε
    pair = hcms_channel(m, keys[[a, b]])
    assert channel_epsilon(pair) == pytest.approx(epsilon, rel=1e-9)


def test_the_sampler_matches_the_channel() -> None:
    """Reports of one value drawn by :meth:`perturb` follow its channel column."""
    m = CountMeanSketch(k=2, m=4, epsilon=1.0)
    key = hash_keys(["a"], SALT, "string", 64, "w")
    reports = m.perturb(np.repeat(key, 80_000), seeded_rng(5))
    cells = (reports[:, 0] * 4 + reports[:, 1]) * 2 + (reports[:, 2] > 0)
    observed = np.bincount(cells, minlength=16) / reports.shape[0]
    expected = hcms_channel(m, key)[:, 0]
    sd = np.sqrt(expected * (1 - expected) / reports.shape[0])
    assert np.all(np.abs(observed - expected) < 5 * sd)


@pytest.mark.parametrize("epsilon", [50.0, 700.0, math.inf])
def test_where_the_sampler_cannot_flip_the_epsilon_is_infinite(epsilon: float) -> None:
    m = CountMeanSketch(k=4, m=8, epsilon=epsilon)
    assert m.p == 1.0 and m.exact_epsilon == math.inf
    if math.isfinite(epsilon):
        payload = {
            "name": "w",
            "epsilon": epsilon,
            "attributes": [{"name": "word", "mechanism": "hcms"}],
        }
        with pytest.raises(ConfigurationError, match="too large"):
            build_config(CollectionSpec.model_validate(payload))


def test_the_realised_keep_probability_is_what_the_epsilon_states() -> None:
    """The flip probability ``1 − p′`` is a multiple of ``2^-53``: at ε = 10 the realised ε
    is within the slack of the allotted one, at ε = 30 (``1 − p ≈ 1e-13``) it exceeds it
    by about 1e-3 and a collection at that ε is refused."""
    ten = CountMeanSketch(k=4, m=8, epsilon=10.0).exact_epsilon
    assert 10.0 <= ten <= 10.0 * (1 + 1e-9)
    thirty = CountMeanSketch(k=4, m=8, epsilon=30.0).exact_epsilon
    assert thirty > 30.0 * (1 + 1e-9) and thirty == pytest.approx(30.0, rel=1e-4)
    payload = {"name": "w", "epsilon": 30.0, "attributes": [{"name": "word", "mechanism": "hcms"}]}
    with pytest.raises(ConfigurationError, match="more than"):
        build_config(CollectionSpec.model_validate(payload))


@pytest.mark.parametrize("epsilon", [0.0, -1.0, math.nan])
def test_bad_epsilon(epsilon: float) -> None:
    with pytest.raises(ConfigurationError):
        CountMeanSketch(k=4, m=8, epsilon=epsilon)
    with pytest.raises(ConfigurationError, match="needs an ε"):
        spec().randomizer(None)


def test_limits() -> None:
    assert CountMeanSketch(k=1024, m=1024, epsilon=1.0).stats_layout == (
        StatsBlock("signs", "int64", 2**20),
    )
    for k, m, message in [
        (0, 8, "1 to 65536 hash functions"),
        (65_537, 2, "1 to 65536 hash functions"),
        (4, 1, "power of two"),
        (4, 12, "power of two"),
        (4, 131_072, "power of two"),
        (2048, 1024, "over the 1048576"),
    ]:
        with pytest.raises(ConfigurationError, match=message):
            CountMeanSketch(k=k, m=m, epsilon=1.0)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"columns": 12}, "power of two"),
        ({"columns": 1}, "columns"),
        ({"columns": 131_072}, "columns"),
        ({"hashes": 2048}, "over the 1048576"),
        ({"hashes": 0}, "hashes"),
        ({"domain": ["a", "b"]}, "domain"),
        ({"salt": "AB" * 16}, "salt"),
        ({"max_length": 0}, "max_length"),
    ],
)
def test_spec_refuses(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        spec(**changes)


# -- the segment ---------------------------------------------------------------------------


def test_segment_and_published_parameters() -> None:
    m = CountMeanSketch(k=1000, m=64, epsilon=1.0)
    assert m.segment == Segment(encoding="hcms", byte_length=5)
    assert m.stats_layout == (StatsBlock("signs", "int64", 64_000),)
    assert m.published() == {"p": m.p, "q": m.q, "hashes": 1000, "columns": 64}
    assert m.delta == 0.0


def test_pack_is_j_then_l_big_endian_then_the_sign() -> None:
    m = CountMeanSketch(k=65_536, m=16, epsilon=1.0)
    answers = np.array([[0, 0, -1], [1, 3, 1], [256, 15, 1], [0x1234, 7, -1], [65535, 0, 1]])
    packed = m.pack(answers)
    assert packed.dtype == np.uint8 and packed.shape == (5, 5)
    assert packed.tolist() == [
        [0, 0, 0, 0, 0],
        [0, 1, 0, 3, 1],
        [1, 0, 0, 15, 1],
        [0x12, 0x34, 0, 7, 0],
        [255, 255, 0, 0, 1],
    ]
    unpacked = m.unpack(packed)
    np.testing.assert_array_equal(unpacked.values, answers)
    assert not unpacked.bad.any()


@pytest.mark.parametrize("epsilon", [0.5, 4.0])
def test_perturbed_reports_round_trip(epsilon: float) -> None:
    m = CountMeanSketch(k=300, m=256, epsilon=epsilon)
    keys = hash_keys([f"v{i}" for i in range(2000)], SALT, "string", 64, "w")
    answers = m.perturb(keys, seeded_rng(3))
    assert answers.shape == (2000, 3) and answers.dtype == np.int64
    assert answers[:, 0].max() < 300 and answers[:, 1].max() < 256
    assert set(np.unique(answers[:, 2]).tolist()) == {-1, 1}
    unpacked = m.unpack(m.pack(answers))
    np.testing.assert_array_equal(unpacked.values, answers)
    assert not unpacked.bad.any()
    signs = m.accumulate(answers)["signs"]
    assert signs.shape == (300 * 256,) and signs.sum() == answers[:, 2].sum()
    assert np.abs(signs).sum() <= 2000


def test_bad_rows() -> None:
    m = CountMeanSketch(k=1000, m=64, epsilon=1.0)
    segment = np.array(
        [
            [0x03, 0xE7, 0, 63, 1],  # fine
            [0x03, 0xE8, 0, 0, 0],  # j = 1000
            [0x00, 0x00, 0, 64, 1],  # l = 64
            [0x00, 0x00, 1, 0, 0],  # l = 256
            [0x00, 0x05, 0, 2, 2],  # sign byte 2
            [0xFF, 0xFF, 0xFF, 0xFF, 0xFF],  # all
            [0x00, 0x05, 0, 2, 0],  # fine
        ],
        dtype=np.uint8,
    )
    unpacked = m.unpack(segment)
    assert unpacked.bad.tolist() == [False, True, True, True, True, True, False]
    assert unpacked.problem == "hash index ≥ 1000, Hadamard row ≥ 64 or sign byte > 1"
    assert unpacked.values[0].tolist() == [999, 63, 1] and unpacked.values[6].tolist() == [5, 2, -1]


@pytest.mark.parametrize("keys", [np.array([1, 2], dtype=np.int64), np.zeros((2, 2), np.uint64)])
def test_perturb_wants_a_column_of_keys(keys: NDArray[Any]) -> None:
    with pytest.raises(InvalidRecordError, match="1-d array of uint64 keys"):
        CountMeanSketch(k=4, m=8, epsilon=1.0).perturb(keys, seeded_rng(0))


# -- the spec and estimates ------------------------------------------------------------------


def test_open_domain_and_named_values() -> None:
    attribute = spec(hashes=64, columns=64)
    assert attribute.is_open and attribute.values == [] and attribute.estimates_each_value
    assert attribute.model_dump()["domain"] == "open"
    assert attribute.canonical_value("e\u0301") == attribute.canonical_value("é")
    assert attribute.canonical_value("x") == f"{int(attribute.encode(['x'])[0]):016x}"
    m = attribute.randomizer(2.0)
    stats = m.accumulate(m.perturb(attribute.encode(["x"] * 3000 + ["y"] * 1000), seeded_rng(0)))
    with pytest.raises(InvalidQueryError, match="name the values"):
        m.estimate_stats(stats, 4000, 0.95)
    est = m.estimate_values(stats, 4000, attribute.encode(["x", "y", "z"]), 0.95)
    assert est.estimate.shape == (3,)
    assert np.all(np.abs(est.estimate - [0.75, 0.25, 0.0]) < 5 * est.stderr)
    with pytest.raises(InvalidQueryError, match="no reports"):
        m.estimate_values(stats, 0, attribute.encode(["x"]), 0.95)
    again = AttributeSpec.model_validate(attribute.model_dump(mode="json"))
    assert isinstance(again, CountMeanSketchSpec) and again == attribute


def test_the_sketch_is_the_row_transform() -> None:
    m = CountMeanSketch(k=3, m=8, epsilon=1.0)
    signs = seeded_rng(1).integers(-5, 6, size=24)
    hadamard = np.array([[(-1) ** bin(a & b).count("1") for b in range(8)] for a in range(8)])
    expected = signs.reshape(3, 8) @ hadamard / (m.p - m.q)
    np.testing.assert_allclose(m.sketch(signs), expected, rtol=1e-12)


def test_integer_candidates() -> None:
    attribute = spec(value_type="integer")
    assert attribute.parse_candidate("007") == 7
    with pytest.raises(InvalidRecordError, match="is not a decimal integer"):
        attribute.parse_candidate("-1")
    assert spec().parse_candidate("-1") == "-1"


def test_a_collection_through_build_config_and_the_privatizer() -> None:
    payload = {
        "name": "w",
        "epsilon": 3.0,
        "attributes": [{"name": "word", "mechanism": "hcms", "hashes": 128, "columns": 256}],
    }
    config = build_config(CollectionSpec.model_validate(payload))
    attribute = config.attributes[0]
    assert (attribute.encoding, attribute.byte_length) == ("hcms", 5)
    randomizer = config.randomizers[0]
    assert isinstance(randomizer, CountMeanSketch) and (randomizer.k, randomizer.m) == (128, 256)
    assert randomizer.exact_epsilon == pytest.approx(3.0, rel=1e-9)
    words = np.array(["a"] * 6000 + ["b"] * 2000 + [f"w{i}" for i in range(2000)], dtype=object)
    packed = Privatizer(config).privatize_columns({"word": words}, seeded_rng(4))
    batch = decode_reports(config, packed)
    assert batch.valid.all()
    block = batch.sums[attribute.stats_offset : attribute.stats_offset + 128 * 256]
    spec_ = config.spec.attributes[0]
    assert isinstance(spec_, CountMeanSketchSpec)
    est = randomizer.estimate_values(
        {"signs": block}, words.size, spec_.encode(["a", "b", "nobody"]), 0.95
    )
    assert np.all(np.abs(est.estimate - [0.6, 0.2, 0.0]) < 5 * est.stderr)
