"""PEM (``pem``) against its stated channel and estimator, with power checks.

* Channel: for a few strings of 1 to 3 bytes (two sharing a prefix), the table of the
  outputs ``(ℓ, j, y)`` of many perturbations against ``P(ℓ, j, y | s) = (1/L)(1/k)·p``
  or ``·q``, written here from the specification (per-string χ²). Power: a device that
  always reports its complete key, and one that reports the key of level ``ℓ + 1``.
* Estimator: a fixed data set of ``N`` strings is perturbed ``R`` times, each time under
  a fresh salt (so the collision bias of the hash family is random too). For strings of
  every length, held and not held, ``mean(f̂)`` against ``f`` (z-tests with the observed
  spread); for the strings whose pooled reports are all of the devices (one byte) or
  that nobody holds, ``z = (f̂ − f)/stderr`` must have variance 1 (two-sided χ²).
  Bonferroni inside each test. Power: reports made at ε·1.3 and ε/1.3 (the same ``g``
  and ``k``: ε = 8 is above ``ln 255``), estimated with the ε randomizer, are rejected.
* Discovery: over fresh salts, a heavy-hitters list holds a string nobody holds in at
  most a share ``α`` of the queries (binomial test), at 300 reports.
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
from numpy.typing import NDArray

from ldp_shared.analyses.heavy_hitters import find_heavy_hitters
from ldp_shared.mechanisms import PrefixHashing, PrefixHashingSpec
from ldp_shared.mechanisms.hashing import buckets
from ldp_shared.mechanisms.hitter_threshold import FALSE_DISCOVERY
from ldp_shared.rand import seeded_rng

from ._stats import (
    ALPHA,
    POWER_MARGIN_SD,
    assert_chi2_power,
    assert_variance_power,
    bonferroni_reject,
    chi2_gof_rows,
    normal_two_sided_pvalue,
    pooled_noncentrality,
    variance_ratio_pvalue,
    wrong_epsilons,
    z_critical,
)

pytestmark = pytest.mark.statistical

SEED = 7_100_001
KeyAt = Callable[[bytes, int], int]


def spec(max_length: int, salt: str, hashes: int | None = None) -> PrefixHashingSpec:
    document = {"name": "w", "mechanism": "pem", "max_length": max_length, "salt": salt}
    if hashes is not None:
        document["hashes"] = hashes
    attribute = PrefixHashingSpec.model_validate(document)
    assert isinstance(attribute, PrefixHashingSpec)
    return attribute


def fresh_salt(gen: np.random.Generator) -> str:
    return bytes(gen.integers(0, 256, 16, dtype=np.uint8)).hex()


# -- the channel ---------------------------------------------------------------------------

CHANNEL_STRINGS = ["a", "ab", "abc", "abd", "xyz"]
CHANNEL_SALT = "0f" * 16
PER_STRING = 40_000


def key(tagged: bytes) -> int:
    digest = hashlib.blake2b(tagged, digest_size=8, key=bytes.fromhex(CHANNEL_SALT)).digest()
    return int.from_bytes(digest, "big")


def level_key(data: bytes, level: int) -> int:
    return key(b"p" + data[:level]) if len(data) > level else key(b"s" + data)


def complete_only(data: bytes, level: int) -> int:
    """Broken: the complete key at every level (prefixes never reported)."""
    return key(b"s" + data)


def next_level(data: bytes, level: int, levels: int = 3) -> int:
    """Broken: the key of level ``ℓ + 1`` reported as level ``ℓ``."""
    return level_key(data, min(level + 1, levels))


def channel_rows(
    randomizer: PrefixHashing, strings: list[str], key_at: KeyAt = level_key
) -> NDArray[np.float64]:
    """Row ``s``: ``P(output ((ℓ−1)k + j)g + y | s)``, from ``p`` and ``q`` only."""
    oracle = randomizer.level_oracle
    levels, k, g = randomizer.levels, randomizer.k, oracle.g
    out = np.empty((len(strings), levels * k * g))
    for row, value in enumerate(strings):
        data = value.encode("utf-8")
        cells = np.full((levels, k, g), oracle.q / (levels * k))
        for level in range(1, levels + 1):
            x = np.array([key_at(data, level)], dtype=np.uint64)
            true = buckets(x, np.arange(k), g)
            cells[level - 1, np.arange(k), true] = oracle.p / (levels * k)
        out[row] = cells.reshape(-1)
    return out


def channel_table(
    randomizer: PrefixHashing, keys: NDArray[np.uint64], seed: int
) -> NDArray[np.int64]:
    answers = randomizer.perturb(np.repeat(keys, PER_STRING, axis=0), seeded_rng(seed))
    cells = (answers[:, 0] * randomizer.k + answers[:, 1]) * randomizer.level_oracle.g
    cells += answers[:, 2]
    width = randomizer.levels * randomizer.cells
    table = np.zeros((keys.shape[0], width), dtype=np.int64)
    for row in range(keys.shape[0]):
        part = cells[row * PER_STRING : (row + 1) * PER_STRING]
        table[row] = np.bincount(part, minlength=width)
    return table


@pytest.mark.parametrize("epsilon", [1.0, 8.0])
def test_whole_channel(epsilon: float) -> None:
    s = spec(3, CHANNEL_SALT, hashes=4)
    randomizer = s.randomizer(epsilon)
    table = channel_table(randomizer, s.encode(CHANNEL_STRINGS), SEED)
    assert chi2_gof_rows(table, channel_rows(randomizer, CHANNEL_STRINGS)).pvalue >= ALPHA


@pytest.mark.parametrize("broken", [complete_only, next_level], ids=["complete", "level+1"])
@pytest.mark.parametrize("epsilon", [1.0, 8.0])
def test_whole_channel_power(epsilon: float, broken: KeyAt) -> None:
    """Reports of a device that gets its level keys wrong, tested against the right
    channel (the power computed first from the two channels)."""
    s = spec(3, CHANNEL_SALT, hashes=4)
    randomizer = s.randomizer(epsilon)
    right = channel_rows(randomizer, CHANNEL_STRINGS)
    wrong = channel_rows(randomizer, CHANNEL_STRINGS, broken)
    lam = sum(pooled_noncentrality(PER_STRING, r, w) for r, w in zip(right, wrong, strict=True))
    assert_chi2_power(lam, len(CHANNEL_STRINGS) * (right.shape[1] - 1))
    keys = np.array(
        [[broken(v.encode(), lv) for lv in (1, 2, 3)] for v in CHANNEL_STRINGS],
        dtype=np.uint64,
    )
    table = channel_table(randomizer, keys, SEED + 1)
    assert chi2_gof_rows(table, right).pvalue < ALPHA


# -- the estimator over fresh salts --------------------------------------------------------

LEVELS = 4
HELD = {"a": 4000, "bc": 2000, "def": 3000, "ghij": 6000}
TAIL = [f"t{i}" for i in range(500)]  # 10 devices each: strings of 2 to 4 bytes
UNHELD = ["z", "zy", "zyx", "zyxw"]
NAMED = [*HELD, *UNHELD]
DATA = [v for v, c in HELD.items() for _ in range(c)] + [t for t in TAIL for _ in range(10)]
N = len(DATA)
TRUTH = np.array([HELD.get(v, 0) / N for v in NAMED])
FULL_POOL = [v for v in NAMED if len(v.encode()) == 1 or v in UNHELD]
"""Strings whose stated standard error has no subsampling term to miss: one byte (their
pooled levels are all of them) or nobody holds them (f = 0)."""
REPETITIONS = 300


@dataclass(frozen=True)
class Runs:
    estimate: NDArray[np.float64]  # R × named
    stderr: NDArray[np.float64]


@functools.lru_cache(maxsize=4)
def simulate(
    epsilon: float, report_epsilon: float, seed: int, repetitions: int = REPETITIONS
) -> Runs:
    """``repetitions`` runs of the data set, each under a fresh salt; reports made at
    ``report_epsilon``, estimated with the ``epsilon`` randomizer (cached: read only)."""
    gen = np.random.default_rng(seed)
    estimates, stderrs = [], []
    for run in range(repetitions):
        s = spec(LEVELS, fresh_salt(gen))
        right = s.randomizer(epsilon)
        made = s.randomizer(report_epsilon)
        assert (made.k, made.level_oracle.g) == (right.k, right.level_oracle.g)
        stats = right.accumulate(made.perturb(s.encode(DATA), seeded_rng(seed + run)))
        got = right.estimate_values(stats, N, s.encode(NAMED), 0.95)
        estimates.append(got.estimate)
        stderrs.append(got.stderr)
    runs = Runs(np.array(estimates), np.array(stderrs))
    runs.estimate.setflags(write=False)
    runs.stderr.setflags(write=False)
    return runs


def bias_pvalues(runs: Runs) -> list[float]:
    """``mean(f̂) − f`` over the observed spread (robust to a misstated stderr)."""
    mean = runs.estimate.mean(axis=0)
    sd = runs.estimate.std(axis=0, ddof=1)
    reps = runs.estimate.shape[0]
    return [
        normal_two_sided_pvalue(float((m - t) / (s / math.sqrt(reps))))
        for m, t, s in zip(mean, TRUTH, sd, strict=True)
    ]


def stderr_pvalues(runs: Runs, names: list[str]) -> list[float]:
    """``z = (f̂ − f)/stderr``: variance 1 (two-sided χ² on ``R − 1`` df)."""
    index = [NAMED.index(v) for v in names]
    z = (runs.estimate[:, index] - TRUTH[index]) / runs.stderr[:, index]
    return [variance_ratio_pvalue(float(v), 1.0, REPETITIONS) for v in z.var(axis=0, ddof=1)]


@pytest.fixture(params=[2.0, 8.0], ids=["eps2", "eps8"])
def runs(request: pytest.FixtureRequest) -> tuple[float, Runs]:
    epsilon = float(request.param)
    return epsilon, simulate(epsilon, epsilon, SEED + 100)


def test_unbiased_for_strings_of_every_length(runs: tuple[float, Runs]) -> None:
    _, result = runs
    pvalues = bias_pvalues(result)
    assert not bonferroni_reject(pvalues, ALPHA), dict(zip(NAMED, pvalues, strict=True))


def test_the_stated_standard_error(runs: tuple[float, Runs]) -> None:
    _, result = runs
    pvalues = stderr_pvalues(result, FULL_POOL)
    assert not bonferroni_reject(pvalues, ALPHA), dict(zip(FULL_POOL, pvalues, strict=True))


def test_the_stated_standard_error_power() -> None:
    """The variance test sees the collision term: at ε = 8 (k = 512, g = 256) the
    sampling term alone is less than half the variance of an absent string's estimate."""
    epsilon = 8.0
    result = simulate(epsilon, epsilon, SEED + 100)
    s = spec(LEVELS, "00" * 16)
    oracle = s.randomizer(epsilon).level_oracle
    q_star = 1.0 / oracle.g
    index = [NAMED.index(v) for v in UNHELD]
    # the pooled reports of a string of m bytes: N (L − m + 1)/L on average
    pooled = np.array([N * (LEVELS - m + 1) / LEVELS for m in (1, 2, 3, 4)])
    sampling = q_star * (1 - q_star) / (pooled * (oracle.p - q_star) ** 2)
    ratio = float(np.min(result.stderr[:, index].mean(axis=0) ** 2 / sampling))
    assert_variance_power(ratio, REPETITIONS, ALPHA / len(UNHELD))
    z = result.estimate[:, index] / np.sqrt(sampling)
    pvalues = [variance_ratio_pvalue(float(v), 1.0, REPETITIONS) for v in z.var(axis=0, ddof=1)]
    assert bonferroni_reject(pvalues, ALPHA), pvalues


def test_the_stated_standard_error_of_frequent_longer_strings() -> None:
    """Held strings of 2 to 4 bytes at ε = 8: their pooled reports are a random share
    (L − m + 1)/L of the devices, so the frequency among them varies about f, and the
    stated variance includes that sampling term. Power: the same test rejects the stated
    variance without it."""
    epsilon = 8.0
    result = simulate(epsilon, epsilon, SEED + 100)
    longer = ["bc", "def", "ghij"]
    index = [NAMED.index(v) for v in longer]
    stated = result.stderr[:, index].mean(axis=0) ** 2
    f = TRUTH[index]
    m = np.array([len(v) for v in longer])
    pooled = N * (LEVELS - m + 1) / LEVELS
    share_term = f * (1 - f) / pooled * (N - pooled) / (N - 1)
    ratio = float(np.min(stated / (stated - share_term)))
    assert_variance_power(ratio, REPETITIONS, ALPHA / 3)
    observed = result.estimate[:, index].var(axis=0, ddof=1)
    pvalues = [
        variance_ratio_pvalue(float(o), float(v), REPETITIONS)
        for o, v in zip(observed, stated, strict=True)
    ]
    assert not bonferroni_reject(pvalues, ALPHA), dict(zip(longer, pvalues, strict=True))


def test_wrong_epsilon_is_rejected() -> None:
    """Reports made at ε·1.3 or ε/1.3 with the same ``g`` and ``k`` (ε = 8), estimated
    with the ε randomizer: ``E f̂_v = r·f_v`` with ``r = (p′ − 1/g)/(p − 1/g)``. Design:
    the z-test of the one-byte string "a" alone clears its Bonferroni critical value by
    :data:`POWER_MARGIN_SD`, its variance bounded by the sampling term at ``p′`` plus the
    largest collision term ``1/((g − 1)k)``."""
    epsilon = 8.0
    s = spec(LEVELS, "00" * 16)
    right = s.randomizer(epsilon)
    g, k = right.level_oracle.g, right.k
    q_star = 1.0 / g
    f = HELD["a"] / N
    reps = 40
    for i, wrong_eps in enumerate(wrong_epsilons(epsilon)):
        wrong = s.randomizer(wrong_eps)
        p_wrong = wrong.level_oracle.p
        r = (p_wrong - q_star) / (right.level_oracle.p - q_star)
        sampling = (f * p_wrong * (1 - p_wrong) + (1 - f) * q_star * (1 - q_star)) / (
            N * (right.level_oracle.p - q_star) ** 2
        )
        sd_alt = math.sqrt(sampling + 1.0 / ((g - 1) * k))
        shift = abs(r - 1.0) * f / (sd_alt / math.sqrt(reps))
        assert shift - z_critical(ALPHA / len(NAMED)) >= POWER_MARGIN_SD, (wrong_eps, shift)
        result = simulate(epsilon, wrong_eps, SEED + 200 + 1000 * i, reps)
        assert bonferroni_reject(bias_pvalues(result), ALPHA), wrong_eps


# -- discovery: the false-discovery rate ---------------------------------------------------

QUERIES = 20
DISCOVERY_N = 300


def binomial_sf(count: int, trials: int, rate: float) -> float:
    """``P(X ≥ count)`` for ``X ~ Binomial(trials, rate)``, exactly."""
    return math.fsum(
        math.comb(trials, c) * rate**c * (1 - rate) ** (trials - c)
        for c in range(count, trials + 1)
    )


def test_a_list_rarely_holds_a_string_nobody_holds() -> None:
    """300 reports at ε = 4 (g = 56) of 4-byte strings: an absent key's support is then a
    binomial of mean about n/(L·g) ≈ 1.3, far from normal in the tail the search tests.
    The share of queries whose list holds a string nobody holds must not exceed α; the
    count of such queries among 20 is tested one-sided against Binomial(20, α)."""
    gen = np.random.default_rng(SEED + 300)
    values = (["abab"] * 3 + ["xy"] * 2 + ["q"]) * (DISCOVERY_N // 6)
    held = set(values)
    false = 0
    for query in range(QUERIES):
        s = spec(4, fresh_salt(gen))
        randomizer = s.randomizer(4.0)
        stats = randomizer.accumulate(randomizer.perturb(s.encode(values), seeded_rng(query)))
        found = find_heavy_hitters(randomizer, s.salt, stats, 20, 0.95)
        false += any(v not in held for v in found.values)
    pvalue = binomial_sf(false, QUERIES, FALSE_DISCOVERY)
    assert pvalue >= ALPHA, (false, QUERIES, pvalue)
