"""Fast local hashing (FLH): frequencies over a domain nobody listed, in 3 bytes a report.

Optimal local hashing (OLH, Wang et al., USENIX Security 2017 §4.4) hashes the value into
``g`` buckets with a hash function of the device's own and reports the bucket by
generalised randomized response. Fast local hashing (Cormode, Maddock and Maple,
"Frequency Estimation under Local Differential Privacy", VLDB 2021 §3.2) draws that
function from a public family of ``k``, so the aggregator keeps ``k × g`` additive counts
instead of the reports, and estimates any value afterwards from them alone.

* **Device.** Key ``x`` of the value (:mod:`ldp_shared.mechanisms.hashing`), a uniform
  ``j ∈ [0, k)``, bucket ``b = h_j(x)``; report ``(j, y)`` with ``y = b`` with
  probability ``p = e^ε/(e^ε + g − 1)`` and each other bucket with ``q = 1/(e^ε + g − 1)``.
  ``g = round(e^ε + 1)`` (OLH's optimum), at least 2 and at most :data:`MAX_BUCKETS`.
* **Privacy.** ``P(j, y | v) = p/k`` or ``q/k``: exact ε = ``ln(p/q) = ε`` whatever the
  family, since some output separates two values whose buckets differ; two values that
  collide under every ``h_j`` give ratio 1.
* **Statistics.** ``N[j, y]``: how many reports said ``(j, y)`` (``k·g`` int64 counters).
* **Estimate** of a value ``v`` with key ``x``: ``C_v = Σ_j N[j, h_j(x)]`` and
  ``f̂_v = (C_v/n − 1/g) / (p − 1/g)``. A report from a device holding ``u ≠ v`` supports
  ``v`` with probability ``q + (p − q)·c(u, v)``, where ``c(u, v)`` is the share of the
  ``k`` functions under which ``u`` and ``v`` collide; over the salt ``E c = 1/g``, so
  ``f̂`` is unbiased over the salt and the perturbation together.
* **Variance** (stated per estimate)::

      Var f̂_v = [f p(1−p) + (1−f) q*(1−q*)] / (n (p − q*)²)       sampling, q* = 1/g
              + (F₂ − f_v²) / ((g − 1) k)                          finite-k collisions

  The first term is OLH's (``≈ 4e^ε/((e^ε − 1)² n)`` at ``g = e^ε + 1``, f small). The
  second is the **collision bias** of the fixed family: for one salt,
  ``bias_v = g/(g−1) · Σ_{u≠v} f_u (c(u, v) − 1/g)``, of mean 0 and variance the term
  above, with ``F₂ = Σ_u f_u²`` estimated from the statistics (:func:`second_moment`).
  It vanishes as ``k`` grows; ``k ≳ F₂·n·g/4`` keeps it below the sampling term.

Segment ``hashed``, 3 bytes: ``j`` as a big-endian ``uint16``, then ``y`` as one byte.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np
from numpy.typing import NDArray
from pydantic import Field, model_validator

from ldp_shared.errors import ConfigurationError, InvalidQueryError, InvalidRecordError
from ldp_shared.identifiers import MAX_DOMAIN_SIZE, DomainValue
from ldp_shared.kernel import FloatArray, FrequencyEstimate, frequency_variance
from ldp_shared.mechanisms._checks import check_epsilon
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
from ldp_shared.mechanisms.categorical import domain_indices
from ldp_shared.mechanisms.grr import grr_probabilities, realised_keep
from ldp_shared.mechanisms.hashing import (
    MAX_STRING_BYTES,
    SALT_PATTERN,
    ValueType,
    buckets,
    hash_keys,
    new_salt,
    normalize_string,
    parse_decimal,
    row_sums,
)
from ldp_shared.rand import resolve_rng

MAX_HASHES = 65_536
"""Most hash functions ``k`` (``j`` travels in two bytes)."""
MAX_BUCKETS = 256
"""Most buckets ``g`` (``y`` travels in one byte). Above ε = ln 255 ≈ 5.5 the sampling
variance exceeds OLH's optimum: 1.05× at ε = 6, 3.4× at ε = 8 (``docs/open-domains.md``)."""
MAX_SKETCH_CELLS = 2**20
"""Most counters ``k·g`` of one attribute (8 MiB of statistics)."""
DEFAULT_HASHES = 1024
"""Default ``k``: the collision term ``F₂/((g−1)k)`` is then below the sampling term up
to ``n ≈ 4k/F₂`` reports (80,000 at F₂ = 0.05); larger collections should raise it."""


def bucket_count(epsilon: float) -> int:
    """``g = round(e^ε + 1)``, clipped to ``[2, MAX_BUCKETS]``."""
    if epsilon >= math.log(MAX_BUCKETS - 1):
        return MAX_BUCKETS
    return max(2, round(math.exp(epsilon) + 1.0))


@register
class LocalHashingSpec(AttributeSpec):
    """A string or integer attribute, its domain declared or ``open``, reported by FLH."""

    mechanism: Literal["flh"]
    estimates_each_value: ClassVar[bool] = True
    domain: Literal["open"] | list[DomainValue] = Field(
        default="open",
        description="'open' (any value of value_type), or the list of the values it may take",
    )
    value_type: ValueType = Field(default="string", description="string or integer (< 2^64)")
    max_length: int = Field(
        default=64,
        ge=1,
        le=MAX_STRING_BYTES,
        description="longest string in bytes of UTF-8, after Unicode NFC normalisation",
    )
    hashes: int = Field(
        default=DEFAULT_HASHES, ge=1, le=MAX_HASHES, description="k, the public hash functions"
    )
    salt: str = Field(
        default_factory=new_salt,
        pattern=SALT_PATTERN,
        description="public 16-byte key of the hash family, hex (drawn at creation if absent)",
    )

    @model_validator(mode="after")
    def _check_domain(self) -> LocalHashingSpec:
        if isinstance(self.domain, list):
            if self.value_type != "string":
                raise ValueError(f"attribute {self.name!r}: a declared domain lists strings")
            if not 2 <= len(self.domain) <= MAX_DOMAIN_SIZE:
                raise ValueError(
                    f"attribute {self.name!r}: a declared domain has 2 to {MAX_DOMAIN_SIZE}"
                    f" values, got {len(self.domain)}; use domain 'open' beyond"
                )
            normal = [normalize_string(v) for v in self.domain]
            if normal != self.domain:
                bad = next(v for v, n in zip(self.domain, normal, strict=True) if v != n)
                raise ValueError(f"attribute {self.name!r}: {bad!r} is not in Unicode NFC")
            if len(set(normal)) != len(normal):
                raise ValueError(f"attribute {self.name!r}: its domain repeats a value")
            too_long = [v for v in normal if len(v.encode("utf-8")) > self.max_length]
            if too_long:
                raise ValueError(
                    f"attribute {self.name!r}: {too_long[0]!r} is longer than max_length"
                    f" ({self.max_length} bytes)"
                )
        return self

    @property
    def values(self) -> list[str]:
        return list(self.domain) if isinstance(self.domain, list) else []

    @classmethod
    def plan_specs(
        cls, domain_size: int | None, lo: float | None, hi: float | None
    ) -> list[AttributeSpec]:
        """Planned over an open domain or a listed one (hashing ignores its size)."""
        if lo is not None or hi is not None:
            return []
        return [cls(name="planned", mechanism=m) for m in cls.mechanism_literals()]

    @property
    def is_open(self) -> bool:
        return not isinstance(self.domain, list)

    def _what(self) -> str:
        return f"attribute {self.name!r}"

    def encode(self, column: Sequence[Any] | NDArray[Any]) -> NDArray[np.uint64]:
        """The 64-bit keys of the values (checked: type, UTF-8, length, domain)."""
        if isinstance(self.domain, list):
            error = f"attribute {self.name!r}: value {{bad}} is not in its domain"
            normal = [normalize_string(v) if isinstance(v, str) else v for v in column]
            index = domain_indices(self.domain, normal, error)
            return self._domain_keys()[index]
        return hash_keys(column, self.salt, self.value_type, self.max_length, self._what())

    def canonical_value(self, value: Any) -> str:
        """Its key in hex: "café" in NFC and in NFD are one value, so one memoised report."""
        return f"{int(self.encode([value])[0]):016x}"

    def parse_candidate(self, text: str) -> Any:
        """A value named in a query, from its text (integers in decimal)."""
        if self.value_type == "integer":
            return parse_decimal(text, self._what())
        return text

    def _domain_keys(self) -> NDArray[np.uint64]:
        return _declared_keys(tuple(self.values), self.salt, self.max_length)

    def randomizer(self, epsilon: float | None, classes: int = 1) -> LocalHashing:
        if epsilon is None:
            raise ConfigurationError(f"attribute {self.name!r}: FLH needs an ε")
        if classes != 1:
            raise ConfigurationError(f"attribute {self.name!r}: FLH is not reported by class")
        domain = self._domain_keys() if isinstance(self.domain, list) else None
        return LocalHashing(k=self.hashes, epsilon=epsilon, domain_keys=domain)


@functools.lru_cache(maxsize=32)
def _declared_keys(domain: tuple[str, ...], salt: str, max_length: int) -> NDArray[np.uint64]:
    """The keys of a declared domain (cached: a config is rebuilt for every batch)."""
    keys = hash_keys(domain, salt, "string", max_length, "domain")
    keys.setflags(write=False)
    return keys


@dataclass(frozen=True, eq=False)
class LocalHashing(Randomizer):
    """FLH with ``k`` public hash functions at privacy ``epsilon``; ``domain_keys`` are the
    keys of a declared domain (``None`` for an open one)."""

    k: int
    epsilon: float
    domain_keys: NDArray[np.uint64] | None = None
    g: int = field(init=False)
    p: float = field(init=False)
    q: float = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        if not 1 <= self.k <= MAX_HASHES:
            raise ConfigurationError(f"FLH needs 1 to {MAX_HASHES} hash functions, got {self.k}")
        g = bucket_count(self.epsilon)
        if self.k * g > MAX_SKETCH_CELLS:
            raise ConfigurationError(
                f"FLH with {self.k} hash functions × {g} buckets keeps {self.k * g} counters,"
                f" over the {MAX_SKETCH_CELLS} an attribute may; lower hashes to at most"
                f" {MAX_SKETCH_CELLS // g}"
            )
        p, q = grr_probabilities(g, self.epsilon)
        object.__setattr__(self, "g", g)
        object.__setattr__(self, "p", p)
        object.__setattr__(self, "q", q)

    @property
    def exact_epsilon(self) -> float:
        """``ln(p′/q′)``: the ratio of a report's probability under two values whose bucket
        differs under the function the report names, for the probabilities the sampler
        realises: :meth:`perturb` keeps the bucket when a uniform double ``u = m/2^53`` is
        below ``p``, which happens with ``p′ = ⌈p·2^53⌉/2^53``, and moves it to each other
        bucket with ``q′ = (1 − p′)/(g − 1)``. Infinite once ``p′`` reaches 1 (at ε ≳ 37,
        where ``p`` rounds to 1 while ``q`` is still positive)."""
        kept = realised_keep(self.p)
        if kept >= 1.0 or self.q == 0.0:
            return math.inf
        return math.log(kept) - math.log((1.0 - kept) / (self.g - 1))

    @property
    def q_star(self) -> float:
        """``1/g``: the chance that a report supports a value the device does not hold."""
        return 1.0 / self.g

    @property
    def segment(self) -> Segment:
        return Segment(encoding="hashed", byte_length=3)

    @property
    def stats_layout(self) -> tuple[StatsBlock, ...]:
        return (StatsBlock("counts", "int64", self.k * self.g),)

    def published(self) -> dict[str, Any]:
        return {"p": self.p, "q": self.q, "hashes": self.k, "buckets": self.g}

    def perturb(self, values: Any, rng: np.random.Generator | None = None) -> NDArray[np.int64]:
        """``(j, y)`` per key: a uniform hash function and the GRR-perturbed bucket."""
        keys = np.asarray(values)
        if keys.ndim != 1 or keys.dtype != np.uint64:
            raise InvalidRecordError("FLH perturbs a 1-d array of uint64 keys")
        noise = self.draw_noise(keys.size, resolve_rng(rng))
        j, rank = noise[:, 0], noise[:, 1]
        true = buckets(keys, j, self.g)
        return np.stack([j, np.where(rank < 0, true, rank + (rank >= true))], axis=1)

    def draw_noise(self, n: int, rng: np.random.Generator) -> NDArray[np.int64]:
        """The randomness of ``n`` answers, drawn before the keys are known: per answer
        the hash index ``j`` (uniform over ``k``) and ``-1`` to keep the true bucket
        (probability ``p``), else the rank ``r ∈ [0, g − 2]`` of the reported bucket
        among the ``g − 1`` others (uniform; the bucket is ``r + (r ≥ true)``)."""
        j = rng.integers(0, self.k, size=n, dtype=np.int64)
        keep = rng.random(n) < self.p
        other = rng.integers(0, self.g - 1, size=n, dtype=np.int64)
        return np.stack([j, np.where(keep, -1, other)], axis=1)

    def pack(self, answers: NDArray[Any]) -> NDArray[np.uint8]:
        out = np.empty((answers.shape[0], 3), dtype=np.uint8)
        out[:, 0] = answers[:, 0] >> 8
        out[:, 1] = answers[:, 0] & 0xFF
        out[:, 2] = answers[:, 1]
        return out

    def unpack(self, segment: NDArray[np.uint8]) -> Unpacked:
        j = (segment[:, 0].astype(np.int64) << 8) | segment[:, 1]
        y = segment[:, 2].astype(np.int64)
        return Unpacked(
            values=np.stack([j, y], axis=1),
            bad=np.asarray((j >= self.k) | (y >= self.g)),
            problem=f"hash index ≥ {self.k} or bucket ≥ {self.g}",
        )

    def accumulate(self, answers: NDArray[Any]) -> dict[str, NDArray[Any]]:
        cells = answers[:, 0] * self.g + answers[:, 1]
        counts = np.bincount(cells, minlength=self.k * self.g)
        return {"counts": counts.astype(np.int64, copy=False)}

    def supports(self, counts: NDArray[np.int64], keys: NDArray[np.uint64]) -> NDArray[np.int64]:
        """``C_v = Σ_j N[j, h_j(x_v)]`` for each key."""
        table = np.asarray(counts, dtype=np.int64).reshape(self.k, self.g)
        out: NDArray[np.int64] = row_sums(table, keys)
        return out

    def second_moment(self, counts: NDArray[np.int64], n: int) -> float:
        """An estimate of ``F₂ = Σ_u f_u²`` from the statistics alone.

        Two reports naming the same ``j`` fall in the same bucket with probability
        ``s₁ = p² + (g−1)q²`` when their keys collide under ``h_j`` and
        ``s₀ = 2pq + (g−2)q²`` otherwise (``s₁ − s₀ = (p−q)²``); keys collide with
        probability ``F₂ + (1 − F₂)/g``. The share ``ρ`` of same-bucket pairs among
        same-function pairs is therefore debiased twice; clipped to ``[0, 1]``."""
        table = np.asarray(counts, dtype=np.float64).reshape(self.k, self.g)
        per_function = table.sum(axis=1)
        pairs = float((per_function * (per_function - 1.0)).sum())
        if n < 2 or pairs <= 0.0:
            return 1.0
        rho = float((table * (table - 1.0)).sum()) / pairs
        p, q, g = self.p, self.q, self.g
        s0 = 2.0 * p * q + (g - 2) * q * q
        collide = (rho - s0) / (p - q) ** 2
        return min(1.0, max(0.0, (collide - 1.0 / g) / (1.0 - 1.0 / g)))

    def estimate_keys(
        self, stats: Blocks, n: int, keys: NDArray[np.uint64], confidence: float
    ) -> FrequencyEstimate:
        """Estimates of the values with these keys, with the variance of the module
        docstring (sampling plus finite-k collisions) and normal intervals."""
        counts = np.asarray(stats["counts"], dtype=np.int64)
        support = self.supports(counts, np.asarray(keys, dtype=np.uint64))
        q_star = self.q_star
        f_hat: FloatArray = (support / n - q_star) / (self.p - q_star)
        sampling = frequency_variance(f_hat, n, self.p, q_star)
        f2 = self.second_moment(counts, n)
        collisions = np.maximum(f2 - np.clip(f_hat, 0.0, 1.0) ** 2, 0.0) / ((self.g - 1) * self.k)
        return FrequencyEstimate.normal(n, f_hat, np.sqrt(sampling + collisions), confidence)

    def estimate_values(
        self, stats: Blocks, n: int, encoded: NDArray[Any], confidence: float
    ) -> FrequencyEstimate:
        return self.estimate_keys(stats, n, encoded, confidence)

    def planned_variance(self) -> PlannedVariance:
        """The module docstring's variance of a value nobody holds (``f_v = 0``): OLH's
        sampling term ``q*(1 − q*)/(n (p − q*)²)`` and the collision term
        ``F₂/((g − 1) k)``, which n does not shrink, stated per unit of ``F₂`` (the planner
        puts in the query's ``F₂``, by default the worst case 1)."""
        sampling = float(frequency_variance(np.zeros(1), 1, self.p, self.q_star)[0])
        return PlannedVariance(
            per_report=sampling,
            collision=1.0 / ((self.g - 1) * self.k),
            parameters={"hashes": self.k, "buckets": self.g},
        )

    def estimate_stats(self, stats: Blocks, n: int, confidence: float) -> FrequencyEstimate:
        if self.domain_keys is None:
            raise InvalidQueryError(
                "an open domain has no list of values to estimate: name the values"
                " (values=...) or ask for its heavy hitters"
            )
        return self.estimate_keys(stats, n, self.domain_keys, confidence)
