"""Heavy hitters of a ``pem`` attribute (:mod:`ldp_shared.analyses.heavy_hitters`): the
detection threshold, the keep limit, and discovery on seeded simulations."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import pytest

from ldp_shared.analyses.heavy_hitters import (
    HeavyHitters,
    find_heavy_hitters,
    keep_limit,
)
from ldp_shared.mechanisms import PrefixHashing, PrefixHashingSpec
from ldp_shared.mechanisms.base import Blocks
from ldp_shared.rand import seeded_rng

N01 = NormalDist()


def spec(max_length: int, salt: str, **fields: object) -> PrefixHashingSpec:
    attribute = PrefixHashingSpec.model_validate(
        {"name": "w", "mechanism": "pem", "max_length": max_length, "salt": salt, **fields}
    )
    assert isinstance(attribute, PrefixHashingSpec)
    return attribute


# -- a large simulation: n = 200,000 at ε = 4 ----------------------------------------------

PLANTED = {"hello": 0.2, "naïve": 0.1, "日本": 0.05, "password": 0.02, "help": 0.02}
N = 200_000
EPSILON = 4.0
SALT = "00112233445566778899aabbccddeeff"


@dataclass(frozen=True)
class Simulation:
    spec: PrefixHashingSpec
    randomizer: PrefixHashing
    stats: Blocks
    held: dict[str, int]
    found: HeavyHitters


@pytest.fixture(scope="module")
def sim() -> Simulation:
    """Planted strings (half of the "naïve" devices spell it in NFD) and a long tail of
    random lower-case strings of 2 to 8 letters: their first letters are frequent
    prefixes, no single letter is held by anyone."""
    gen = np.random.default_rng(20_261_126)
    values: list[str] = []
    for value, f in PLANTED.items():
        values += [value] * round(f * N)
    nfd = unicodedata.normalize("NFD", "naïve")
    values[round(0.2 * N) : round(0.25 * N)] = [nfd] * round(0.05 * N)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    lengths = gen.integers(2, 9, size=N - len(values))
    values += ["".join(gen.choice(letters, size=m)) for m in lengths]
    held: dict[str, int] = {}
    for value in values:
        key = unicodedata.normalize("NFC", value)
        held[key] = held.get(key, 0) + 1
    s = spec(8, SALT)
    randomizer = s.randomizer(EPSILON)
    stats = randomizer.accumulate(randomizer.perturb(s.encode(values), seeded_rng(7)))
    found = find_heavy_hitters(randomizer, s.salt, stats, 20, 0.95)
    return Simulation(s, randomizer, stats, held, found)


def test_every_planted_string_above_the_threshold_is_found(sim: Simulation) -> None:
    found = sim.found
    assert 0.0 < found.threshold < min(PLANTED.values())
    for value, f in PLANTED.items():
        assert f > found.threshold and value in found.values, (value, found.values)
    assert found.levels_searched == 8 and found.candidates > 256


def test_nothing_nobody_holds_is_found(sim: Simulation) -> None:
    assert set(sim.found.values) <= set(sim.held), set(sim.found.values) - set(sim.held)
    for letter in "abcdefghijklmnopqrstuvwxyz":  # frequent prefixes, strings nobody holds
        assert letter not in sim.found.values
    assert "hel" not in sim.found.values and "passwor" not in sim.found.values


def test_the_ranking_and_the_estimates(sim: Simulation) -> None:
    found = sim.found
    estimate = found.estimate
    assert len(found.values) <= 20 and len(found.values) == estimate.estimate.size
    assert list(estimate.estimate) == sorted(estimate.estimate, reverse=True)
    assert found.values[:3] == ["hello", "naïve", "日本"]
    for value, f in PLANTED.items():
        i = found.values.index(value)
        truth = sim.held[value] / N
        assert truth == pytest.approx(f)
        assert abs(estimate.estimate[i] - truth) < 4.5 * estimate.stderr[i], value
        assert estimate.ci_low[i] < estimate.estimate[i] < estimate.ci_high[i]
    assert estimate.n == N and estimate.confidence == 0.95


def test_the_estimates_are_those_of_estimate_values(sim: Simulation) -> None:
    found = sim.found
    named = sim.spec.encode(found.values)
    direct = sim.randomizer.estimate_values(sim.stats, N, named, 0.95)
    np.testing.assert_allclose(found.estimate.estimate, direct.estimate, rtol=1e-12, atol=0)
    np.testing.assert_allclose(found.estimate.stderr, direct.stderr, rtol=1e-12, atol=0)
    np.testing.assert_allclose(found.estimate.ci_low, direct.ci_low, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(found.estimate.ci_high, direct.ci_high, rtol=1e-12, atol=1e-15)


def test_multibyte_strings_are_found_and_decoded_in_nfc(sim: Simulation) -> None:
    assert "naïve" in sim.found.values and "日本" in sim.found.values
    assert unicodedata.normalize("NFD", "naïve") not in sim.found.values
    assert all(unicodedata.is_normalized("NFC", v) for v in sim.found.values)
    i = sim.found.values.index("naïve")
    # the NFC and NFD spellings were counted together
    assert abs(sim.found.estimate.estimate[i] - 0.1) < 4.5 * sim.found.estimate.stderr[i]


def test_a_smaller_top_returns_the_head(sim: Simulation) -> None:
    head = find_heavy_hitters(sim.randomizer, sim.spec.salt, sim.stats, 2, 0.9)
    assert head.values == ["hello", "naïve"]
    assert head.estimate.confidence == 0.9
    direct = sim.randomizer.estimate_values(sim.stats, N, sim.spec.encode(head.values), 0.9)
    np.testing.assert_allclose(head.estimate.ci_high, direct.ci_high, rtol=1e-12)


# -- small, nearly noiseless searches (ε = 50: g = 256, p ≈ 1) ---------------------------


def _search(
    values: list[str], max_length: int, top: int, seed: int = 1, epsilon: float = 50.0
) -> HeavyHitters:
    s = spec(max_length, "ab" * 16)
    randomizer = s.randomizer(epsilon)
    stats = randomizer.accumulate(randomizer.perturb(s.encode(values), seeded_rng(seed)))
    return find_heavy_hitters(randomizer, s.salt, stats, top, 0.95)


def test_a_string_and_its_own_prefix_are_both_found() -> None:
    values = ["ab"] * 3000 + ["abc"] * 3000 + ["abcd"] * 2000 + ["x"] * 2000
    found = _search(values, 4, 10)
    assert sorted(found.values) == ["ab", "abc", "abcd", "x"]
    assert found.values[:2] in (["ab", "abc"], ["abc", "ab"])
    truth = {"ab": 0.3, "abc": 0.3, "abcd": 0.2, "x": 0.2}
    assert np.allclose(found.estimate.estimate, [truth[v] for v in found.values], atol=0.03)
    assert "a" not in found.values  # a prefix of them all, held by nobody


def test_the_keep_limit_cuts_and_raises_the_threshold() -> None:
    """90 two-byte strings with 90 different first bytes, 1/90 each: with k = 1 only 64
    prefixes are kept (the threshold rises to the largest estimate cut off), with
    k = 100, 200 are."""
    strings = [chr(0x21 + i) + "z" for i in range(90)]
    values = [s for s in strings for _ in range(200)]
    narrow = _search(values, 2, 1)
    wide = _search(values, 2, 100)
    assert len(narrow.values) == 1 and narrow.values[0] in strings
    assert narrow.threshold >= 0.009  # the 65th prefix estimate, about 1/90
    assert sorted(wide.values) == sorted(strings)
    assert wide.threshold < narrow.threshold
    assert wide.threshold < 1 / 90  # every string is above it


def test_strings_that_are_not_utf8_prefixes_are_joined_bytewise() -> None:
    """A 3-byte character (€) is found from its byte prefixes, which are not text."""
    found = _search(["€"] * 4000 + ["€€"] * 4000 + ["e"] * 2000, 6, 5)
    assert sorted(found.values) == sorted(["€", "€€", "e"])
    assert found.values[-1] == "e"  # 0.2, after the two at 0.4


def test_the_keep_limit_fits_the_work_budget() -> None:
    """k = 1000 over 32 levels of 256 functions: 2^28 // (307·32·256) = 106 prefixes a level."""
    assert keep_limit(1000, 32, 256) == 106
    assert keep_limit(1000, 32, 65_536) == 1
    assert keep_limit(20, 12, 512) == 64


def test_the_threshold_is_a_frequency_even_with_few_reports() -> None:
    found = _search(["ab"] * 20 + ["cd"] * 10, 4, 1000)
    assert 0.0 < found.threshold <= 1.0
