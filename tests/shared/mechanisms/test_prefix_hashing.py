"""PEM (``pem``): exact ε from its full channel, level keys, segment, cell cap, default
``hashes``, the pooled estimator against its exact expectation, refused inputs.

The channel, the keys and the buckets are written here again from the specification
(``docs/wire-format.md``, "Hashed values" and "``pem``"), with :func:`hashlib.blake2b`
and Python integers, not with the module's helpers.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import unicodedata
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from pydantic import ValidationError

from ldp_shared.collection import build_config
from ldp_shared.errors import (
    ConfigurationError,
    InsufficientReportsError,
    InvalidQueryError,
    InvalidRecordError,
)
from ldp_shared.kernel import channel_epsilon
from ldp_shared.mechanisms import PrefixHashing, PrefixHashingSpec
from ldp_shared.mechanisms import prefix_hashing as pem
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import CollectionSpec

from ._channel import assert_tight

MASK64 = (1 << 64) - 1
SALT = "5a17c0ffee5a17c0ffee5a17c0ffee00"
SALT_BYTES = bytes.fromhex(SALT)


# -- the reference, from the specification only ------------------------------------------


def ref_key(tagged: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(tagged, digest_size=8, key=SALT_BYTES).digest(), "big")


def ref_bucket(key: int, j: int, g: int) -> int:
    z = (key + (j + 1) * 0x9E3779B97F4A7C15) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    z = z ^ (z >> 31)
    return ((z >> 32) * g) >> 32


def ref_utf8(value: str) -> bytes:
    return unicodedata.normalize("NFC", value).encode("utf-8")


def ref_level_key(data: bytes, level: int) -> int:
    """Level ``level`` (1-based): the prefix key of the first ``level`` bytes when the
    string is longer, else the key of the whole string (the ``flh`` key)."""
    if len(data) > level:
        return ref_key(b"p" + data[:level])
    return ref_key(b"s" + data)


def ref_g(epsilon: float) -> int:
    if epsilon >= math.log(255):
        return 256
    return max(2, round(math.exp(epsilon) + 1))


def ref_pq(epsilon: float) -> tuple[float, float]:
    e, g = math.exp(epsilon), ref_g(epsilon)
    return e / (e + g - 1), 1.0 / (e + g - 1)


def ref_channel(strings: list[str], levels: int, k: int, epsilon: float) -> NDArray[np.float64]:
    """``M[((ℓ−1)·k + j)·g + y, s] = (1/L)(1/k)·(p if y = h_j(key_ℓ(s)) else q)``."""
    g = ref_g(epsilon)
    p, q = ref_pq(epsilon)
    out = np.empty((levels * k * g, len(strings)))
    for col, value in enumerate(strings):
        data = ref_utf8(value)
        for level in range(1, levels + 1):
            key = ref_level_key(data, level)
            for j in range(k):
                true = ref_bucket(key, j, g)
                for y in range(g):
                    row = ((level - 1) * k + j) * g + y
                    out[row, col] = (p if y == true else q) / (levels * k)
    return out


def spec(**fields: Any) -> PrefixHashingSpec:
    attribute = PrefixHashingSpec.model_validate(
        {"name": "w", "mechanism": "pem", "salt": SALT, **fields}
    )
    assert isinstance(attribute, PrefixHashingSpec)
    return attribute


# -- privacy -------------------------------------------------------------------------------

TINY = [
    # levels, strings of 1..levels bytes, two of them sharing a prefix
    pytest.param(2, ["a", "b", "ab", "ac", "é", "zz"], id="L2"),
    pytest.param(3, ["a", "ab", "abc", "abd", "xyz", "é", "€", "aé"], id="L3"),
]


@pytest.mark.parametrize("epsilon", [0.1, 0.5, 1.0])
@pytest.mark.parametrize(("levels", "strings"), TINY)
def test_exact_epsilon_of_the_full_channel(levels: int, strings: list[str], epsilon: float) -> None:
    k = 4
    g = ref_g(epsilon)
    full = ref_channel(strings, levels, k, epsilon)
    assert full.shape == (levels * k * g, len(strings))
    assert_tight(full, epsilon)  # columns sum to 1; ε-LDP and not (ε − 1e-6)-LDP
    assert channel_epsilon(full) == pytest.approx(epsilon, rel=1e-9)
    randomizer = spec(max_length=levels, hashes=k).randomizer(epsilon)
    assert (randomizer.levels, randomizer.k, randomizer.level_oracle.g) == (levels, k, g)
    assert randomizer.exact_epsilon == pytest.approx(epsilon, rel=1e-12)
    p, q = ref_pq(epsilon)
    published = randomizer.published()
    assert published["p"] == pytest.approx(p, rel=1e-14)
    assert published["q"] == pytest.approx(q, rel=1e-14)
    assert (published["hashes"], published["buckets"], published["levels"]) == (k, g, levels)


@pytest.mark.parametrize("epsilon", [0.1, 0.5, 1.0])
@pytest.mark.parametrize(("levels", "strings"), TINY)
def test_every_pair_is_at_the_boundary_unless_it_never_separates(
    levels: int, strings: list[str], epsilon: float
) -> None:
    """A pair of strings is at exactly ε when some (ℓ, j) puts their level keys in
    different buckets, and at 0 when none does (then no output tells them apart)."""
    k, g = 4, ref_g(epsilon)
    full = ref_channel(strings, levels, k, epsilon)
    at_boundary = 0
    for a, b in itertools.combinations(range(len(strings)), 2):
        data_a, data_b = ref_utf8(strings[a]), ref_utf8(strings[b])
        separated = any(
            ref_bucket(ref_level_key(data_a, level), j, g)
            != ref_bucket(ref_level_key(data_b, level), j, g)
            for level in range(1, levels + 1)
            for j in range(k)
        )
        pair = channel_epsilon(full[:, [a, b]])
        if separated:
            assert pair == pytest.approx(epsilon, rel=1e-9), (strings[a], strings[b])
            at_boundary += 1
        else:
            assert pair == pytest.approx(0.0, abs=1e-12), (strings[a], strings[b])
    pairs = len(strings) * (len(strings) - 1) // 2
    assert at_boundary >= pairs - 1  # with this salt, (almost) every pair is separated


def test_a_shared_prefix_gives_the_same_outputs_at_its_level() -> None:
    """The strings "abc" and "abd" report the same prefix keys at levels 1 and 2: there the two
    columns are equal, and only level 3 separates them."""
    k, epsilon = 4, 0.5
    g = ref_g(epsilon)
    full = ref_channel(["abc", "abd"], 3, k, epsilon)
    per_level = k * g
    assert np.array_equal(full[: 2 * per_level, 0], full[: 2 * per_level, 1])
    assert not np.array_equal(full[2 * per_level :, 0], full[2 * per_level :, 1])


def test_the_collection_accounts_the_allotted_epsilon() -> None:
    document = {
        "name": "hh",
        "epsilon": 3.0,
        "attributes": [
            {"name": "w", "mechanism": "pem", "max_length": 8, "salt": SALT},
            {"name": "c", "mechanism": "grr", "domain": ["x", "y"]},
        ],
    }
    config = build_config(CollectionSpec.model_validate(document))
    attribute = config.attributes[0]
    randomizer = config.randomizer(attribute)
    assert isinstance(randomizer, PrefixHashing)
    assert attribute.encoding == "prefix-hashed" and attribute.byte_length == 4
    assert randomizer.epsilon == pytest.approx(1.5, rel=1e-12)  # split between two
    assert randomizer.exact_epsilon == pytest.approx(1.5, rel=1e-12)
    assert config.privacy.attribute("w").epsilon == pytest.approx(1.5, rel=1e-12)
    assert config.epsilon == pytest.approx(3.0, rel=1e-12)
    assert config.stats_length == 8 * randomizer.k * randomizer.level_oracle.g + 2


# -- level keys and encoding ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "levels"),
    [
        (b"a", 1),
        (b"a", 4),  # shorter: the complete key at every level
        (b"ab", 4),
        (b"abcd", 4),  # equal: prefix keys below, the complete key at the last level
        (b"abcdef", 4),  # longer (only through level_keys itself): prefix keys throughout
        ("日本".encode(), 6),
        ("日本".encode(), 8),
    ],
)
def test_level_keys(value: bytes, levels: int) -> None:
    keys = pem.level_keys(value, levels, SALT_BYTES)
    assert keys.dtype == np.uint64 and keys.shape == (levels,)
    expected = [ref_level_key(value, level) for level in range(1, levels + 1)]
    assert [int(x) for x in keys] == expected
    for level in range(1, levels + 1):
        is_prefix = len(value) > level
        tagged = (b"p" + value[:level]) if is_prefix else (b"s" + value)
        assert int(keys[level - 1]) == ref_key(tagged), level


def test_prefix_and_complete_keys_differ() -> None:
    """The prefix "ab" of "abc" is not the string "ab", and the complete key is flh's."""
    abc = pem.level_keys(b"abc", 3, SALT_BYTES)
    ab = pem.level_keys(b"ab", 3, SALT_BYTES)
    assert abc[1] != ab[1]  # prefix key vs complete key of the same bytes
    assert abc[0] == ab[0]  # both hold the prefix "a" at level 1
    assert int(ab[1]) == ref_key(b"sab")
    assert pem.prefix_key_bytes(b"ab") == b"pab" and pem.complete_key_bytes(b"ab") == b"sab"
    from ldp_shared.mechanisms import LocalHashingSpec

    flh = LocalHashingSpec.model_validate({"name": "w", "mechanism": "flh", "salt": SALT})
    assert int(flh.encode(["ab"])[0]) == int(ab[-1])


def test_encode_dedupes_and_equals_per_value_level_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[bytes] = []
    original = pem.level_keys

    def counted(value: bytes, levels: int, salt: bytes) -> NDArray[np.uint64]:
        calls.append(value)
        return original(value, levels, salt)

    monkeypatch.setattr(pem, "level_keys", counted)
    column: list[str | bytes] = [
        "abc",
        "a",
        "abc",
        "naïve",
        "nai\u0308ve",
        "abc",
        "日本",
        "a",
        b"bytes",
    ]
    encoded = spec(max_length=6).encode(column)
    assert encoded.dtype == np.uint64 and encoded.shape == (len(column), 6)
    # one hashing per distinct value after NFC (the NFD spelling of naïve is the same)
    assert sorted(calls) == sorted({ref_utf8(v) if isinstance(v, str) else v for v in column})
    for row, value in zip(encoded, column, strict=True):
        data = ref_utf8(value) if isinstance(value, str) else value
        assert [int(x) for x in row] == [ref_level_key(data, lv) for lv in range(1, 7)], value
    assert np.array_equal(encoded[3], encoded[4])
    assert spec(max_length=6).value_bytes(["nai\u0308ve"]) == ["naïve".encode()]


def test_estimate_values_reads_the_length_from_the_keys() -> None:
    """A string of m bytes is estimated by flh from the levels ≥ m pooled: its length
    is the first level whose key is its complete key."""
    s = spec(max_length=3, hashes=8)
    randomizer = s.randomizer(1.0)
    reports = 30_000
    values = ["a"] * 6_000 + ["ab"] * 9_000 + ["abc"] * 15_000
    answers = randomizer.perturb(s.encode(values), seeded_rng(1))
    stats = randomizer.accumulate(answers)
    named = s.encode(["a", "ab", "abc"])
    got = randomizer.estimate_values(stats, reports, named, 0.9)
    pooled = randomizer.pooled_tables(stats)
    for i, length in enumerate([1, 2, 3]):
        table = pooled[length - 1]
        pooled_n = int(table.sum())
        alone = randomizer.level_oracle.estimate_keys(
            {"counts": table}, pooled_n, named[i : i + 1, -1], 0.9
        )
        f = min(max(float(alone.estimate[0]), 0.0), 1.0)
        share = f * (1 - f) / pooled_n * (reports - pooled_n) / (reports - 1)
        assert got.estimate[i] == alone.estimate[0]
        assert got.stderr[i] == pytest.approx(np.sqrt(alone.stderr[0] ** 2 + share), rel=1e-12)
    assert got.n == reports
    assert np.all(np.abs(got.estimate - [0.2, 0.3, 0.5]) < 4.5 * got.stderr)


# -- the segment and the statistics --------------------------------------------------------


def test_pack_unpack_round_trip_and_bytes() -> None:
    randomizer = PrefixHashing(levels=3, k=65_536, epsilon=0.5)  # g = 3; j needs 2 bytes
    s = spec(max_length=3, hashes=65_536)
    answers = randomizer.perturb(s.encode(["a", "ab", "abc", "xyz"] * 500), seeded_rng(2))
    assert answers.shape == (2000, 3) and answers.dtype == np.int64
    assert set(answers[:, 0].tolist()) == {0, 1, 2}
    assert answers[:, 1].max() > 255 and answers[:, 2].max() < 3
    packed = randomizer.pack(answers)
    assert packed.shape == (2000, 4) and packed.dtype == np.uint8
    back = randomizer.unpack(packed)
    assert np.array_equal(back.values, answers) and not back.bad.any()
    literal = randomizer.pack(np.array([[2, 0x1234, 1], [0, 65_535, 2]]))
    assert literal.tolist() == [[2, 0x12, 0x34, 1], [0, 0xFF, 0xFF, 2]]


def test_rows_outside_the_layout_are_bad() -> None:
    randomizer = PrefixHashing(levels=3, k=300, epsilon=0.5)  # g = 3
    segment = np.array(
        [
            [2, 1, 43, 2],  # level 3, j = 299, y = 2: the last valid cell
            [3, 0, 0, 0],  # level 4 of 3
            [255, 0, 0, 0],
            [0, 1, 44, 0],  # j = 300
            [0, 0xFF, 0xFF, 0],
            [0, 0, 0, 3],  # y = 3 of 3 buckets
            [0, 0, 0, 255],
        ],
        dtype=np.uint8,
    )
    unpacked = randomizer.unpack(segment)
    assert unpacked.bad.tolist() == [False, True, True, True, True, True, True]
    assert "level ≥ 3" in unpacked.problem
    assert "hash index ≥ 300 or bucket ≥ 3" in unpacked.problem


def test_accumulate_level_and_pooled_tables() -> None:
    randomizer = PrefixHashing(levels=3, k=2, epsilon=0.1)  # g = 2: 4 cells a level
    answers = np.array([[0, 0, 0], [0, 1, 1], [1, 1, 0], [2, 0, 1], [2, 0, 1], [2, 1, 1]])
    counts = randomizer.accumulate(answers)["counts"]
    assert counts.dtype == np.int64
    assert counts.tolist() == [1, 0, 0, 1, 0, 0, 1, 0, 0, 2, 0, 1]  # ((ℓ−1)k + j)g + y
    assert randomizer.stats_layout[0].name == "counts"
    assert randomizer.stats_layout[0].length == 12
    tables = randomizer.level_tables({"counts": counts})
    assert tables.tolist() == [[1, 0, 0, 1], [0, 0, 1, 0], [0, 2, 0, 1]]
    pooled = randomizer.pooled_tables({"counts": counts})
    assert pooled.tolist() == [[1, 2, 1, 2], [0, 2, 1, 1], [0, 2, 0, 1]]
    empty = randomizer.accumulate(np.zeros((0, 3), dtype=np.int64))["counts"]
    assert empty.tolist() == [0] * 12


def test_estimator_equals_its_exact_expectation_for_this_salt() -> None:
    """Expected statistics (rounded at n = 10^12) give, for each named string ``v`` of
    ``m`` bytes, ``f_v + g/(g−1)·Σ_{u≠v} f_u (c(u, v) − 1/g)``, where ``c`` is the share
    of the pairs (ℓ ≥ m, j) under which the level keys of ``u`` and ``v`` share a bucket
    (the collision bias of the fixed family, computed here by enumeration)."""
    levels, k, epsilon = 3, 16, 1.0
    g = ref_g(epsilon)
    p, q = ref_pq(epsilon)
    held = {"a": 0.1, "b": 0.05, "ab": 0.2, "abc": 0.3, "abd": 0.15, "xyz": 0.2}
    named = ["a", "b", "ab", "abc", "abd", "xyz", "ac", "x", "zzz"]  # the last 3 unheld
    n = 10**12
    expected = np.zeros((levels, k, g))
    for value, f in held.items():
        data = ref_utf8(value)
        for level in range(1, levels + 1):
            key = ref_level_key(data, level)
            for j in range(k):
                expected[level - 1, j, :] += f * n / (levels * k) * q
                expected[level - 1, j, ref_bucket(key, j, g)] += f * n / (levels * k) * (p - q)
    stats = {"counts": np.rint(expected.reshape(-1)).astype(np.int64)}
    s = spec(max_length=levels, hashes=k)
    randomizer = s.randomizer(epsilon)
    got = randomizer.estimate_values(stats, n, s.encode(named), 0.95)
    for i, value in enumerate(named):
        v = ref_utf8(value)
        m = len(v)
        truth = held.get(value, 0.0)
        bias = 0.0
        for other, f in held.items():
            if other == value:
                continue
            u = ref_utf8(other)
            pairs = [(level, j) for level in range(m, levels + 1) for j in range(k)]
            c = sum(
                ref_bucket(ref_level_key(u, level), j, g)
                == ref_bucket(ref_level_key(v, level), j, g)
                for level, j in pairs
            ) / len(pairs)
            bias += f * (c - 1.0 / g)
        assert got.estimate[i] == pytest.approx(truth + g / (g - 1) * bias, abs=1e-9), value


def test_no_report_in_the_pooled_levels_is_insufficient() -> None:
    s = spec(max_length=3, hashes=4)
    randomizer = s.randomizer(1.0)
    only_level_1 = np.array([[0, 1, 1], [0, 2, 0], [0, 3, 1]])
    stats = randomizer.accumulate(only_level_1)
    assert randomizer.estimate_values(stats, 3, s.encode(["a"]), 0.95).estimate.shape == (1,)
    with pytest.raises(InsufficientReportsError, match="strings of 2 bytes"):
        randomizer.estimate_values(stats, 3, s.encode(["ab"]), 0.95)


def test_noise_sd() -> None:
    randomizer = PrefixHashing(levels=2, k=8, epsilon=1.0)
    assert randomizer.noise_sd(np.zeros(randomizer.cells, dtype=np.int64)) == math.inf
    s = spec(max_length=2, hashes=8)
    answers = randomizer.perturb(s.encode([f"{i % 97:02d}" for i in range(4000)]), seeded_rng(3))
    table = randomizer.level_tables(randomizer.accumulate(answers))[1]
    oracle = randomizer.level_oracle
    n = int(table.sum())
    sampling = (1 / oracle.g) * (1 - 1 / oracle.g) / (n * (oracle.p - 1 / oracle.g) ** 2)
    collisions = oracle.second_moment(table, n) / ((oracle.g - 1) * oracle.k)
    assert randomizer.noise_sd(table) == pytest.approx(math.sqrt(sampling + collisions))


# -- limits --------------------------------------------------------------------------------


def test_the_cell_cap_is_refused_with_a_hint() -> None:
    at_cap = PrefixHashing(levels=4, k=1024, epsilon=6.0)  # g = 256: 4·1024·256 = 2^20
    assert at_cap.levels * at_cap.cells == 2**20
    with pytest.raises(ConfigurationError, match="lower hashes to at most 512") as error:
        PrefixHashing(levels=8, k=1024, epsilon=6.0)
    assert "2097152 counters" in str(error.value) and "1048576" in str(error.value)
    with pytest.raises(ConfigurationError, match="counters"):
        spec(max_length=32, hashes=65_536).randomizer(4.0)


@pytest.mark.parametrize("levels", [0, 33, -1])
def test_levels_outside_1_to_32_are_refused(levels: int) -> None:
    with pytest.raises(ConfigurationError, match="1 to 32 levels"):
        PrefixHashing(levels=levels, k=4, epsilon=1.0)


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        ({"max_length": 0}, "greater than or equal to 1"),
        ({"max_length": 33}, "less than or equal to 32"),
        ({"hashes": 0}, "greater than or equal to 1"),
        ({"hashes": 65_537}, "less than or equal to 65536"),
        ({"salt": "xyz"}, "pattern"),
    ],
)
def test_bad_specs_are_refused(fields: dict[str, Any], match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        spec(**fields)


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0, 4.0, 8.0, 50.0])
@pytest.mark.parametrize("levels", [1, 2, 8, 16, 32])
def test_default_hashes_stay_within_the_budget(epsilon: float, levels: int) -> None:
    g = ref_g(epsilon)
    k = pem.default_hashes(levels, epsilon)
    assert 1 <= k <= 1024 and k & (k - 1) == 0  # a power of two
    assert levels * k * g <= 2**19
    assert k == 1024 or levels * (2 * k) * g > 2**19  # the largest such
    randomizer = spec(max_length=levels).randomizer(epsilon)
    assert randomizer.k == k and randomizer.levels * randomizer.cells <= 2**19
    assert spec(max_length=levels, hashes=3).randomizer(epsilon).k == 3


def test_no_epsilon_or_classes_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="PEM needs an ε"):
        spec().randomizer(None)
    with pytest.raises(ConfigurationError, match="not reported by class"):
        spec().randomizer(1.0, classes=2)
    assert spec().is_open


def test_estimate_stats_asks_for_values_or_heavy_hitters() -> None:
    randomizer = PrefixHashing(levels=2, k=4, epsilon=1.0)
    with pytest.raises(InvalidQueryError, match="heavy hitters"):
        randomizer.estimate_stats({"counts": np.zeros(2 * randomizer.cells)}, 10, 0.95)


@pytest.mark.parametrize(
    "keys",
    [
        np.zeros((3, 2), dtype=np.uint64),  # 2 levels, not 3
        np.zeros(3, dtype=np.uint64),
        np.zeros((3, 3), dtype=np.int64),
    ],
)
def test_perturb_refuses_keys_of_another_shape(keys: NDArray[Any]) -> None:
    with pytest.raises(InvalidRecordError, match="n × 3 array of uint64"):
        PrefixHashing(levels=3, k=4, epsilon=1.0).perturb(keys, seeded_rng(4))


# -- refused values ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ("abcdef", "is 6 bytes of UTF-8, over the maximum of 5"),
        ("日本", "is 6 bytes of UTF-8, over the maximum of 5"),  # 2 characters, 6 bytes
        ("e\u0301" * 2 + "xx", "is 6 bytes"),  # NFD of 8 bytes is NFC of 6: still too long
        ("", "the empty string is not a value"),
        (b"\xff\xfe", "is not valid UTF-8"),
        (b"ab\xc3", "is not valid UTF-8"),
        ("a\ud800", "lone surrogate"),
        (5, "expected a string, got int"),
        (None, "expected a string, got NoneType"),
        (1.5, "expected a string, got float"),
        (["a"], "expected a string, got list"),
    ],
)
def test_bad_values_name_the_attribute(value: Any, match: str) -> None:
    with pytest.raises(InvalidRecordError, match=match) as error:
        spec(max_length=5).encode(["ok", value])
    assert error.value.detail.startswith("attribute 'w': ")
    assert "\n" not in error.value.detail


def test_values_at_the_limit_are_accepted() -> None:
    s = spec(max_length=6)
    assert s.encode(["日本", "x" * 6, "é" * 3, "e\u0301" * 3, b"bytes!"]).shape == (5, 6)
