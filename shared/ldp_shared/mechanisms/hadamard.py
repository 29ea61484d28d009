"""Hadamard randomized response (HRR): frequencies over up to 2^22 values in 3 bytes.

Cormode, Kulkarni and Srivastava, "Marginal Release Under Local Differential Privacy"
(SIGMOD 2018), report one randomly chosen Hadamard coefficient of the one-hot vector by
randomized response; Cormode, Maddock and Maple, "Frequency Estimation under Local
Differential Privacy" (VLDB 2021 §3.3), analyse it as a frequency oracle.

* **Domain.** ``d`` values, listed (``domain``) or the integers ``0 … d−1``
  (``domain_size``); ``D`` is the least power of two ``≥ d`` and
  ``H[j, v] = (−1)^{popcount(j & v)}`` the ``D × D`` Sylvester Hadamard matrix.
* **Device.** Value index ``v``, a uniform row ``j ∈ [0, D)``, the true sign
  ``b = H[j, v]``; report ``(j, y)`` with ``y = b`` with probability
  ``p = e^ε/(e^ε + 1)`` and ``y = −b`` with ``q = 1 − p = 1/(e^ε + 1)``.
* **Privacy.** ``P(j, y | v) = p/D`` or ``q/D``. Two distinct columns of ``H`` differ in
  some row, so the worst ratio is attained: exact ε = ``ln(p/q) = ε``.
* **Statistics.** ``T[j]``: the ``+1`` reports minus the ``−1`` reports naming row ``j``
  (``D`` int64 counters).
* **Estimate.** ``f̂_v = (H T)[v] / (n (p − q))`` for every ``v < d`` from one fast
  Walsh–Hadamard transform of ``T`` (:func:`fwht`, ``O(D log D)``). Report ``i``
  contributes ``z_i = y_i H[j_i, v]/(p − q)``. Given ``j``,
  ``E y = (p − q) H[j, v_i]``, and over the uniform ``j`` the columns of ``H`` are
  orthogonal, ``(1/D) Σ_j H[j, v_i] H[j, v] = [v_i = v]``: so ``E z_i = [v_i = v]`` and
  ``f̂_v`` is unbiased.
* **Variance.** ``z_i² = 1/(p − q)²`` always, so for the ``n`` reporters' values::

      Var f̂_v = (1/n²) Σ_i (1/(p − q)² − [v_i = v]²) = (1/(p − q)² − f_v) / n

  with ``1/(p − q) = (e^ε + 1)/(e^ε − 1)``. Reports of different values are
  uncorrelated (``E z_u z_v = 0`` for ``u ≠ v``). Were the values drawn i.i.d. from
  ``f``, the variance of ``f̂`` about ``f`` would add ``f_v(1 − f_v)/n``, giving
  ``(1/(p − q)² − f_v²)/n``. Standard errors plug in ``f̂`` clipped to ``[0, 1]``;
  intervals are normal.

Segment ``hadamard``, 3 bytes: a big-endian 24-bit ``2j + s``, ``s = 1`` for ``y = +1``
and ``0`` for ``y = −1`` (so ``D ≤ 2^23``); a row ``j ≥ D`` is refused.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from pydantic import Field, model_validator

from ldp_shared.errors import ConfigurationError, InvalidQueryError, InvalidRecordError
from ldp_shared.identifiers import MAX_DOMAIN_SIZE, DomainValue
from ldp_shared.kernel import FloatArray, FrequencyEstimate
from ldp_shared.mechanisms._checks import check_epsilon, check_indices
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
from ldp_shared.mechanisms.hashing import parse_decimal
from ldp_shared.rand import resolve_rng

MAX_INTEGER_DOMAIN = 2**22
"""Largest ``domain_size`` (``D`` int64 counters: 32 MiB of statistics at most)."""


def rows_for(d: int) -> int:
    """``D``: the least power of two ``≥ d``."""
    return 1 << (d - 1).bit_length()


def sign_probabilities(epsilon: float) -> tuple[float, float]:
    """``(p, q)``: the true sign is kept with ``p = e^ε/(e^ε + 1)``, flipped with
    ``q = 1/(e^ε + 1)``; both written with ``e^{−ε}`` so that a large ε stays finite."""
    if math.isinf(epsilon):
        return 1.0, 0.0
    tail = math.exp(-epsilon)
    return 1.0 / (1.0 + tail), tail / (1.0 + tail)


def parity(x: NDArray[np.int64]) -> NDArray[np.int64]:
    """``popcount(x) mod 2`` of non-negative integers below ``2^32``, by folding the bits
    with exclusive or (vectorised; the same on every numpy version)."""
    x = x ^ (x >> 16)
    x ^= x >> 8
    x ^= x >> 4
    x ^= x >> 2
    x ^= x >> 1
    out: NDArray[np.int64] = x & 1
    return out


def fwht(values: NDArray[Any]) -> NDArray[Any]:
    """``H·x`` for the Sylvester Hadamard matrix of order ``len(x)`` (a power of two), by the
    fast Walsh–Hadamard transform: ``log2 D`` vectorised butterfly passes on a copy."""
    out = np.array(values, copy=True)
    size = out.size
    if size & (size - 1) or out.ndim != 1:
        raise ValueError(f"the transform needs a vector whose length is a power of two: {size}")
    half = 1
    while half < size:
        pairs = out.reshape(-1, 2, half)
        top, bottom = pairs[:, 0, :], pairs[:, 1, :]
        top += bottom  # (a, b) → (a + b, a − b): a + b − 2b
        bottom *= -2
        bottom += top
        half *= 2
    return out


@register
class HadamardSpec(AttributeSpec):
    """A categorical attribute, its values listed or the integers ``0 … d−1``, reported by
    Hadamard randomized response."""

    mechanism: Literal["hadamard"]
    domain: list[DomainValue] | None = Field(
        default=None, description="the values it may take (2 to 65,536); or give domain_size"
    )
    domain_size: int | None = Field(
        default=None,
        strict=True,
        ge=2,
        le=MAX_INTEGER_DOMAIN,
        description="d: the values are the integers 0 to d−1 (2 ≤ d ≤ 2^22); or give domain",
    )

    @model_validator(mode="after")
    def _check_domain(self) -> HadamardSpec:
        if (self.domain is None) == (self.domain_size is None):
            raise ValueError(
                f"attribute {self.name!r}: give exactly one of domain (a list of values) and"
                " domain_size (the integers 0 to d−1)"
            )
        if self.domain is not None:
            if not 2 <= len(self.domain) <= MAX_DOMAIN_SIZE:
                raise ValueError(
                    f"attribute {self.name!r}: a listed domain has 2 to {MAX_DOMAIN_SIZE}"
                    f" values, got {len(self.domain)}; use domain_size for integers beyond"
                )
            seen: set[str] = set()
            for value in self.domain:
                if value in seen:
                    raise ValueError(f"attribute {self.name!r}: duplicate domain value {value!r}")
                seen.add(value)
        return self

    @classmethod
    def plan_specs(
        cls, domain_size: int | None, lo: float | None, hi: float | None
    ) -> list[AttributeSpec]:
        if domain_size is None or not 2 <= domain_size <= MAX_INTEGER_DOMAIN:
            return []
        return [cls(name="planned", mechanism="hadamard", domain_size=domain_size)]

    @property
    def d(self) -> int:
        """The number of values."""
        if self.domain is not None:
            return len(self.domain)
        assert self.domain_size is not None  # the validator requires one of the two
        return self.domain_size

    @property
    def values(self) -> list[str]:
        return [] if self.domain is None else list(self.domain)

    @property
    def is_open(self) -> bool:
        """Integers: too many to list, so a query names the values it estimates."""
        return self.domain is None

    def parse_candidate(self, text: str) -> Any:
        """A value named in a query: a decimal integer with ``domain_size``."""
        if self.domain is not None:
            return text
        return parse_decimal(text, f"attribute {self.name!r}")

    def _outside(self, shown: str) -> str:
        return f"attribute {self.name!r}: value {shown} is outside 0 to {self.d - 1}"

    def encode(self, column: Sequence[Any] | NDArray[Any]) -> NDArray[np.int64]:
        """The value index of every value: its place in ``domain``, or the integer itself."""
        if self.domain is not None:
            error = f"attribute {self.name!r}: value {{bad}} is not in its domain"
            return domain_indices(self.domain, column, error)
        if isinstance(column, np.ndarray) and column.ndim == 1 and column.dtype.kind in "iu":
            outside = (column < 0) | (column >= self.d)
            if outside.any():
                raise InvalidRecordError(self._outside(repr(int(column[outside][0]))))
            return column.astype(np.int64)
        for value in column:
            if isinstance(value, bool) or not isinstance(value, int | np.integer):
                raise InvalidRecordError(
                    f"attribute {self.name!r}: value {value!r} is not an integer"
                    f" (its values are the integers 0 to {self.d - 1})"
                )
            if not 0 <= value < self.d:
                raise InvalidRecordError(self._outside(repr(int(value))))
        return np.fromiter(column, dtype=np.int64, count=len(column))

    def randomizer(self, epsilon: float | None, classes: int = 1) -> HadamardResponse:
        if epsilon is None:
            raise ConfigurationError(f"attribute {self.name!r}: HRR needs an ε")
        if classes != 1:
            raise ConfigurationError(f"attribute {self.name!r}: HRR is not reported by class")
        return HadamardResponse(d=self.d, epsilon=epsilon)


@dataclass(frozen=True)
class HadamardResponse(Randomizer):
    """HRR over ``d`` values at privacy ``epsilon``."""

    d: int
    epsilon: float
    rows: int = field(init=False)
    p: float = field(init=False)
    q: float = field(init=False)

    def __post_init__(self) -> None:
        if int(self.d) != self.d or not 2 <= self.d <= MAX_INTEGER_DOMAIN:
            raise ConfigurationError(f"HRR needs 2 to {MAX_INTEGER_DOMAIN} values, got {self.d!r}")
        object.__setattr__(self, "d", int(self.d))
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        p, q = sign_probabilities(self.epsilon)
        object.__setattr__(self, "rows", rows_for(self.d))
        object.__setattr__(self, "p", p)
        object.__setattr__(self, "q", q)

    @property
    def exact_epsilon(self) -> float:
        """``ln(p/q)``: the ratio of ``P(j, y | v)`` between two values whose signs differ
        in row ``j`` (every two values have such a row)."""
        return math.inf if self.q == 0.0 else math.log(self.p) - math.log(self.q)

    @property
    def segment(self) -> Segment:
        return Segment(encoding="hadamard", byte_length=3)

    @property
    def stats_layout(self) -> tuple[StatsBlock, ...]:
        return (StatsBlock("signs", "int64", self.rows),)

    def published(self) -> dict[str, Any]:
        return {"p": self.p, "q": self.q, "rows": self.rows}

    def perturb(self, values: Any, rng: np.random.Generator | None = None) -> NDArray[np.int64]:
        """``2j + s`` per value: a uniform row ``j`` and its sign, kept with probability
        ``p`` (``s = 1`` for ``+1``)."""
        index = check_indices(values, self.d)
        gen = resolve_rng(rng)
        j = gen.integers(0, self.rows, size=index.size, dtype=np.int64)
        negative = parity(j & index)  # 1 where H[j, v] = −1
        flip = gen.random(index.size) < self.q
        return 2 * j + (negative ^ 1 ^ flip)

    def pack(self, answers: NDArray[Any]) -> NDArray[np.uint8]:
        code = np.asarray(answers, dtype=np.int64)
        return code.astype(">u4").view(np.uint8).reshape(-1, 4)[:, 1:].copy()

    def unpack(self, segment: NDArray[np.uint8]) -> Unpacked:
        raw = segment.astype(np.int64)
        code = (raw[:, 0] << 16) | (raw[:, 1] << 8) | raw[:, 2]
        return Unpacked(
            values=code,
            bad=np.asarray((code >> 1) >= self.rows),
            problem=f"Hadamard row ≥ {self.rows}",
        )

    def accumulate(self, answers: NDArray[Any]) -> dict[str, NDArray[Any]]:
        counts = np.bincount(answers, minlength=2 * self.rows).reshape(self.rows, 2)
        return {"signs": (counts[:, 1] - counts[:, 0]).astype(np.int64)}

    def variance(self, f: FloatArray, n: int) -> FloatArray:
        """``(1/(p − q)² − f)/n``, the exact variance of ``f̂`` at frequencies ``f``
        (clipped to ``[0, 1]``)."""
        fc = np.clip(np.asarray(f, dtype=np.float64), 0.0, 1.0)
        out: FloatArray = (1.0 / (self.p - self.q) ** 2 - fc) / n
        return out

    def planned_variance(self) -> PlannedVariance:
        """:meth:`variance` at ``f = 0``: ``1/(n (p − q)²)``."""
        return PlannedVariance(per_report=float(self.variance(np.zeros(1), 1)[0]))

    def _estimate(
        self, stats: Blocks, n: int, index: NDArray[np.int64] | None, confidence: float
    ) -> FrequencyEstimate:
        if n <= 0:
            raise InvalidQueryError("no reports to estimate from")
        # float64 is exact here: every partial sum is an integer of magnitude at most n
        coefficients = fwht(np.asarray(stats["signs"], dtype=np.float64))
        chosen = coefficients[: self.d] if index is None else coefficients[index]
        f_hat: FloatArray = chosen / (n * (self.p - self.q))
        stderr: FloatArray = np.sqrt(self.variance(f_hat, n))
        return FrequencyEstimate.normal(n, f_hat, stderr, confidence)

    def estimate_stats(self, stats: Blocks, n: int, confidence: float) -> FrequencyEstimate:
        return self._estimate(stats, n, None, confidence)

    def estimate_values(
        self, stats: Blocks, n: int, encoded: NDArray[Any], confidence: float
    ) -> FrequencyEstimate:
        return self._estimate(stats, n, check_indices(encoded, self.d), confidence)
