"""Heavy hitters of a ``pem`` attribute: the frequent strings nobody listed, from its
statistics alone (:mod:`ldp_shared.mechanisms.prefix_hashing`).

Level after level ``ℓ = 1..L``, every kept prefix ``P`` (the empty prefix at first) is
extended by each of the 256 bytes ``b``:

* the **prefix** ``P·b`` is estimated from level ``ℓ`` (its key exists only there) and
  kept when its estimate is at least ``z_keep·σ_ℓ``, the ``keep`` largest of them at most;
* the **string** ``P·b``, if it is UTF-8, is estimated from levels ``ℓ..L`` pooled and
  reported when its estimate is at least ``z_find·σ_{≥ℓ}``.

``σ`` is the standard error of the estimate of a key no device holds (FLH's sampling
and collision terms at ``f = 0``). ``z_find = Φ⁻¹(1 − α/C)`` with ``C = 256·keep·L``
strings tested at most, so that, under the normal approximation of the counts, all the
strings reported by one query include a false one with probability at most ``α``
(:data:`FALSE_DISCOVERY`); ``z_keep`` is :data:`Z_KEEP`. The approximation fails with few
reports per level or with ``k ≪ g`` (``docs/open-domains.md`` says how).

**Detection threshold.** A string of ``L`` bytes (the longest, hence hardest) and
frequency ``f`` is missed with probability at most
``Σ_{ℓ<L} Φ(z_keep − f/σ_ℓ) + Φ(z_find − f/σ_{≥L})`` (each of its prefixes is at least
as frequent as it), plus the chance that a prefix falls below the ``keep``-th largest.
The threshold is the least ``f`` where the sum is ``β`` (:data:`MISS`), or the largest
estimate a level's ``keep`` limit cut off, whichever is larger: above it a string is found
with probability at least ``1 − β``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
from numpy.typing import NDArray

from ldp_shared.kernel import FrequencyEstimate
from ldp_shared.mechanisms.base import Blocks
from ldp_shared.mechanisms.hashing import key_of
from ldp_shared.mechanisms.prefix_hashing import (
    PrefixHashing,
    complete_key_bytes,
    prefix_key_bytes,
)

FALSE_DISCOVERY = 0.05
"""α: the chance that a query's list holds a string no device holds."""
MISS = 0.1
"""β: the chance that a string above the threshold is missed."""
Z_KEEP = 2.0
"""Standard errors a prefix's estimate must reach to be extended."""
MIN_KEEP = 64
MAX_KEEP = 512
_N01 = NormalDist()


@dataclass(frozen=True)
class HeavyHitters:
    """The strings found, most frequent first, with their estimates."""

    values: list[str]
    estimate: FrequencyEstimate
    threshold: float
    levels_searched: int
    candidates: int


def keep_limit(top: int) -> int:
    """Prefixes extended per level for a query of the ``top`` most frequent strings."""
    return min(MAX_KEEP, max(MIN_KEEP, 2 * top))


def _miss(f: float, level_sd: list[float], final_sd: float, z_find: float) -> float:
    misses = sum(_N01.cdf(Z_KEEP - f / sd) for sd in level_sd)
    return misses + _N01.cdf(z_find - f / final_sd)


def detection_threshold(level_sd: list[float], final_sd: float, z_find: float) -> float:
    """The least frequency missed with probability at most :data:`MISS` (bisection)."""
    if not all(math.isfinite(sd) for sd in [*level_sd, final_sd]):
        return 1.0
    low, high = 0.0, 1.0
    if _miss(high, level_sd, final_sd, z_find) > MISS:
        return 1.0
    for _ in range(60):
        mid = (low + high) / 2.0
        if _miss(mid, level_sd, final_sd, z_find) > MISS:
            low = mid
        else:
            high = mid
    return high


def _extensions(prefixes: list[bytes]) -> list[bytes]:
    return [prefix + bytes((b,)) for prefix in prefixes for b in range(256)]


def _is_text(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def find_heavy_hitters(
    randomizer: PrefixHashing,
    salt: str,
    stats: Blocks,
    top: int,
    confidence: float,
) -> HeavyHitters:
    """The (at most) ``top`` most frequent strings found in the statistics."""
    salt_bytes = bytes.fromhex(salt)
    tables = randomizer.level_tables(stats)
    pooled = randomizer.pooled_tables(stats)
    oracle = randomizer.level_oracle
    levels = randomizer.levels
    keep = keep_limit(top)
    z_find = _N01.inv_cdf(1.0 - FALSE_DISCOVERY / (256 * keep * levels))
    level_sd = [randomizer.noise_sd(tables[i]) for i in range(levels)]
    pooled_sd = [randomizer.noise_sd(pooled[i]) for i in range(levels)]
    found: list[bytes] = []
    found_est: list[FrequencyEstimate] = []
    cut = 0.0
    prefixes: list[bytes] = [b""]
    candidates = 0
    searched = 0
    for level in range(1, levels + 1):
        if not prefixes:
            break
        searched = level
        grown = _extensions(prefixes)
        texts = [value for value in grown if _is_text(value)]
        candidates += len(grown) + len(texts)
        if texts:
            keys = _keys([complete_key_bytes(t) for t in texts], salt_bytes)
            lengths = np.full(len(texts), level, dtype=np.int64)
            strings = randomizer.complete_estimates(pooled, lengths, keys, confidence)
            hit = np.flatnonzero(strings.estimate >= z_find * pooled_sd[level - 1])
            found.extend(texts[i] for i in hit)
            found_est.append(strings.take(hit))
        if level == levels:
            break
        table = tables[level - 1]
        keys = _keys([prefix_key_bytes(p) for p in grown], salt_bytes)
        n_level = int(table.sum())
        if n_level == 0:
            break
        estimate = oracle.estimate_keys({"counts": table}, n_level, keys, confidence).estimate
        passing = np.flatnonzero(estimate >= Z_KEEP * level_sd[level - 1])
        if passing.size > keep:
            order = passing[np.argsort(estimate[passing])[::-1]]
            cut = max(cut, float(estimate[order[keep]]))
            passing = order[:keep]
        prefixes = [grown[i] for i in passing]
    threshold = max(cut, detection_threshold(level_sd[: levels - 1], pooled_sd[levels - 1], z_find))
    return _ranked(found, found_est, top, threshold, searched, candidates, confidence)


def _keys(data: list[bytes], salt: bytes) -> NDArray[np.uint64]:
    return np.fromiter((key_of(d, salt) for d in data), dtype=np.uint64, count=len(data))


def _ranked(
    found: list[bytes],
    parts: list[FrequencyEstimate],
    top: int,
    threshold: float,
    searched: int,
    candidates: int,
    confidence: float,
) -> HeavyHitters:
    estimate = np.concatenate([p.estimate for p in parts]) if parts else np.zeros(0)
    stderr = np.concatenate([p.stderr for p in parts]) if parts else np.zeros(0)
    n = parts[0].n if parts else 0
    order = np.argsort(estimate, kind="stable")[::-1][:top]
    return HeavyHitters(
        values=[found[i].decode("utf-8") for i in order],
        estimate=FrequencyEstimate.normal(n, estimate[order], stderr[order], confidence),
        threshold=threshold,
        levels_searched=searched,
        candidates=candidates,
    )
