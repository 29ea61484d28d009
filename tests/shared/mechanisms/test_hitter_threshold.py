"""The detection threshold of a ``pem`` search and its keep limit
(``ldp_shared.mechanisms.hitter_threshold``); the search itself is tested in
``tests/shared/analyses/test_heavy_hitters.py``."""

from __future__ import annotations

import itertools
import math
from statistics import NormalDist

import pytest

from ldp_shared.mechanisms.hitter_threshold import (
    MAX_KEEP,
    MIN_KEEP,
    MISS,
    Z_KEEP,
    detection_threshold,
    keep_limit,
)

N01 = NormalDist()


def miss(f: float, level_sd: list[float], final_sd: float, find_level: float) -> float:
    """The stated bound on missing a longest string of frequency ``f``, written again."""
    return sum(N01.cdf(Z_KEEP - f / sd) for sd in level_sd) + N01.cdf((find_level - f) / final_sd)


def test_the_threshold_solves_the_stated_miss_bound() -> None:
    level_sd, final_sd, find_level = [0.002, 0.003, 0.004], 0.005, 0.025
    t = detection_threshold(level_sd, final_sd, find_level)
    assert 0.0 < t < 1.0
    assert miss(t, level_sd, final_sd, find_level) == pytest.approx(MISS, abs=1e-9)
    assert miss(t * 0.99, level_sd, final_sd, find_level) > MISS
    # one level: Φ((find − t)/σ) = β, so t = find + σ·Φ⁻¹(1 − β)
    alone = detection_threshold([], final_sd, find_level)
    assert alone == pytest.approx(find_level + final_sd * N01.inv_cdf(1 - MISS), rel=1e-9)


def test_more_noise_raises_the_threshold() -> None:
    scales = [1e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1]
    thresholds = [detection_threshold([s] * 7, 1.5 * s, 5.0 * s) for s in scales]
    assert all(a < b for a, b in itertools.pairwise(thresholds)), thresholds
    assert thresholds[0] < 1e-3
    base = ([0.006] * 5, 0.004, 0.02)
    t0 = detection_threshold(*base)
    for i in range(5):  # any one level noisier
        noisier = list(base[0])
        noisier[i] = 0.009
        assert detection_threshold(noisier, base[1], base[2]) > t0
    assert detection_threshold(base[0], 0.008, base[2]) > t0  # the pooled level noisier
    assert detection_threshold(base[0], base[1], 0.03) > t0  # a higher level to pass
    assert detection_threshold([0.006] * 9, base[1], base[2]) > t0  # more levels
    assert detection_threshold([0.003] * 5, base[1], base[2]) < t0  # less noise


@pytest.mark.parametrize(
    ("level_sd", "final_sd"),
    [([math.inf, 0.01], 0.01), ([0.01, 0.01], math.inf), ([math.nan], 0.01), ([0.01], 1.0)],
)
def test_hopeless_noise_gives_a_threshold_of_one(level_sd: list[float], final_sd: float) -> None:
    assert detection_threshold(level_sd, final_sd, 0.05) == 1.0


@pytest.mark.parametrize(
    ("top", "keep"),
    [(1, MIN_KEEP), (0, MIN_KEEP), (32, 64), (33, 66), (100, 200), (256, 512), (257, 512)],
)
def test_keep_limit_bounds(top: int, keep: int) -> None:
    assert (MIN_KEEP, MAX_KEEP) == (64, 512)
    assert keep_limit(top) == keep
    assert MIN_KEEP <= keep_limit(top) <= MAX_KEEP


def test_keep_limit_is_monotone() -> None:
    keeps = [keep_limit(top) for top in range(1, 1001)]
    assert keeps == sorted(keeps) and keeps[0] == MIN_KEEP and keeps[-1] == MAX_KEEP
