"""The detection threshold of a ``pem`` heavy-hitters search, and the limits that shape
the search (:mod:`ldp_shared.analyses.heavy_hitters` runs it; the mechanism,
:mod:`ldp_shared.mechanisms.prefix_hashing`, states its threshold for the planner).

A string of ``L`` bytes (the longest, hence hardest) and frequency ``f`` is missed with
probability at most ``Σ_{ℓ<L} Φ((b_ℓ − f)/σ_ℓ) + Φ((f* − f)/σ_{≥L})``, where ``b_ℓ`` is
level ``ℓ``'s bar (``z_keep·σ_ℓ``, or the estimate its ``keep`` limit cut off if higher)
and ``f*`` the estimate the exact test needs at length ``L`` (each prefix is at least as
frequent as the string). The threshold is the least ``f`` where the sum is ``β``
(:data:`MISS`), at most 1. Wang, Li, Jha et al., "Locally Differentially Private Heavy
Hitter Identification" (IEEE TDSC 2019), give the prefix-extending search; the bound is
the union bound over its levels.
"""

from __future__ import annotations

import math
from statistics import NormalDist

FALSE_DISCOVERY = 0.05
"""α: the chance that a query's list holds a string no device holds."""
MISS = 0.1
"""β: the chance that a string above the threshold is missed."""
Z_KEEP = 2.0
"""Standard errors a prefix's estimate must reach to be extended."""
Z_SCREEN = 3.0
"""Standard errors a string's pooled estimate must reach to be tested exactly."""
MIN_KEEP = 64
MAX_KEEP = 512
N01 = NormalDist()


WORK_BUDGET = 2**28
"""Bucket computations one search may make (about 3 s here): the number of prefixes kept
per level is lowered to fit, and the threshold then accounts for what the lower limit
cuts off."""
BRANCHING = 307
"""Candidates per kept prefix and level: about 179 prefixes (the bytes UTF-8 lets follow
a whole character) and 128 strings."""


def keep_limit(top: int, levels: int = 1, hashes: int = 1) -> int:
    """Prefixes extended per level for a query of the ``top`` most frequent strings, within
    :data:`WORK_BUDGET` for ``levels`` levels of ``hashes`` functions."""
    wanted = min(MAX_KEEP, max(MIN_KEEP, 2 * top))
    return max(1, min(wanted, WORK_BUDGET // (BRANCHING * levels * hashes)))


def _miss(
    f: float, level_sd: list[float], bars: list[float], final_sd: float, find_level: float
) -> float:
    misses = sum(N01.cdf((bar - f) / sd) for sd, bar in zip(level_sd, bars, strict=True))
    return misses + N01.cdf((find_level - f) / final_sd)


def detection_threshold(
    level_sd: list[float],
    final_sd: float,
    find_level: float,
    bars: list[float] | None = None,
) -> float:
    """The least frequency missed with probability at most :data:`MISS` (bisection), for a
    string of the longest length: each prefix level must keep it (its estimate must clear
    that level's bar: ``z_keep·σ_ℓ``, or the estimate the keep limit cut off there if
    higher), and its pooled estimate must reach ``find_level``. At most 1."""
    if not all(math.isfinite(sd) for sd in [*level_sd, final_sd]):
        return 1.0
    bars = [Z_KEEP * sd for sd in level_sd] if bars is None else bars
    low, high = 0.0, 1.0
    if _miss(high, level_sd, bars, final_sd, find_level) > MISS:
        return 1.0
    for _ in range(60):
        mid = (low + high) / 2.0
        if _miss(mid, level_sd, bars, final_sd, find_level) > MISS:
            low = mid
        else:
            high = mid
    return high
