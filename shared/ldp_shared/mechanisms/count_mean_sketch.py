"""Hadamard count-mean sketch (HCMS): frequencies over an open domain, in 5 bytes a report.

Apple's Differential Privacy Team, "Learning with Privacy at Scale" (Apple Machine
Learning Journal, 2017), the Hadamard variant of its count-mean sketch: the value is
hashed by one of ``k`` public functions into ``m`` columns, and the device sends one
randomised coefficient of the Hadamard transform of that column's indicator. The
aggregator keeps the ``k × m`` signed sums and estimates any named value from them.

* **Device.** Key ``x`` of the value (:mod:`ldp_shared.mechanisms.hashing`, the family
  FLH uses), a uniform ``j ∈ [0, k)``, column ``c = h_j(x) ∈ [0, m)``, a uniform Hadamard
  row ``l ∈ [0, m)`` and its sign ``b = H[l, c] = (−1)^popcount(l & c)``; report
  ``(j, l, y)`` with ``y = b`` with probability ``p = e^ε/(e^ε + 1)``, else ``−b``
  (``q = 1 − p``).
* **Privacy.** ``P(j, l, y | v) = p/(km)`` or ``q/(km)``. Two values whose columns
  differ under some ``h_j`` differ in sign on some row ``l`` (distinct Hadamard rows), so
  the exact ε is ``ln(p/q) = ε`` (of the realised keep probability, see
  :attr:`CountMeanSketch.exact_epsilon`); values colliding under every ``h_j`` give 1.
* **Statistics.** ``T[j, l] = Σ y`` over the reports naming ``(j, l)`` (``k·m`` int64).
* **Estimate** of a value ``v``: the sketch rows ``M_j = FWHT(T[j]) / (p − q)`` (one
  transform of the table), then::

      f̂_v = m/(m − 1) · ( (1/n) Σ_j M_j[h_j(v)] − 1/m )

  ``Σ_j M_j[h_j(v)] = Σ_i z_i`` with the debiased report ``z = y·H[l, h_j(v)]/(p − q)``
  (``z² = 1/(p − q)²``). Given ``j``, ``E[y | l] = (p − q)·H[l, c]`` and
  ``E_l H[l, c]·H[l, c'] = [c = c']``, so ``E z = [h_j(u) = h_j(v)]`` for a device
  holding ``u``, and ``E (1/n)Σ z = f_v + Σ_{u≠v} f_u c(u, v)``, ``c(u, v)`` the share of
  the ``k`` functions under which ``u`` and ``v`` collide. Over the salt ``E c = 1/m``:
  ``E (1/n)Σ z = f_v + (1 − f_v)/m``, and ``f̂_v`` is **exactly unbiased** over the salt
  and the perturbation together.
* **Variance** (stated per estimate, over the salt and the perturbation)::

      Var f̂_v = (m/(m−1))² · [1/(p−q)² − f − (1−f)·(1/m² + (m−1)/(m²k))] / n   sampling
              + (F₂ − f_v²) / ((m − 1) k)                              finite-k collisions

  The first term: the reports are independent, each ``z`` has second moment
  ``1/(p−q)²`` and mean ``c(u_i, v)``, and ``E c² = 1/m² + (m−1)/(m²k)`` over the salt
  for ``u ≠ v`` (``c = 1`` for ``u = v``). The second is the variance of the salt's
  **collision bias** ``m/(m−1) · Σ_{u≠v} f_u (c(u, v) − 1/m)``: mean 0, the ``c(u, ·)``
  uncorrelated, ``Var c = (m−1)/(m²k)``. ``F₂ = Σ_u f_u²`` is estimated from the table
  alone (:meth:`CountMeanSketch.second_moment`, FLH's idea: two reports with the same
  ``(j, l)`` have ``E y y′ = (p−q)²·P(collide)``), clipped to ``[0, 1]``.

Segment ``hcms``, 5 bytes: ``j`` and ``l`` as big-endian ``uint16``, then one byte ``1``
for ``y = +1`` and ``0`` for ``y = −1``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np
from numpy.typing import NDArray
from pydantic import Field, model_validator

from ldp_shared.errors import ConfigurationError, InvalidQueryError, InvalidRecordError
from ldp_shared.kernel import FloatArray, FrequencyEstimate
from ldp_shared.mechanisms._checks import check_epsilon
from ldp_shared.mechanisms.base import (
    Blocks,
    PlannedVariance,
    Randomizer,
    Segment,
    StatsBlock,
    Unpacked,
    register,
)
from ldp_shared.mechanisms.grr import realised_keep
from ldp_shared.mechanisms.hadamard import parity, sign_probabilities
from ldp_shared.mechanisms.hashing import buckets, row_sums
from ldp_shared.mechanisms.local_hashing import (
    MAX_HASHES,
    MAX_SKETCH_CELLS,
    LocalHashingSpec,
)
from ldp_shared.rand import resolve_rng

MAX_COLUMNS = 65_536
"""Most columns ``m`` (``l`` travels in two bytes)."""
DEFAULT_COLUMNS = 1024
"""Default ``m``: the collision term ``F₂/((m−1)k)`` is then negligible at ``k = 1024``."""


def fwht_rows(table: NDArray[np.float64]) -> NDArray[np.float64]:
    """:func:`~ldp_shared.mechanisms.hadamard.fwht` of every row of a ``k × m`` table at
    once: the same butterflies, each pass over the whole table (one numpy operation per
    pass instead of per row and pass)."""
    out = np.array(table, dtype=np.float64, copy=True)
    rows, size = out.shape
    half = 1
    while half < size:
        pairs = out.reshape(rows, -1, 2, half)
        top, bottom = pairs[:, :, 0, :], pairs[:, :, 1, :]
        top += bottom  # (a, b) → (a + b, a − b): a + b − 2b
        bottom *= -2
        bottom += top
        half *= 2
    return out


@register
class CountMeanSketchSpec(LocalHashingSpec):
    """A string or integer attribute of an open domain, reported by HCMS. Its fields are
    FLH's (value type, length, ``hashes``, salt) plus ``columns``; the domain is open."""

    mechanism: Literal["hcms"]  # type: ignore[assignment]
    estimates_each_value: ClassVar[bool] = True
    domain: Literal["open"] = Field(default="open", description="'open': any value of value_type")
    columns: int = Field(
        default=DEFAULT_COLUMNS,
        ge=2,
        le=MAX_COLUMNS,
        description="m, the sketch's columns (a power of two; hashes × columns ≤ 2^20)",
    )

    @model_validator(mode="after")
    def _check_columns(self) -> CountMeanSketchSpec:
        if self.columns & (self.columns - 1):
            raise ValueError(f"attribute {self.name!r}: columns must be a power of two")
        if self.hashes * self.columns > MAX_SKETCH_CELLS:
            raise ValueError(
                f"attribute {self.name!r}: {self.hashes} hashes × {self.columns} columns is"
                f" over the {MAX_SKETCH_CELLS} counters an attribute may keep"
            )
        return self

    def randomizer(  # type: ignore[override]
        self, epsilon: float | None, classes: int = 1
    ) -> CountMeanSketch:
        if epsilon is None:
            raise ConfigurationError(f"attribute {self.name!r}: HCMS needs an ε")
        if classes != 1:
            raise ConfigurationError(f"attribute {self.name!r}: HCMS is not reported by class")
        return CountMeanSketch(k=self.hashes, m=self.columns, epsilon=epsilon)


@dataclass(frozen=True, eq=False)
class CountMeanSketch(Randomizer):
    """HCMS with ``k`` public hash functions into ``m`` columns at privacy ``epsilon``."""

    k: int
    m: int
    epsilon: float
    p: float = field(init=False)
    q: float = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        if not 1 <= self.k <= MAX_HASHES:
            raise ConfigurationError(f"HCMS needs 1 to {MAX_HASHES} hash functions, got {self.k}")
        if not 2 <= self.m <= MAX_COLUMNS or self.m & (self.m - 1):
            raise ConfigurationError(
                f"HCMS needs a power of two from 2 to {MAX_COLUMNS} columns, got {self.m}"
            )
        if self.k * self.m > MAX_SKETCH_CELLS:
            raise ConfigurationError(
                f"HCMS with {self.k} hash functions × {self.m} columns keeps {self.k * self.m}"
                f" counters, over the {MAX_SKETCH_CELLS} an attribute may"
            )
        p, q = sign_probabilities(self.epsilon)
        object.__setattr__(self, "p", p)
        object.__setattr__(self, "q", q)

    @property
    def exact_epsilon(self) -> float:
        """``ln(p′/(1 − p′))`` for the keep probability the sampler realises: :meth:`perturb`
        keeps the sign when a uniform double ``u = i/2^53`` is below ``p``, which happens
        with ``p′ = ⌈p·2^53⌉/2^53``. Infinite once ``p′`` reaches 1 (ε ≳ 37)."""
        kept = realised_keep(self.p)
        if kept >= 1.0:
            return math.inf
        return math.log(kept) - math.log1p(-kept)

    @property
    def segment(self) -> Segment:
        return Segment(encoding="hcms", byte_length=5)

    @property
    def stats_layout(self) -> tuple[StatsBlock, ...]:
        return (StatsBlock("signs", "int64", self.k * self.m),)

    def published(self) -> dict[str, Any]:
        return {"p": self.p, "q": self.q, "hashes": self.k, "columns": self.m}

    def perturb(self, values: Any, rng: np.random.Generator | None = None) -> NDArray[np.int64]:
        """``(j, l, y)`` per key, ``y ∈ {−1, +1}``: a uniform function, a uniform Hadamard
        row and the sign of the value's column on it, kept with probability ``p``."""
        keys = np.asarray(values)
        if keys.ndim != 1 or keys.dtype != np.uint64:
            raise InvalidRecordError("HCMS perturbs a 1-d array of uint64 keys")
        gen = resolve_rng(rng)
        j = gen.integers(0, self.k, size=keys.size, dtype=np.int64)
        column = buckets(keys, j, self.m)
        row = gen.integers(0, self.m, size=keys.size, dtype=np.int64)
        sign = 1 - 2 * parity(row & column)
        keep = gen.random(keys.size) < self.p
        return np.stack([j, row, np.where(keep, sign, -sign)], axis=1)

    def pack(self, answers: NDArray[Any]) -> NDArray[np.uint8]:
        a = np.asarray(answers, dtype=np.int64)
        out = np.empty((a.shape[0], 5), dtype=np.uint8)
        out[:, 0] = a[:, 0] >> 8
        out[:, 1] = a[:, 0] & 0xFF
        out[:, 2] = a[:, 1] >> 8
        out[:, 3] = a[:, 1] & 0xFF
        out[:, 4] = a[:, 2] > 0
        return out

    def unpack(self, segment: NDArray[np.uint8]) -> Unpacked:
        raw = segment.astype(np.int64)
        j = (raw[:, 0] << 8) | raw[:, 1]
        row = (raw[:, 2] << 8) | raw[:, 3]
        sign = raw[:, 4]
        return Unpacked(
            values=np.stack([j, row, 2 * np.minimum(sign, 1) - 1], axis=1),
            bad=np.asarray((j >= self.k) | (row >= self.m) | (sign > 1)),
            problem=f"hash index ≥ {self.k}, Hadamard row ≥ {self.m} or sign byte > 1",
        )

    def accumulate(self, answers: NDArray[Any]) -> dict[str, NDArray[Any]]:
        a = np.asarray(answers, dtype=np.int64).reshape(-1, 3)
        cells = a[:, 0] * self.m + a[:, 1]
        size = self.k * self.m
        plus = np.bincount(cells[a[:, 2] > 0], minlength=size)
        minus = np.bincount(cells[a[:, 2] <= 0], minlength=size)
        return {"signs": (plus - minus).astype(np.int64)}

    def sketch(self, signs: NDArray[np.int64]) -> NDArray[np.float64]:
        """``M[j] = FWHT(T[j]) / (p − q)``, the ``k × m`` count-mean sketch (float64 is
        exact for the transform: every partial sum is an integer of magnitude ≤ n)."""
        table = np.asarray(signs, dtype=np.float64).reshape(self.k, self.m)
        out: NDArray[np.float64] = fwht_rows(table) / (self.p - self.q)
        return out

    def supports(self, sketch: NDArray[np.float64], keys: NDArray[np.uint64]) -> FloatArray:
        """``Σ_j M[j, h_j(x_v)]`` for each key."""
        out: FloatArray = row_sums(sketch.reshape(self.k, self.m), keys)
        return out

    def second_moment(self, signs: NDArray[np.int64], n: int) -> float:
        """An estimate of ``F₂ = Σ_u f_u²`` from the table alone.

        ``Σ T[j, l]² − n`` sums ``y y′`` over the ordered pairs of distinct reports naming
        the same ``(j, l)`` (``y² = 1``). A pair does so with probability ``1/(km)`` and
        then ``E y y′ = (p − q)²·[h_j(u) = h_j(u′)]``; the values collide with probability
        ``F₂ + (1 − F₂)/m`` (over the salt; ``F₂`` here of pairs of distinct reports).
        Debiased twice and clipped to ``[0, 1]``; 1 (the bound) without pairs."""
        if n < 2:
            return 1.0
        table = np.asarray(signs, dtype=np.float64)
        pairs = float(np.dot(table, table)) - n
        collide = pairs * self.k * self.m / (n * (n - 1.0) * (self.p - self.q) ** 2)
        return min(1.0, max(0.0, (collide - 1.0 / self.m) / (1.0 - 1.0 / self.m)))

    def variance(self, f_hat: FloatArray, n: int, f2: float) -> FloatArray:
        """The module docstring's variance at the (clipped) estimates and ``F₂``."""
        f = np.clip(np.asarray(f_hat, dtype=np.float64), 0.0, 1.0)
        m, k = float(self.m), float(self.k)
        other = 1.0 / m**2 + (m - 1.0) / (m * m * k)
        bracket = 1.0 / (self.p - self.q) ** 2 - f - (1.0 - f) * other
        sampling = (m / (m - 1.0)) ** 2 * bracket / n
        collisions = np.maximum(f2 - f**2, 0.0) / ((m - 1.0) * k)
        out: FloatArray = sampling + collisions
        return out

    def planned_variance(self) -> PlannedVariance:
        """The module docstring's variance of one queried value nobody holds (``f_v = 0``),
        over the salt and the perturbation (Apple 2017's HCMS with this module's finite
        ``k × m`` terms): per report ``(m/(m−1))²·[1/(p−q)² − 1/m² − (m−1)/(m²k)]``, and
        the collision term ``F₂/((m − 1) k)`` per unit of ``F₂``, which n does not shrink."""
        m, k = float(self.m), float(self.k)
        other = 1.0 / m**2 + (m - 1.0) / (m * m * k)
        per_report = (m / (m - 1.0)) ** 2 * (1.0 / (self.p - self.q) ** 2 - other)
        return PlannedVariance(
            per_report=per_report,
            collision=1.0 / ((m - 1.0) * k),
            parameters={"hashes": self.k, "columns": self.m},
        )

    def estimate_keys(
        self, stats: Blocks, n: int, keys: NDArray[np.uint64], confidence: float
    ) -> FrequencyEstimate:
        """Estimates of the values with these keys, with the variance of the module
        docstring and normal intervals."""
        if n <= 0:
            raise InvalidQueryError("no reports to estimate from")
        signs = np.asarray(stats["signs"], dtype=np.int64)
        support = self.supports(self.sketch(signs), np.asarray(keys, dtype=np.uint64))
        m = float(self.m)
        f_hat: FloatArray = m / (m - 1.0) * (support / n - 1.0 / m)
        stderr: FloatArray = np.sqrt(self.variance(f_hat, n, self.second_moment(signs, n)))
        return FrequencyEstimate.normal(n, f_hat, stderr, confidence)

    def estimate_values(
        self, stats: Blocks, n: int, encoded: NDArray[Any], confidence: float
    ) -> FrequencyEstimate:
        return self.estimate_keys(stats, n, encoded, confidence)

    def estimate_stats(self, stats: Blocks, n: int, confidence: float) -> FrequencyEstimate:
        raise InvalidQueryError(
            "an open domain has no list of values to estimate: name the values"
            " (values=...) or ask for its heavy hitters"
        )
