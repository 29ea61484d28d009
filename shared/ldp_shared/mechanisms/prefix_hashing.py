"""Prefix extension over fast local hashing (``pem``): strings nobody listed, found later.

The prefix extending method (PEM, Wang, Li, Jha et al., "Locally Differentially Private
Heavy Hitter Identification", IEEE TDSC 2019) splits the devices into levels and lets
level ``ℓ`` report a prefix of its value, so that the aggregator can grow the frequent
prefixes one step a level and never enumerate the domain. Here a level is one byte of
the value's UTF-8 (after NFC), and each level reports by fast local hashing
(:mod:`ldp_shared.mechanisms.local_hashing`), so that every level keeps only additive
``k × g`` counts and discovery is a query over statistics.

* **Device.** A string ``s`` of ``m ≤ L`` bytes (``L = max_length``). A uniform level
  ``ℓ ∈ [1, L]``, independent of ``s``; the level's key is the **prefix key** of the first
  ``ℓ`` bytes (tag ``p``) when ``m > ℓ``, and the **complete key** of ``s`` (tag ``s``,
  the ``flh`` key of the string) when ``m ≤ ℓ``. The key is reported by FLH: ``(ℓ, j, y)``.
* **Privacy.** The level does not depend on the value, so ``P(ℓ, j, y | s) =
  (1/L)(1/k)·p`` or ``·q``: exact ε = ``ln(p/q) = ε`` (one report, the whole ε).
* **Statistics.** ``N[ℓ, j, y]``: ``L·k·g`` int64 counts.
* **Estimates.** A string of ``m`` bytes is reported by its complete key at every level
  ``ℓ ≥ m``; the levels are chosen independently of the value, so the reports of those
  levels together are a random ``(L − m + 1)/L`` share of the devices, and the FLH
  estimate over their summed tables (``Σ_{ℓ≥m} N[ℓ]``, ``n_{≥m}`` reports) is unbiased
  for ``f_s`` with FLH's stated variance at ``n_{≥m}``, plus the sampling term of a
  uniform share: ``f(1 − f)/n_{≥m} · (N − n_{≥m})/(N − 1)``.
* **Discovery** (:mod:`ldp_shared.analyses.heavy_hitters`) estimates, level after level,
  the 256 one-byte extensions of the prefixes kept so far.

Segment ``prefix-hashed``, 4 bytes: ``ℓ − 1`` (one byte), ``j`` (big-endian ``uint16``),
``y`` (one byte).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from statistics import NormalDist
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from pydantic import Field

from ldp_shared.errors import (
    ConfigurationError,
    InsufficientReportsError,
    InvalidQueryError,
    InvalidRecordError,
)
from ldp_shared.kernel import FrequencyEstimate
from ldp_shared.mechanisms.base import (
    AttributeSpec,
    Blocks,
    PlannedVariance,
    Randomizer,
    Segment,
    StatsBlock,
    Unpacked,
    register,
)
from ldp_shared.mechanisms.hashing import (
    SALT_PATTERN,
    STRING_TAG,
    new_salt,
    value_bytes,
)
from ldp_shared.mechanisms.hitter_threshold import FALSE_DISCOVERY, detection_threshold, keep_limit
from ldp_shared.mechanisms.local_hashing import (
    MAX_HASHES,
    MAX_SKETCH_CELLS,
    LocalHashing,
    bucket_count,
)
from ldp_shared.rand import resolve_rng

PREFIX_TAG = b"p"
MAX_LEVELS = 32
"""Longest string (bytes) a ``pem`` attribute may declare: one level per byte."""
CELL_BUDGET = 2**19
"""Counters the default ``hashes`` aims at: ``L·k·g ≤ 2^19`` (4 MiB of statistics)."""
MAX_DEFAULT_HASHES = 1024
PLANNED_TOP = 32
"""Strings a planned discovery query asks for (``keep = 64`` prefixes a level, fewer
where the search's work budget lowers it)."""


def default_hashes(levels: int, epsilon: float) -> int:
    """The largest power of two ``k ≤ 1024`` with ``levels·k·g`` within the cell budget."""
    per_level = CELL_BUDGET // (levels * bucket_count(epsilon))
    return int(max(1, min(MAX_DEFAULT_HASHES, 2 ** int(math.log2(max(per_level, 1))))))


def prefix_key_bytes(prefix: bytes) -> bytes:
    """The tagged bytes of a prefix key."""
    return PREFIX_TAG + prefix


def complete_key_bytes(value: bytes) -> bytes:
    """The tagged bytes of a complete key (the ``flh`` string key)."""
    return STRING_TAG + value


@register
class PrefixHashingSpec(AttributeSpec):
    """A string attribute of an open domain whose frequent values the aggregator finds."""

    mechanism: Literal["pem"]
    max_length: int = Field(
        default=16,
        ge=1,
        le=MAX_LEVELS,
        description="longest string in bytes of UTF-8 after NFC; one level per byte",
    )
    hashes: int | None = Field(
        default=None,
        ge=1,
        le=MAX_HASHES,
        description="k per level (default: the largest power of two ≤ 1024 within 2^19 counters)",
    )
    salt: str = Field(
        default_factory=new_salt,
        pattern=SALT_PATTERN,
        description="public 16-byte key of the hash family, hex (drawn at creation if absent)",
    )

    @property
    def is_open(self) -> bool:
        return True

    @classmethod
    def plan_specs(
        cls, domain_size: int | None, lo: float | None, hi: float | None
    ) -> list[AttributeSpec]:
        """Planned over an open domain only, at the default ``max_length`` (a listed
        domain needs no discovery, and its strings' byte lengths, which decide how many
        levels carry them, are not in the query)."""
        if domain_size is not None or lo is not None or hi is not None:
            return []
        return [cls(name="planned", mechanism="pem")]

    def value_bytes(self, column: Sequence[Any] | NDArray[Any]) -> list[bytes]:
        """Each value's UTF-8 bytes after NFC (checked: type, UTF-8, length, not empty)."""
        what = f"attribute {self.name!r}"
        return [value_bytes(v, "string", self.max_length, what)[1:] for v in column]

    def encode(self, column: Sequence[Any] | NDArray[Any]) -> NDArray[np.uint64]:
        """Each value's key at every level (``n × L``), each distinct value checked and
        hashed once."""
        salt = bytes.fromhex(self.salt)
        levels = self.max_length
        try:  # strings (and bytes) equal only their own kind: one check each suffices
            distinct = list(dict.fromkeys(column))
        except TypeError:  # an unhashable value (a bytearray, or not a value at all)
            distinct = None
        data = self.value_bytes(column if distinct is None else distinct)
        slots: dict[bytes, int] = {}  # by the bytes after NFC: two spellings, one hashing
        table: list[NDArray[np.uint64]] = []
        for value in data:
            if value not in slots:
                slots[value] = len(table)
                table.append(level_keys(value, levels, salt))
        if not table:
            return np.empty((0, levels), dtype=np.uint64)
        rows = np.fromiter(map(slots.__getitem__, data), dtype=np.int64, count=len(data))
        if distinct is not None:
            position = {value: i for i, value in enumerate(distinct)}
            rows = rows[np.fromiter(map(position.__getitem__, column), np.int64, len(column))]
        return np.stack(table)[rows]

    def canonical_value(self, value: Any) -> str:
        """The key of the whole string in hex (its spellings in NFC and NFD are one)."""
        return f"{int(self.encode([value])[0, -1]):016x}"

    def randomizer(self, epsilon: float | None, classes: int = 1) -> PrefixHashing:
        if epsilon is None:
            raise ConfigurationError(f"attribute {self.name!r}: PEM needs an ε")
        if classes != 1:
            raise ConfigurationError(f"attribute {self.name!r}: PEM is not reported by class")
        k = self.hashes or default_hashes(self.max_length, epsilon)
        return PrefixHashing(levels=self.max_length, k=k, epsilon=epsilon)


def level_keys(value: bytes, levels: int, salt: bytes) -> NDArray[np.uint64]:
    """The keys of one value at levels ``1..levels``.

    The prefix keys are digests of ``p`` followed by ever longer prefixes: one running
    keyed BLAKE2b takes a byte per level and is copied to read each digest (the digest
    of a message fed in pieces is the digest of the whole)."""
    complete = hashlib.blake2b(complete_key_bytes(value), digest_size=8, key=salt).digest()
    running = hashlib.blake2b(PREFIX_TAG, digest_size=8, key=salt)
    digests: list[bytes] = []
    for level in range(1, min(len(value), levels + 1)):
        running.update(value[level - 1 : level])
        digests.append(running.copy().digest())
    digests.extend([complete] * (levels - len(digests)))
    return np.frombuffer(b"".join(digests), dtype=">u8").astype(np.uint64)


@dataclass(frozen=True, eq=False)
class PrefixHashing(Randomizer):
    """PEM over ``levels`` one-byte levels, each by FLH with ``k`` functions at ``epsilon``."""

    levels: int
    k: int
    epsilon: float
    level_oracle: LocalHashing = field(init=False)

    def __post_init__(self) -> None:
        if not 1 <= self.levels <= MAX_LEVELS:
            raise ConfigurationError(f"PEM has 1 to {MAX_LEVELS} levels, got {self.levels}")
        oracle = LocalHashing(k=self.k, epsilon=self.epsilon)
        cells = self.levels * self.k * oracle.g
        if cells > MAX_SKETCH_CELLS:
            raise ConfigurationError(
                f"PEM with {self.levels} levels × {self.k} hash functions × {oracle.g} buckets"
                f" keeps {cells} counters, over the {MAX_SKETCH_CELLS} an attribute may;"
                f" lower hashes to at most {MAX_SKETCH_CELLS // (self.levels * oracle.g)}"
            )
        object.__setattr__(self, "level_oracle", oracle)

    @property
    def exact_epsilon(self) -> float:
        """The level oracle's ``ln(p/q)``: the level is drawn independently of the value."""
        return self.level_oracle.exact_epsilon

    @property
    def segment(self) -> Segment:
        return Segment(encoding="prefix-hashed", byte_length=4)

    @property
    def cells(self) -> int:
        """Counters of one level: ``k·g``."""
        return self.k * self.level_oracle.g

    @property
    def stats_layout(self) -> tuple[StatsBlock, ...]:
        return (StatsBlock("counts", "int64", self.levels * self.cells),)

    def published(self) -> dict[str, Any]:
        oracle = self.level_oracle
        return {
            "p": oracle.p,
            "q": oracle.q,
            "hashes": self.k,
            "buckets": oracle.g,
            "levels": self.levels,
        }

    def perturb(self, values: Any, rng: np.random.Generator | None = None) -> NDArray[np.int64]:
        """``(ℓ − 1, j, y)`` per row of level keys."""
        keys = np.asarray(values)
        if keys.ndim != 2 or keys.shape[1] != self.levels or keys.dtype != np.uint64:
            raise InvalidRecordError(f"PEM perturbs an n × {self.levels} array of uint64 keys")
        gen = resolve_rng(rng)
        level = gen.integers(0, self.levels, size=keys.shape[0], dtype=np.int64)
        chosen = keys[np.arange(keys.shape[0]), level]
        return np.column_stack([level, self.level_oracle.perturb(chosen, gen)])

    def pack(self, answers: NDArray[Any]) -> NDArray[np.uint8]:
        out = np.empty((answers.shape[0], 4), dtype=np.uint8)
        out[:, 0] = answers[:, 0]
        out[:, 1:] = self.level_oracle.pack(answers[:, 1:])
        return out

    def unpack(self, segment: NDArray[np.uint8]) -> Unpacked:
        level = segment[:, 0].astype(np.int64)
        inner = self.level_oracle.unpack(segment[:, 1:])
        return Unpacked(
            values=np.column_stack([level, inner.values]),
            bad=np.asarray(inner.bad | (level >= self.levels)),
            problem=f"level ≥ {self.levels}, or {inner.problem}",
        )

    def accumulate(self, answers: NDArray[Any]) -> dict[str, NDArray[Any]]:
        g = self.level_oracle.g
        cells = (answers[:, 0] * self.k + answers[:, 1]) * g + answers[:, 2]
        total = self.levels * self.cells
        return {"counts": np.bincount(cells, minlength=total).astype(np.int64, copy=False)}

    def level_tables(self, stats: Blocks) -> NDArray[np.int64]:
        """The counts of each level (``L × k·g``)."""
        return np.asarray(stats["counts"], dtype=np.int64).reshape(self.levels, self.cells)

    def pooled_tables(self, stats: Blocks) -> NDArray[np.int64]:
        """Row ``m − 1``: the counts of levels ``m..L`` summed (complete keys of ``m``-byte
        strings are reported at exactly those levels)."""
        tables = self.level_tables(stats)
        out: NDArray[np.int64] = np.cumsum(tables[::-1], axis=0)[::-1]
        return out

    def complete_estimates(
        self,
        pooled: NDArray[np.int64],
        lengths: NDArray[np.int64],
        keys: NDArray[np.uint64],
        confidence: float,
    ) -> FrequencyEstimate:
        """Estimates of strings of byte ``lengths`` with complete ``keys``, each from the
        pooled levels ``≥`` its length (``pooled`` from :meth:`pooled_tables`); the
        ``n_{≥m}`` reports there are a uniform share of all ``N``, so the variance adds
        ``f(1 − f)/n_{≥m} · (N − n_{≥m})/(N − 1)`` to FLH's."""
        estimate = np.zeros(keys.size)
        stderr = np.zeros(keys.size)
        n_total = int(pooled[0].sum())
        for length in np.unique(lengths):
            rows = np.flatnonzero(lengths == length)
            table = pooled[length - 1]
            n = int(table.sum())
            if n == 0:
                raise InsufficientReportsError(
                    f"no report fell in the levels that carry strings of {length} bytes yet"
                )
            part = self.level_oracle.estimate_keys({"counts": table}, n, keys[rows], confidence)
            f = np.clip(part.estimate, 0.0, 1.0)
            share = f * (1.0 - f) / n * (n_total - n) / max(n_total - 1, 1)
            estimate[rows], stderr[rows] = part.estimate, np.sqrt(part.stderr**2 + share)
        return FrequencyEstimate.normal(n_total, estimate, stderr, confidence)

    def estimate_values(
        self, stats: Blocks, n: int, encoded: NDArray[Any], confidence: float
    ) -> FrequencyEstimate:
        """Strings named by their level keys (:meth:`PrefixHashingSpec.encode`): a
        string's length is the first level whose key is its complete key."""
        keys = np.asarray(encoded, dtype=np.uint64)
        complete = keys[:, -1]
        lengths = np.argmax(keys == complete[:, None], axis=1).astype(np.int64) + 1
        return self.complete_estimates(self.pooled_tables(stats), lengths, complete, confidence)

    def estimate_stats(self, stats: Blocks, n: int, confidence: float) -> FrequencyEstimate:
        raise InvalidQueryError(
            "an open domain has no list of values to estimate: name the values"
            " (values=...) or ask for its heavy hitters"
        )

    def planned_variance(self) -> PlannedVariance:
        """The frequency estimate of a string of ``L`` bytes (the longest) that nobody
        holds, from the final level alone, where about ``n/L`` reports fall (the levels are
        uniform): FLH's per-report term times ``L`` (to first order in ``1/n``), and FLH's
        collision term per unit of ``F₂``. Its heavy-hitter threshold is
        :meth:`planned_threshold`."""
        oracle = self.level_oracle.planned_variance()
        return replace(
            oracle,
            per_report=self.levels * oracle.per_report,
            parameters={**oracle.parameters, "levels": self.levels},
        )

    def planned_threshold(self, variance: PlannedVariance, n: int) -> float:
        """Discovery's detection threshold (:func:`~ldp_shared.mechanisms.hitter_threshold.
        detection_threshold`) for a string of ``L`` bytes at ``n`` reports, every level's
        standard error ``σ`` that of :meth:`planned_variance` (each level has ``n/L``
        reports, as the final one): bars ``z_keep·σ`` at levels ``1..L−1`` and, for the
        exact final test, its normal approximation ``z·σ`` at the tail ``α/(256·keep·L)``
        of a query of at most :data:`PLANNED_TOP` strings (``keep`` as the search keeps)."""
        sd = math.sqrt(variance.variance(n))
        keep = keep_limit(PLANNED_TOP, self.levels, self.k)
        z_find = NormalDist().inv_cdf(1.0 - FALSE_DISCOVERY / (256 * keep * self.levels))
        return detection_threshold([sd] * (self.levels - 1), sd, z_find * sd)

    def noise_sd(self, table: NDArray[np.int64]) -> float:
        """The standard error of the estimate of a key no device holds, from ``table``."""
        n = int(table.sum())
        if n == 0:
            return math.inf
        oracle = self.level_oracle
        q_star = oracle.q_star
        sampling = q_star * (1.0 - q_star) / (n * (oracle.p - q_star) ** 2)
        collisions = oracle.second_moment(table, n) / ((oracle.g - 1) * oracle.k)
        return math.sqrt(sampling + collisions)
