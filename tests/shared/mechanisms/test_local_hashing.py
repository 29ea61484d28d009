"""FLH: exact ε from its whole channel (hash collisions included), bucket count, limits,
the 3-byte segment, the declared-domain spec, the salt, and the F₂ estimator."""

from __future__ import annotations

import itertools
import math
import re
import string
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from pydantic import ValidationError

from ldp_shared.collection import build_config
from ldp_shared.errors import ConfigurationError, InvalidQueryError, InvalidRecordError
from ldp_shared.kernel import channel_epsilon
from ldp_shared.mechanisms import LocalHashing, LocalHashingSpec
from ldp_shared.mechanisms.base import AttributeSpec, Segment, StatsBlock
from ldp_shared.mechanisms.hashing import SALT_PATTERN, buckets, hash_keys
from ldp_shared.mechanisms.local_hashing import (
    MAX_BUCKETS,
    MAX_HASHES,
    MAX_SKETCH_CELLS,
    bucket_count,
)
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import CollectionSpec

from ._channel import assert_tight

SALT = "00" * 16
K = 8
EPSILONS = [0.1, 0.5, 1.0, 2.0, 3.0, math.log(255.0), 6.0, 12.0]
WORDS = list(string.ascii_lowercase) + [
    "".join(pair) for pair in itertools.product(string.ascii_lowercase, repeat=2)
]


def spec(**changes: Any) -> LocalHashingSpec:
    fields: dict[str, Any] = {"name": "word", "mechanism": "flh", "salt": SALT}
    fields.update(changes)
    return LocalHashingSpec.model_validate(fields)


def bucket_table(keys: NDArray[np.uint64], k: int, g: int) -> NDArray[np.int64]:
    """``B[v, j] = h_j(x_v)``."""
    return buckets(keys[:, None], np.arange(k)[None, :], g)


def flh_channel(m: LocalHashing, keys: NDArray[np.uint64]) -> NDArray[np.float64]:
    """``M[(j, y), v] = P(report (j, y) | value v)``, built from ``p``, ``q`` and the buckets
    alone: ``p/k`` when ``y = h_j(x_v)``, else ``q/k``."""
    table = bucket_table(keys, m.k, m.g)
    channel = np.empty((m.k * m.g, keys.size))
    for v in range(keys.size):
        hit = np.zeros((m.k, m.g), dtype=bool)
        hit[np.arange(m.k), table[v]] = True
        channel[:, v] = np.where(hit, m.p, m.q).ravel() / m.k
    return channel


def colliding_pair(g: int, k: int, everywhere: bool) -> tuple[str, str]:
    """Two short strings whose keys (under :data:`SALT`) share a bucket under some but not
    all of the ``k`` functions, or under all of them."""
    keys = hash_keys(WORDS, SALT, "string", 64, "search")
    table = bucket_table(keys, k, g)
    for a, b in itertools.combinations(range(len(WORDS)), 2):
        same = table[a] == table[b]
        found = same.all() if everywhere else same.any() and not same.all()
        if found:
            return WORDS[a], WORDS[b]
    raise AssertionError(f"no pair found among {len(WORDS)} strings for g={g}")


# -- privacy -------------------------------------------------------------------------------


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_exact_epsilon_is_the_allotted_epsilon(epsilon: float) -> None:
    m = LocalHashing(k=K, epsilon=epsilon)
    assert m.g == bucket_count(epsilon)
    assert m.p / m.q == pytest.approx(math.exp(epsilon), rel=1e-12)
    assert m.p + (m.g - 1) * m.q == pytest.approx(1.0, rel=1e-14)
    assert m.exact_epsilon == pytest.approx(epsilon, rel=1e-12)
    assert math.isfinite(m.exact_epsilon)


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_the_whole_channel_is_tight_at_epsilon_collisions_included(epsilon: float) -> None:
    """Over every output ``(j, y)`` and every pair of a declared domain, the worst ratio
    is ``e^ε``: not more (no output is likelier under one value beyond ``p/q``) and not
    less. The domain holds two values that share a bucket under some ``h_j``."""
    g = bucket_count(epsilon)
    a, b = colliding_pair(g, K, everywhere=False)
    domain = sorted({a, b, "hello", "world", "Grüße", "日本"})
    attribute = spec(domain=domain, hashes=K)
    m = attribute.randomizer(epsilon)
    assert m.domain_keys is not None and m.g == g
    channel = flh_channel(m, m.domain_keys)
    assert channel.shape == (K * g, len(domain))
    assert channel_epsilon(channel) == pytest.approx(epsilon, rel=1e-9)
    assert_tight(channel, epsilon)
    # the colliding pair alone: some function separates them, so still exactly ε
    pair = [domain.index(a), domain.index(b)]
    assert channel_epsilon(channel[:, pair]) == pytest.approx(epsilon, rel=1e-9)
    table = bucket_table(m.domain_keys[pair], K, g)
    assert 0 < int(np.sum(table[0] == table[1])) < K


@pytest.mark.parametrize("epsilon", [0.1, 0.3])
def test_values_colliding_under_every_function_are_indistinguishable(epsilon: float) -> None:
    """Two values with equal buckets under all ``k`` functions give ratio 1 (the stated ε
    remains the bound over the other pairs)."""
    g = bucket_count(epsilon)
    assert g == 2
    a, b = colliding_pair(g, K, everywhere=True)
    m = spec(domain=[a, b, "hello"], hashes=K).randomizer(epsilon)
    assert m.domain_keys is not None
    channel = flh_channel(m, m.domain_keys)
    np.testing.assert_array_equal(channel[:, 0], channel[:, 1])
    assert channel_epsilon(channel[:, :2]) == 0.0
    assert channel_epsilon(channel) == pytest.approx(epsilon, rel=1e-9)
    assert m.exact_epsilon == pytest.approx(epsilon, rel=1e-12)


def test_overwhelming_epsilon_has_no_overflow_and_is_stated_infinite() -> None:
    """``e^-ε`` underflows at ε = ∞: ``q = 0`` exactly, so the mechanism really is
    deterministic and its exact ε is infinite. A finite ε that large (1e308) is refused
    by the one rule on ε, the mechanism and a collection alike."""
    m = LocalHashing(k=K, epsilon=math.inf)
    assert (m.g, m.p, m.q) == (MAX_BUCKETS, 1.0, 0.0)
    assert m.exact_epsilon == math.inf
    keys = hash_keys(["a", "b", "c"], SALT, "string", 64, "w")
    assert channel_epsilon(flh_channel(m, keys)) == math.inf
    reported = m.perturb(np.repeat(keys, 50), seeded_rng(1))
    np.testing.assert_array_equal(reported[:, 1], buckets(np.repeat(keys, 50), reported[:, 0], m.g))
    with pytest.raises(ConfigurationError, match=r"ε = 1e\+308 is too large"):
        LocalHashing(k=K, epsilon=1e308)
    payload = {"name": "w", "epsilon": 1e308, "attributes": [{"name": "word", "mechanism": "flh"}]}
    with pytest.raises(ConfigurationError, match="is too large"):
        build_config(CollectionSpec.model_validate(payload))


@pytest.mark.parametrize("epsilon", [50.0, 700.0])
def test_where_the_sampler_cannot_flip_the_epsilon_is_infinite_and_refused(
    epsilon: float,
) -> None:
    """``p`` rounds to 1 (``q`` still positive), and the keep draw ``u < p`` then always
    keeps: the realised mechanism never moves the bucket, so its ε is infinite, and a
    collection at that ε is refused rather than published as ``ε = 50``."""
    m = LocalHashing(k=K, epsilon=epsilon)
    assert m.p == 1.0 and m.q > 0.0 and m.exact_epsilon == math.inf
    payload = {
        "name": "w",
        "epsilon": epsilon,
        "attributes": [{"name": "word", "mechanism": "flh"}],
    }
    with pytest.raises(ConfigurationError, match="too large"):
        build_config(CollectionSpec.model_validate(payload))


def test_the_realised_keep_probability_is_what_the_epsilon_states() -> None:
    """At ε = 38 the keep probability ``p`` is within an ulp of 1 and the uniform double
    realises ``⌈p·2^53⌉/2^53``: its ε exceeds 38 by more than the slack, so it is refused;
    at ε = 30 the realised ε is at most the allotted one."""
    assert LocalHashing(k=K, epsilon=38.0).exact_epsilon > 38.0 * (1 + 1e-9)
    payload = {"name": "w", "epsilon": 38.0, "attributes": [{"name": "word", "mechanism": "flh"}]}
    with pytest.raises(ConfigurationError, match="more than"):
        build_config(CollectionSpec.model_validate(payload))
    thirty = LocalHashing(k=K, epsilon=30.0).exact_epsilon
    assert thirty <= 30.0 * (1 + 1e-9) and thirty == pytest.approx(30.0, rel=1e-6)


@pytest.mark.parametrize("epsilon", [0.0, -1.0, math.nan])
def test_bad_epsilon(epsilon: float) -> None:
    with pytest.raises(ConfigurationError):
        LocalHashing(k=K, epsilon=epsilon)
    with pytest.raises(ConfigurationError, match="needs an ε"):
        spec().randomizer(None)


# -- bucket count and limits ----------------------------------------------------------------


@pytest.mark.parametrize("m", [2, 3, 4, 8, 56, 100, 254, 255])
def test_bucket_count_rounds_e_to_the_epsilon_plus_one(m: int) -> None:
    """``g = round(e^ε + 1)`` changes from ``m`` to ``m + 1`` at ``e^ε = m − 1/2``."""
    edge = math.log(m - 0.5)
    assert bucket_count(edge * (1 - 1e-9)) == m
    assert bucket_count(edge * (1 + 1e-9)) == min(m + 1, MAX_BUCKETS)


def test_bucket_count_limits() -> None:
    assert bucket_count(1e-12) == 2  # never below 2
    assert bucket_count(math.log(1.5) / 2) == 2
    assert bucket_count(1.0) == 4 and bucket_count(2.0) == 8
    assert bucket_count(math.log(255.0)) == MAX_BUCKETS
    assert bucket_count(math.log(255.0) * (1 - 1e-12)) == MAX_BUCKETS
    assert bucket_count(math.log(253.5) * (1 - 1e-9)) == 254
    for huge in (6.0, 50.0, 700.0, 1e308, math.inf):
        assert bucket_count(huge) == MAX_BUCKETS
    grid = [bucket_count(e) for e in np.linspace(1e-6, 8.0, 4001)]
    assert grid == sorted(grid) and set(grid) == set(range(2, MAX_BUCKETS + 1))


def test_counter_cap() -> None:
    full = LocalHashing(k=MAX_HASHES, epsilon=math.log(15.0))  # g = 16: exactly 2^20
    assert full.g == 16 and full.k * full.g == MAX_SKETCH_CELLS
    assert full.stats_layout == (StatsBlock("counts", "int64", MAX_SKETCH_CELLS),)
    with pytest.raises(ConfigurationError, match="lower hashes to at most 61680"):
        LocalHashing(k=MAX_HASHES, epsilon=math.log(16.0))  # g = 17
    assert LocalHashing(k=4096, epsilon=6.0).g == 256
    with pytest.raises(ConfigurationError, match="4097 hash functions × 256 buckets"):
        LocalHashing(k=4097, epsilon=6.0)
    with pytest.raises(ConfigurationError, match="over the 1048576"):
        spec(hashes=4097).randomizer(6.0)
    for k in (0, MAX_HASHES + 1):
        with pytest.raises(ConfigurationError, match="1 to 65536 hash functions"):
            LocalHashing(k=k, epsilon=1.0)
    for k in (0, MAX_HASHES + 1):
        with pytest.raises(ValidationError):
            spec(hashes=k)


# -- the segment -----------------------------------------------------------------------------


def test_segment_and_published_parameters() -> None:
    m = LocalHashing(k=1000, epsilon=1.0)
    assert m.segment == Segment(encoding="hashed", byte_length=3)
    assert m.stats_layout == (StatsBlock("counts", "int64", 4000),)
    assert m.published() == {"p": m.p, "q": m.q, "hashes": 1000, "buckets": 4}
    assert m.delta == 0.0


def test_pack_is_j_big_endian_then_y() -> None:
    m = LocalHashing(k=MAX_HASHES, epsilon=1.0)
    answers = np.array([[0, 0], [1, 3], [255, 2], [256, 1], [0x1234, 3], [65535, 0]])
    packed = m.pack(answers)
    assert packed.dtype == np.uint8 and packed.shape == (6, 3)
    assert packed.tolist() == [
        [0, 0, 0],
        [0, 1, 3],
        [0, 255, 2],
        [1, 0, 1],
        [0x12, 0x34, 3],
        [255, 255, 0],
    ]
    unpacked = m.unpack(packed)
    np.testing.assert_array_equal(unpacked.values, answers)
    assert not unpacked.bad.any()


@pytest.mark.parametrize("epsilon", [0.5, 2.0, 6.0])
def test_perturbed_reports_round_trip(epsilon: float) -> None:
    m = LocalHashing(k=300, epsilon=epsilon)
    keys = hash_keys([f"v{i}" for i in range(2000)], SALT, "string", 64, "w")
    answers = m.perturb(keys, seeded_rng(3))
    assert answers.shape == (2000, 2) and answers.dtype == np.int64
    assert answers[:, 0].min() >= 0 and answers[:, 0].max() < 300
    assert answers[:, 1].min() >= 0 and answers[:, 1].max() < m.g
    unpacked = m.unpack(m.pack(answers))
    np.testing.assert_array_equal(unpacked.values, answers)
    assert not unpacked.bad.any()
    counts = m.accumulate(answers)["counts"]
    assert counts.shape == (300 * m.g,) and counts.sum() == 2000
    assert counts[answers[0, 0] * m.g + answers[0, 1]] >= 1


def test_bad_rows() -> None:
    m = LocalHashing(k=1000, epsilon=1.0)  # g = 4
    segment = np.array(
        [
            [0x03, 0xE7, 3],  # j = 999, y = 3: fine
            [0x03, 0xE8, 0],  # j = 1000
            [0x00, 0x00, 4],  # y = 4
            [0xFF, 0xFF, 255],  # both
            [0x00, 0x05, 2],  # fine
        ],
        dtype=np.uint8,
    )
    unpacked = m.unpack(segment)
    assert unpacked.bad.tolist() == [False, True, True, True, False]
    assert unpacked.problem == "hash index ≥ 1000 or bucket ≥ 4"
    assert unpacked.values[0].tolist() == [999, 3] and unpacked.values[3].tolist() == [65535, 255]


@pytest.mark.parametrize("keys", [np.array([1, 2], dtype=np.int64), np.zeros((2, 2), np.uint64)])
def test_perturb_wants_a_column_of_keys(keys: NDArray[Any]) -> None:
    with pytest.raises(InvalidRecordError, match="1-d array of uint64 keys"):
        LocalHashing(k=K, epsilon=1.0).perturb(keys, seeded_rng(0))


# -- the spec ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"domain": ["e\u0301", "b"]}, "is not in Unicode NFC"),
        ({"domain": ["\u212b", "b"]}, "is not in Unicode NFC"),
        ({"domain": ["a", "b", "a"]}, "its domain repeats a value"),
        ({"domain": ["a", "bcdef"], "max_length": 4}, "longer than max_length \\(4 bytes\\)"),
        ({"domain": ["a", "éé"], "max_length": 3}, "longer than max_length"),
        ({"domain": ["1", "2"], "value_type": "integer"}, "a declared domain lists strings"),
        ({"domain": ["only"]}, "a declared domain has 2 to 65536 values, got 1"),
        ({"domain": "closed"}, "domain"),
        ({"salt": "00" * 15}, "salt"),
        ({"salt": "AB" * 16}, "salt"),
        ({"value_type": "float"}, "value_type"),
        ({"max_length": 0}, "max_length"),
        ({"max_length": 1025}, "max_length"),
    ],
)
def test_spec_refuses(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        spec(**changes)


def test_declared_domain() -> None:
    attribute = spec(domain=["é", "b", "日本"], max_length=6)
    assert attribute.values == ["é", "b", "日本"] and not attribute.is_open
    expected = hash_keys(["é", "b", "日本"], SALT, "string", 6, "w")
    np.testing.assert_array_equal(attribute.encode(["b", "e\u0301", "日本"]), expected[[1, 0, 2]])
    with pytest.raises(InvalidRecordError, match="not in its domain"):
        attribute.encode(["c"])
    m = attribute.randomizer(1.0)
    assert m.domain_keys is not None
    np.testing.assert_array_equal(m.domain_keys, expected)
    stats = m.accumulate(m.perturb(expected[[0, 0, 1, 2]], seeded_rng(0)))
    assert m.estimate_stats(stats, 4, 0.95).estimate.shape == (3,)


def test_open_domain() -> None:
    attribute = spec()
    assert attribute.is_open and attribute.values == []
    assert attribute.model_dump()["domain"] == "open"
    np.testing.assert_array_equal(
        attribute.encode(["x", "y"]), hash_keys(["x", "y"], SALT, "string", 64, "w")
    )
    m = attribute.randomizer(1.0)
    assert m.domain_keys is None
    stats = m.accumulate(m.perturb(attribute.encode(["x"] * 10), seeded_rng(0)))
    with pytest.raises(InvalidQueryError, match="name the values"):
        m.estimate_stats(stats, 10, 0.95)
    assert m.estimate_values(stats, 10, attribute.encode(["x", "y"]), 0.95).estimate.shape == (2,)


def test_integer_candidates() -> None:
    attribute = spec(value_type="integer")
    assert attribute.parse_candidate("42") == 42
    assert attribute.parse_candidate("007") == 7
    assert attribute.parse_candidate("18446744073709551615") == 2**64 - 1
    for bad in ("-1", "+1", "1.0", "", " 1", "١٢", "²", "seven"):
        with pytest.raises(InvalidRecordError, match="is not a decimal integer"):
            attribute.parse_candidate(bad)
    with pytest.raises(InvalidRecordError, match="outside"):
        attribute.encode([attribute.parse_candidate("18446744073709551616")])
    assert spec().parse_candidate("-1") == "-1"  # a string attribute takes the text


def test_salt_is_drawn_when_absent_and_kept() -> None:
    drawn = [
        LocalHashingSpec.model_validate({"name": "word", "mechanism": "flh"}) for _ in range(3)
    ]
    salts = [d.salt for d in drawn]
    assert len(set(salts)) == 3 and all(re.fullmatch(SALT_PATTERN, s) for s in salts)
    for attribute in drawn:
        dumped = attribute.model_dump(mode="json")
        again = AttributeSpec.model_validate(dumped)
        assert isinstance(again, LocalHashingSpec)
        assert again.salt == attribute.salt and again == attribute
        np.testing.assert_array_equal(again.encode(["x"]), attribute.encode(["x"]))
    # through a collection spec and its public config
    payload = {"name": "w", "epsilon": 1.0, "attributes": [{"name": "word", "mechanism": "flh"}]}
    config = build_config(CollectionSpec.model_validate(payload))
    salt = config.spec.attributes[0].model_dump()["salt"]
    rebuilt = build_config(CollectionSpec.model_validate(config.spec.model_dump(mode="json")))
    assert rebuilt.spec.attributes[0].model_dump()["salt"] == salt
    assert rebuilt.config_hash == config.config_hash
    other = build_config(CollectionSpec.model_validate(payload))
    assert other.config_hash != config.config_hash  # a fresh salt, a fresh config


# -- the second moment -----------------------------------------------------------------------


def _population(kind: str, n: int) -> NDArray[np.int64]:
    if kind == "one":
        return np.zeros(n, dtype=np.int64)
    if kind == "ten":
        return np.arange(n, dtype=np.int64) % 10
    if kind == "many":
        return np.arange(n, dtype=np.int64) % 2000
    weights = 1.0 / np.arange(1, 2001)
    return np.repeat(np.arange(2000), np.round(weights / weights.sum() * n).astype(np.int64))


@pytest.mark.parametrize("epsilon", [2.0, 5.0])
@pytest.mark.parametrize(
    ("kind", "tolerance"), [("one", 0.02), ("ten", 0.012), ("zipf", 0.008), ("many", 0.004)]
)
def test_second_moment_recovers_f2(epsilon: float, kind: str, tolerance: float) -> None:
    """About 5 standard deviations of the estimator (n = 100,000, k = 1024), far below the
    gaps between the four populations' ``F₂`` (1, 0.1, 0.025, 0.0005)."""
    index = _population(kind, 100_000)
    f = np.bincount(index) / index.size
    f2 = float(np.sum(f**2))
    m = LocalHashing(k=1024, epsilon=epsilon)
    keys = hash_keys([f"v{i}" for i in range(2000)], "5a" * 16, "string", 64, "w")
    counts = m.accumulate(m.perturb(keys[index], seeded_rng(17)))["counts"]
    estimate = m.second_moment(counts, index.size)
    assert 0.0 <= estimate <= 1.0
    assert abs(estimate - f2) < tolerance, (kind, f2, estimate)


def test_second_moment_without_pairs_is_the_bound() -> None:
    m = LocalHashing(k=64, epsilon=1.0)
    assert m.second_moment(np.zeros(64 * m.g, dtype=np.int64), 0) == 1.0
    one = np.zeros(64 * m.g, dtype=np.int64)
    one[5] = 1
    assert m.second_moment(one, 1) == 1.0
