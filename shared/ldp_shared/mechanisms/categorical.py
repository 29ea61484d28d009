"""What the categorical mechanisms (SUE, OUE, GRR, MASK) share: a value domain, and the
two segment encodings their answers travel in (see ``docs/wire-format.md``).

* ``bits``: ``d`` bits, bit ``j`` for the ``j``-th value, packed most significant bit
  first (``numpy.packbits``'s ``big`` order) into ``ceil(d/8)`` bytes; padding bits zero.
* ``index``: one value index as an unsigned big-endian integer of 1 byte (``d <= 256``)
  or 2 bytes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray
from pydantic import Field, model_validator

from ldp_shared.errors import InvalidRecordError
from ldp_shared.identifiers import MAX_DOMAIN_SIZE, DomainValue
from ldp_shared.kernel import (
    FloatArray,
    FrequencyEstimate,
    estimate_frequencies,
    frequency_variance,
)
from ldp_shared.mechanisms.base import (
    AttributeSpec,
    Blocks,
    PlannedVariance,
    Randomizer,
    Segment,
    StatsBlock,
    Unpacked,
)


class CategoricalSpec(AttributeSpec):
    """An attribute whose value is one of a finite ``domain`` (or, for MASK, a set of them)."""

    domain: list[DomainValue] = Field(min_length=1, max_length=MAX_DOMAIN_SIZE)
    # Declared here (and always serialised, as null) because the specs published before
    # the mechanism registry carried it on every attribute: their config hashes must not
    # change. Only MASK sets it.
    keep_probability: float | None = Field(
        default=None, description="MASK only: probability p of keeping each item bit, in (0.5, 1)"
    )

    @model_validator(mode="after")
    def _check_domain(self) -> CategoricalSpec:
        if len(self.domain) == 1:
            raise ValueError(
                f"attribute {self.name!r}: its domain has one value ({self.domain[0]!r}), so"
                " every report would say the same: it would spend ε and teach nothing;"
                " leave it out"
            )
        if len(set(self.domain)) != len(self.domain):
            seen: set[str] = set()
            dup = next(v for v in self.domain if v in seen or seen.add(v))  # type: ignore[func-returns-value]
            raise ValueError(f"attribute {self.name!r}: duplicate domain value {dup!r}")
        if self.keep_probability is not None and not self.is_basket:
            raise ValueError(f"attribute {self.name!r}: keep_probability is for MASK only")
        return self

    @property
    def values(self) -> list[str]:
        return list(self.domain)

    @cached_property
    def value_lookup(self) -> dict[str, int]:
        """Each domain value's index, built once per spec (a config rebuilds none)."""
        return {value: i for i, value in enumerate(self.domain)}

    @classmethod
    def planned_domain(cls, domain_size: int | None) -> list[AttributeSpec]:
        """One spec per mechanism name over ``domain_size`` placeholder values (what a
        planner-capable subclass's :meth:`AttributeSpec.plan_specs` returns)."""
        if domain_size is None or not 2 <= domain_size <= MAX_DOMAIN_SIZE:
            return []
        domain = [str(i) for i in range(domain_size)]
        return [cls(name="planned", mechanism=m, domain=domain) for m in cls.mechanism_literals()]

    def encode(self, column: Sequence[Any] | NDArray[Any]) -> NDArray[Any]:
        """The index in the domain of every value of ``column``."""
        error = f"attribute {self.name!r}: value {{bad}} is not in its domain"
        return domain_indices(self.domain, column, error, self.value_lookup)


class BitwiseRandomizer(Randomizer):
    """A randomizer over ``d`` cells whose statistic is one count per cell, each the sum of
    an indicator bit reported with ``P(1|true) = p`` and ``P(1|false) = q``.

    Its estimates are the debiased-bit kernel's (:mod:`ldp_shared.kernel`):
    ``f̂ = (S/n - q)/(p - q)`` with variance ``[f p(1-p) + (1-f) q(1-q)] / (n (p-q)²)``.
    """

    d: int
    p: float
    q: float

    @property
    def stats_layout(self) -> tuple[StatsBlock, ...]:
        return (StatsBlock("counts", "int64", self.d),)

    def published(self) -> dict[str, Any]:
        return {"p": self.p, "q": self.q}

    def estimate(
        self, sums: NDArray[np.integer] | FloatArray, n: int, confidence: float = 0.95
    ) -> FrequencyEstimate:
        """Unbiased frequencies (MASK: item supports) from the per-cell counts of ``n``
        reports, with standard errors and normal intervals."""
        return estimate_frequencies(sums, n, self.p, self.q, confidence)

    def variance(self, f: FloatArray, n: int) -> FloatArray:
        """Exact variance of ``f̂`` at true frequencies ``f``."""
        return frequency_variance(f, n, self.p, self.q)

    def estimate_stats(self, stats: Blocks, n: int, confidence: float) -> FrequencyEstimate:
        return self.estimate(stats["counts"], n, confidence)

    def planned_variance(self) -> PlannedVariance:
        """The kernel's variance at ``f = 0``: ``q(1 − q)/(n (p − q)²)`` (Wang et al. 2017,
        Var* of §4)."""
        at_zero = frequency_variance(np.zeros(1), 1, self.p, self.q)
        return PlannedVariance(per_report=float(at_zero[0]))


class BitVectorRandomizer(BitwiseRandomizer):
    """A bitwise randomizer that reports all ``d`` bits (unary encoding, MASK)."""

    @property
    def segment(self) -> Segment:
        return bits_segment(self.d)

    def pack(self, answers: NDArray[Any]) -> NDArray[np.uint8]:
        return pack_rows(answers)

    def unpack(self, segment: NDArray[np.uint8]) -> Unpacked:
        return unpack_bits(segment, self.d)

    def accumulate(self, answers: NDArray[Any]) -> dict[str, NDArray[Any]]:
        return {"counts": answers.sum(axis=0, dtype=np.int64)}


class ValueIndexAnswers(Randomizer):
    """A randomizer that answers one value index of ``d`` (GRR, the exponential mechanism):
    an ``index`` segment, and ``counts[d]`` of the answers as its statistics."""

    d: int

    @property
    def segment(self) -> Segment:
        return index_segment(self.d)

    def pack(self, answers: NDArray[Any]) -> NDArray[np.uint8]:
        return pack_index(answers, self.segment.byte_length)

    def unpack(self, segment: NDArray[np.uint8]) -> Unpacked:
        return unpack_index(segment, self.d)

    def accumulate(self, answers: NDArray[Any]) -> dict[str, NDArray[Any]]:
        return {"counts": np.bincount(answers, minlength=self.d).astype(np.int64)}


def domain_indices(
    domain: Sequence[str],
    values: Sequence[Any] | NDArray[Any],
    error: str,
    lookup: Mapping[str, int] | None = None,
) -> NDArray[np.int64]:
    """The index in ``domain`` of every value (``lookup``: the domain's, if kept).

    A value outside the domain raises :class:`InvalidRecordError` with the message
    ``error.format(bad=repr(value))`` followed by the allowed values (the first
    :data:`LISTED_VALUES` of them). A numpy array of strings is found by binary search
    in the sorted domain; any other column by one dictionary lookup per value, in one
    C-level pass.
    """
    if isinstance(values, np.ndarray) and values.dtype.kind == "U" and values.ndim == 1:
        names = np.asarray(domain, dtype=str)
        order = np.argsort(names)
        ordered = names[order]
        at = np.minimum(np.searchsorted(ordered, values), len(ordered) - 1)
        if bool((ordered[at] == values).all()):
            return order[at].astype(np.int64)
    table = {v: i for i, v in enumerate(domain)} if lookup is None else lookup
    try:
        return np.fromiter(map(table.__getitem__, values), dtype=np.int64, count=len(values))
    except (KeyError, TypeError):
        bad = next(v for v in values if not isinstance(v, str) or v not in table)
        message = f"{error.format(bad=repr(bad))}; {allowed_values(domain)}"
        raise InvalidRecordError(message) from None


LISTED_VALUES = 10
"""How many allowed values an out-of-domain error lists."""


def allowed_values(domain: Sequence[str]) -> str:
    """``allowed: 'a', 'b', … (and 5 more)`` for an error message."""
    listed = ", ".join(map(repr, domain[:LISTED_VALUES]))
    more = len(domain) - LISTED_VALUES
    return f"allowed: {listed}" + (f" (and {more} more)" if more > 0 else "")


def index_width(d: int) -> int:
    """Bytes of a big-endian value index for a domain of ``d`` values."""
    return 1 if d <= 256 else 2


def bits_segment(cells: int) -> Segment:
    return Segment(encoding="bits", byte_length=(cells + 7) // 8)


def index_segment(cells: int) -> Segment:
    return Segment(encoding="index", byte_length=index_width(cells))


def pack_rows(bits: NDArray[np.bool_]) -> NDArray[np.uint8]:
    """``np.packbits(bits, axis=1)``, computed as one flat pack over rows padded to bytes.

    The same bytes (most significant bit first, zero padding) but many times faster
    for short rows, where packing along axis 1 spends its time per row.
    """
    rows, cols = bits.shape
    width = (cols + 7) // 8
    if cols != 8 * width:
        padded = np.zeros((rows, 8 * width), dtype=np.bool_)
        padded[:, :cols] = bits
        bits = padded
    return np.packbits(bits.reshape(-1)).reshape(rows, width)


def unpack_bits(segment: NDArray[np.uint8], cells: int) -> Unpacked:
    """The ``cells`` bits of every row; a row with a padding bit set is bad."""
    bits = np.unpackbits(segment, axis=1)
    return Unpacked(
        values=bits[:, :cells],
        bad=np.asarray(bits[:, cells:].any(axis=1)),
        problem="padding bits are not zero",
    )


def pack_index(values: NDArray[np.int64], width: int) -> NDArray[np.uint8]:
    """Value indices as unsigned big-endian integers of ``width`` bytes."""
    return values.astype(f">u{width}").view(np.uint8).reshape(-1, width)


def read_index(segment: NDArray[np.uint8]) -> NDArray[np.int64]:
    """Unsigned big-endian integers of 1 or 2 bytes per row."""
    index = segment[:, 0].astype(np.int64)
    if segment.shape[1] == 2:
        index = (index << 8) | segment[:, 1]
    return index


def unpack_index(segment: NDArray[np.uint8], cells: int) -> Unpacked:
    """The value index of every row; an index outside ``[0, cells)`` is bad."""
    value = read_index(segment)
    return Unpacked(
        values=value,
        bad=np.asarray(value >= cells),
        problem="value index outside the domain",
    )
