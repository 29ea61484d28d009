"""Heavy hitters of a ``pem`` attribute: the frequent strings nobody listed, from its
statistics alone (:mod:`ldp_shared.mechanisms.prefix_hashing`).

Level after level ``ℓ = 1..L``, every kept prefix ``P`` (the empty prefix at first) is
extended by each of the 256 bytes ``b``:

* the **prefix** ``P·b`` is estimated from level ``ℓ`` (its key exists only there) and
  kept when its estimate is at least ``z_keep·σ_ℓ``, the ``keep`` largest of them at most;
* the **string** ``P·b``, if it is UTF-8 in NFC (what a device sends), is estimated
  from levels ``ℓ..L`` pooled and screened when its estimate is at least ``Z_SCREEN·σ_{≥ℓ}``.

``σ`` is the standard error of the estimate of a key no device holds (FLH's sampling
and collision terms at ``f = 0``). When the levels are done, each screened string is
tested exactly (:mod:`ldp_shared.analyses.hitter_check`: its support count, corrected
for its collisions with the frequent keys found, against the binomial tail of a key
nobody holds) at level ``α/C``, ``C = 256·keep·L`` strings tested at most, so that the
list holds a string nobody holds with probability at most ``α`` (``FALSE_DISCOVERY``)
up to the collisions with keys too rare to be known.

**Detection threshold** (:mod:`ldp_shared.mechanisms.hitter_threshold`, with ``α``,
``β`` and the limits below). A string of ``L`` bytes (the longest, hence hardest) and
frequency ``f`` is missed with probability at most
``Σ_{ℓ<L} Φ((b_ℓ − f)/σ_ℓ) + Φ((f* − f)/σ_{≥L})``, where ``b_ℓ`` is level ``ℓ``'s bar
(``z_keep·σ_ℓ``, or the estimate its ``keep`` limit cut off if higher) and ``f*`` the
estimate the exact test needs at length ``L`` (each prefix is at least as frequent as
the string). The threshold is the least ``f`` where the sum is ``β`` (``MISS``), at
most 1: above it a string is found with probability at least ``1 − β``, if no more than
``top`` strings are above it. ``keep`` is ``max(64, 2·top)`` (at most 512), lowered to fit
``WORK_BUDGET``; the strings screened per level are as many at most.
"""

from __future__ import annotations

import codecs
import unicodedata
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ldp_shared.analyses.hitter_check import KnownKeys, confirmed
from ldp_shared.kernel import FrequencyEstimate
from ldp_shared.mechanisms.base import Blocks
from ldp_shared.mechanisms.hashing import keys_of
from ldp_shared.mechanisms.hitter_threshold import (
    FALSE_DISCOVERY,
    N01,
    Z_KEEP,
    Z_SCREEN,
    detection_threshold,
    keep_limit,
)
from ldp_shared.mechanisms.prefix_hashing import (
    PrefixHashing,
    complete_key_bytes,
    prefix_key_bytes,
)


@dataclass(frozen=True)
class HeavyHitters:
    """The strings found, most frequent first, with their estimates."""

    values: list[str]
    estimate: FrequencyEstimate
    threshold: float
    levels_searched: int
    candidates: int


_AFTER_CHARACTER = bytes([*range(0x80), *range(0xC2, 0xF5)])
"""Bytes that may follow a whole UTF-8 character: ASCII or the first byte of another."""
_CONTINUATION = bytes(range(0x80, 0xC0))


def _extensions(prefixes: list[bytes]) -> list[bytes]:
    """Each prefix extended by each byte that may follow it in UTF-8 (devices send UTF-8
    only, so no other prefix holds any report)."""
    grown: list[bytes] = []
    for prefix in prefixes:
        try:
            _, whole = codecs.utf_8_decode(prefix, "strict", False)
        except UnicodeDecodeError:  # a continuation byte its lead byte does not allow
            continue
        following = _AFTER_CHARACTER if whole == len(prefix) else _CONTINUATION
        grown.extend(prefix + bytes((b,)) for b in following)
    return grown


def _is_text(data: bytes) -> bool:
    """Whether a device could have sent ``data`` whole: UTF-8 in Unicode NFC."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return unicodedata.is_normalized("NFC", text)


def find_heavy_hitters(
    randomizer: PrefixHashing,
    salt: str,
    stats: Blocks,
    top: int,
    confidence: float,
) -> HeavyHitters:
    """The (at most) ``top`` most frequent strings found in the statistics."""
    levels = randomizer.levels
    keep = keep_limit(top, levels, randomizer.k)
    search = _Search(randomizer, bytes.fromhex(salt), stats, keep)
    search.run()
    found = search.confirm()
    keys = keys_of([complete_key_bytes(s) for s in found], search.salt)
    lengths = np.array([len(s) for s in found], dtype=np.int64)
    estimate = randomizer.complete_estimates(search.pooled, lengths, keys, confidence)
    bars = [
        max(Z_KEEP * sd, cut)
        for sd, cut in zip(search.level_sd[: levels - 1], search.cuts, strict=False)
    ]
    threshold = detection_threshold(
        search.level_sd[: levels - 1],
        search.pooled_sd[levels - 1],
        search.find_level(levels),
        bars,
    )
    return _ranked(found, estimate, top, threshold, search.searched, search.candidates)


class _Search:
    """The level-by-level search (:meth:`run`), then the exact test of what it screened
    (:meth:`confirm`)."""

    def __init__(self, randomizer: PrefixHashing, salt: bytes, stats: Blocks, keep: int):
        self.randomizer = randomizer
        self.oracle = randomizer.level_oracle
        self.salt = salt
        self.keep = keep
        self.tables = randomizer.level_tables(stats)
        self.pooled = randomizer.pooled_tables(stats)
        levels = randomizer.levels
        self.level_n = self.tables.sum(axis=1)
        self.pooled_n = self.pooled.sum(axis=1)
        self.level_sd = [randomizer.noise_sd(self.tables[i]) for i in range(levels)]
        self.pooled_sd = [randomizer.noise_sd(self.pooled[i]) for i in range(levels)]
        self.tail = FALSE_DISCOVERY / (256 * keep * levels)
        self.z_find = N01.inv_cdf(1.0 - self.tail)
        self.kept: list[tuple[bytes, float]] = []
        self.screened: list[tuple[bytes, float]] = []
        self.cuts = [0.0] * levels
        self.candidates = 0
        self.searched = 0

    def run(self) -> None:
        prefixes: list[bytes] = [b""]
        for level in range(1, self.randomizer.levels + 1):
            if not prefixes:
                return
            self.searched = level
            grown = _extensions(prefixes)
            self._screen_strings([value for value in grown if _is_text(value)], level)
            self.candidates += len(grown)
            if level == self.randomizer.levels or self.level_n[level - 1] == 0:
                return
            prefixes = self._keep_prefixes(grown, level)

    def _screen_strings(self, texts: list[bytes], level: int) -> None:
        if not texts or self.pooled_n[level - 1] == 0:
            return
        self.candidates += len(texts)
        keys = keys_of([complete_key_bytes(t) for t in texts], self.salt)
        lengths = np.full(len(texts), level, dtype=np.int64)
        strings = self.randomizer.complete_estimates(self.pooled, lengths, keys, 0.5)
        hit = np.flatnonzero(strings.estimate >= Z_SCREEN * self.pooled_sd[level - 1])
        hit = hit[np.argsort(strings.estimate[hit])[::-1][: self.keep]]  # the exact test's work
        self.screened.extend((texts[i], float(strings.estimate[i])) for i in hit)

    def _keep_prefixes(self, grown: list[bytes], level: int) -> list[bytes]:
        table = self.tables[level - 1]
        keys = keys_of([prefix_key_bytes(p) for p in grown], self.salt)
        n = int(self.level_n[level - 1])
        estimate = self.oracle.estimate_keys({"counts": table}, n, keys, 0.5).estimate
        passing = np.flatnonzero(estimate >= Z_KEEP * self.level_sd[level - 1])
        if passing.size > self.keep:
            order = passing[np.argsort(estimate[passing])[::-1]]
            self.cuts[level - 1] = float(estimate[order[self.keep]])
            passing = order[: self.keep]
        self.kept.extend((grown[i], float(estimate[i])) for i in passing)
        return [grown[i] for i in passing]

    def _known(self, length: int) -> KnownKeys:
        """The frequent keys of the pooled table of levels ``length..L``, with their
        shares of its reports: the kept prefixes of those levels and the screened
        strings (a string of ``m`` bytes is in levels ``≥ m``)."""
        pool = float(self.pooled_n[length - 1])
        data: list[bytes] = []
        shares: list[float] = []
        for prefix, estimate in self.kept:
            if len(prefix) >= length:
                data.append(prefix_key_bytes(prefix))
                shares.append(estimate * float(self.level_n[len(prefix) - 1]) / pool)
        for text, estimate in self.screened:
            data.append(complete_key_bytes(text))
            shares.append(estimate * float(self.pooled_n[max(len(text), length) - 1]) / pool)
        return KnownKeys.of(self.oracle, keys_of(data, self.salt), np.array(shares))

    def _check(self, length: int, texts: list[bytes]) -> tuple[NDArray[np.bool_], float]:
        keys = keys_of([complete_key_bytes(t) for t in texts], self.salt)
        table = self.pooled[length - 1]
        return confirmed(self.oracle, table, keys, self._known(length), self.tail, self.z_find)

    def confirm(self) -> list[bytes]:
        """The screened strings that pass the exact test of :mod:`.hitter_check`."""
        found: list[bytes] = []
        for length in sorted({len(text) for text, _ in self.screened}):
            texts = [text for text, _ in self.screened if len(text) == length]
            passed, _ = self._check(length, texts)
            found.extend(t for t, ok in zip(texts, passed, strict=True) if ok)
        return found

    def find_level(self, length: int) -> float:
        """The estimate a string of ``length`` bytes must show to pass the exact test."""
        if self.pooled_n[length - 1] == 0:
            return 1.0
        return self._check(length, [])[1]


def _ranked(
    found: list[bytes],
    estimate: FrequencyEstimate,
    top: int,
    threshold: float,
    searched: int,
    candidates: int,
) -> HeavyHitters:
    order = np.argsort(estimate.estimate, kind="stable")[::-1][:top]
    return HeavyHitters(
        values=[found[i].decode("utf-8") for i in order],
        estimate=estimate.take(order),
        threshold=threshold,
        levels_searched=searched,
        candidates=candidates,
    )
