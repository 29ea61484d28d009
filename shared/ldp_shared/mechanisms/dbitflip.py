"""dBitFlipPM: a histogram of a bounded number reported repeatedly, ``"dbitflippm"``.

Ding, Kulkarni and Yekhanin, "Collecting Telemetry Data Privately", NeurIPS 2017, §3
(dBitFlip) and §4 (permanent memoization); deployed in Windows telemetry for counters
such as minutes of use per day. The paper's ``k`` buckets and ``d`` bits are ``buckets``
(``d`` here) and ``bits`` (``b``) of the spec.

* **Bucketing.** A value is clipped into ``[lo, hi]`` and replaced by its bucket among
  ``d`` of equal width, ``[lo + kw, lo + (k+1)w)`` (the last one closed).
* **Device.** The device draws ``b`` distinct buckets ``j₁ < … < j_b`` once (uniform
  among the ``b``-subsets; permanent) and reports, for each, the bit ``1[bucket = j_i]``
  flipped with probability ``φ = 1/(e^{ε/2} + 1)`` (the paper's; ``1/(e^ε + 1)`` when
  ``b = 1``, where only one bit can differ). Its ``b``-bit **bucket vector** takes at most
  ``b + 1`` values (one of the sampled buckets, or none), and the flipped bits are
  memoised per bucket vector: an unchanged value, or a change between two unsampled
  buckets, resends the same bits. Both the sampled buckets and the flips derive from the
  device's secret (:mod:`~ldp_shared.mechanisms.longitudinal`); ``perturb`` draws them
  from the generator, one fresh device per row.
* **Privacy.** The sampled buckets do not depend on the value. Two values differ in at
  most two of the reported bits, each flipped independently, so one report is exactly
  ``2·ln((1 − φ)/φ)``-LDP (``ln((1 − φ)/φ)`` at ``b = 1``), with ``φ`` as the sampler
  realises it (``⌈φ·2^53⌉/2^53``): ε, or a hair below. All reports of one bucket vector
  repeat one response, so ε∞ per distinct bucket vector is that same ε; a device whose
  bucket vector takes ``c ≤ min(m + 1, b + 1)`` values over its life (``m`` changes of
  its value) is ``c·ε``-LDP, however many rounds it reports (``docs/longitudinal.md``).
* **Statistics.** Per bucket ``v``: ``n_v``, the reports that sampled it, and ``S_v``,
  those whose bit for it is 1 (two int64 blocks, ``sampled[d]`` and ``ones[d]``).
* **Estimate.** ``p = 1 − φ``, ``q = φ``; the ratio estimator over the reports that
  sampled ``v`` (the paper's ``(d/(nb))Σ`` replaces ``n_v`` by its expectation ``nb/d``;
  the ratio removes the variance of ``n_v``)::

      f̂_v = (S_v/n_v − q) / (p − q)
      Var f̂_v = q(1 − q) / (n_v (p − q)²)  +  f_v(1 − f_v)(n − n_v) / (n_v (n − 1))

  Given ``n_v``, the reporters that sampled ``v`` are a uniform sample of the ``n`` (each
  samples it with probability ``b/d``, independently of the values), so ``f̂_v`` is
  unbiased for the share ``f_v`` among the ``n`` and its variance is the channel's
  (``p(1 − p) = q(1 − q)``: flat in ``f``) plus that sample's finite-population term.
  Released with score intervals on that curve; refused while some bucket has ``n_v = 0``.

Segment ``bucket-bits``: the ``b`` sampled buckets, strictly increasing, as big-endian
integers of 1 byte (``d ≤ 256``) or 2, then the ``b`` bits packed most significant first
into ``⌈b/8⌉`` bytes (padding zero).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from pydantic import Field, model_validator

from ldp_shared.errors import ConfigurationError, InsufficientReportsError
from ldp_shared.intervals import VarianceCurve
from ldp_shared.kernel import FloatArray, FrequencyEstimate, bounds_problem, z_value
from ldp_shared.mechanisms._checks import check_epsilon, check_indices
from ldp_shared.mechanisms.base import (
    AttributeSpec,
    Blocks,
    PlannedVariance,
    Segment,
    StatsBlock,
    Unpacked,
    register,
)
from ldp_shared.mechanisms.categorical import index_width, pack_rows, unpack_bits
from ldp_shared.mechanisms.grr import realised_keep
from ldp_shared.mechanisms.histogram import PLANNED_BINS, bin_indices, bin_labels
from ldp_shared.mechanisms.longitudinal import (
    LongitudinalRandomizer,
    PermanentMemo,
    one_index,
    prf_uniform_list,
    prf_uniforms,
    value_messages,
)
from ldp_shared.rand import resolve_rng

NAME = "dbitflippm"
MAX_BUCKETS = 1024
"""Most buckets ``d`` (2 bytes per sampled bucket beyond 256)."""
MAX_BITS = 64
"""Most sampled buckets ``b`` per device."""
_SUBSET_CELLS = 2**20
"""Uniforms drawn per step when sampling fresh devices' buckets (8 MiB)."""
_SUBSET_TABLE_ROWS = 4096
"""Fresh devices draw their buckets as a uniform row of the table of all ``b``-subsets
when there are at most this many (``d = 24, b = 2``: 276); above, by partial sorting."""


@register
class DBitFlipSpec(AttributeSpec):
    """A bounded number reported repeatedly, as a histogram over equal buckets."""

    mechanism: Literal["dbitflippm"]
    lo: float = Field(description="lower bound: smaller values are clipped to it on the device")
    hi: float = Field(description="upper bound: larger values are clipped to it on the device")
    buckets: int = Field(ge=2, le=MAX_BUCKETS, description="d: buckets of equal width")
    bits: int = Field(
        ge=1, le=MAX_BITS, description="b: buckets each device samples once and reports a bit of"
    )

    @model_validator(mode="after")
    def _check(self) -> DBitFlipSpec:
        problem = bounds_problem(self.lo, self.hi)
        if problem is not None:
            raise ValueError(f"attribute {self.name!r}: {problem}")
        if self.bits > self.buckets:
            raise ValueError(
                f"attribute {self.name!r}: a device cannot sample {self.bits} of"
                f" {self.buckets} buckets; bits must be at most buckets"
            )
        return self

    @classmethod
    def plan_specs(
        cls, domain_size: int | None, lo: float | None, hi: float | None
    ) -> list[AttributeSpec]:
        """Planned for numbers in ``[lo, hi]`` over :data:`PLANNED_BINS` buckets, one
        period's bucket frequency (:meth:`DBitFlipPM.planned_variance`); the bits are
        chosen at the query's ε (:meth:`plan_at`)."""
        if lo is None or hi is None or domain_size is not None:
            return []
        try:
            return [cls(name="planned", mechanism=NAME, lo=lo, hi=hi, buckets=PLANNED_BINS, bits=1)]
        except ValueError:
            return []

    def plan_at(self, epsilon: float) -> AttributeSpec:
        """The ``b`` of least planned variance at ``epsilon``: ``(d/b)·q(1−q)/(p−q)²``
        falls with ``b`` for ``b ≥ 2`` (each bit at ε/2), so ``b = 1`` (ε per bit) or the
        most (``min(d, 64)``), whichever is lower."""
        most = min(self.buckets, MAX_BITS)
        per_report = {
            b: DBitFlipPM(d=self.buckets, b=b, epsilon=epsilon).planned_variance().per_report
            for b in (1, most)
        }
        return self.model_copy(update={"bits": min(per_report, key=per_report.__getitem__)})

    @property
    def edges(self) -> list[float]:
        return list(np.linspace(self.lo, self.hi, self.buckets + 1))

    @property
    def values(self) -> list[str]:
        """One label per bucket: ``[a, b)``, the last one closed."""
        return bin_labels(self.edges)

    def encode(self, column: Sequence[Any] | NDArray[Any]) -> NDArray[np.int64]:
        """Each value's bucket, after clipping it into ``[lo, hi]``."""
        return bin_indices(self.name, column, self.edges)

    def canonical_value(self, value: Any) -> str:
        """Its bucket: two values in one bucket are one record to memoisation."""
        return str(int(self.encode([value])[0]))

    def randomizer(self, epsilon: float | None, classes: int = 1) -> DBitFlipPM:
        if epsilon is None:
            raise ConfigurationError(f"attribute {self.name!r}: dBitFlipPM needs an ε")
        if classes != 1:
            raise ConfigurationError(f"attribute {self.name!r}: dBitFlipPM cannot join a label")
        return DBitFlipPM(d=self.buckets, b=self.bits, epsilon=epsilon)


@dataclass(frozen=True)
class DBitFlipPM(LongitudinalRandomizer):
    """dBitFlipPM over ``d`` buckets, ``b`` sampled per device, at ε per report."""

    d: int
    b: int
    epsilon: float
    flip: float = field(init=False)

    def __post_init__(self) -> None:
        if not 2 <= self.d <= MAX_BUCKETS or not 1 <= self.b <= min(self.d, MAX_BITS):
            raise ConfigurationError(
                f"dBitFlipPM needs 2 to {MAX_BUCKETS} buckets and 1 to min(buckets,"
                f" {MAX_BITS}) bits, got d = {self.d}, b = {self.b}"
            )
        per_bit = check_epsilon(self.epsilon) / self.differing_bits
        shrink = math.exp(-per_bit)
        object.__setattr__(self, "flip", realised_keep(shrink / (1.0 + shrink)))

    @property
    def differing_bits(self) -> int:
        """How many reported bits two values can change: 2, or 1 when ``b = 1``."""
        return min(self.b, 2)

    @property
    def p(self) -> float:
        """``P(bit = 1)`` for the device's own bucket."""
        return 1.0 - self.flip

    @property
    def q(self) -> float:
        """``P(bit = 1)`` for another sampled bucket."""
        return self.flip

    @property
    def exact_epsilon(self) -> float:
        if self.flip == 0.0:
            return math.inf
        return self.differing_bits * math.log((1.0 - self.flip) / self.flip)

    @property
    def permanent_epsilon(self) -> float:
        """The memoised response of a bucket vector is the report: ε∞ = ε."""
        return self.exact_epsilon

    @property
    def width(self) -> int:
        return index_width(self.d)

    @property
    def segment(self) -> Segment:
        return Segment("bucket-bits", self.b * self.width + (self.b + 7) // 8)

    @property
    def stats_layout(self) -> tuple[StatsBlock, ...]:
        return (StatsBlock("sampled", "int64", self.d), StatsBlock("ones", "int64", self.d))

    def published(self) -> dict[str, Any]:
        return {
            "p": self.p,
            "q": self.q,
            "buckets": self.d,
            "bits": self.b,
            "permanent_epsilon": self.permanent_epsilon,
        }

    # ------------------------------------------------------------------ device

    def perturb(self, values: Any, rng: np.random.Generator | None = None) -> NDArray[np.int64]:
        """Each row a fresh device: its buckets and flips drawn from ``rng``."""
        idx = check_indices(values, self.d)
        gen = resolve_rng(rng)
        n, b = idx.size, self.b
        out = np.empty((n, 2 * b), dtype=np.int64)
        sampled = out[:, :b]
        sampled[...] = self._fresh_subsets(n, gen)
        flips = gen.random((n, b)) < self.flip
        np.not_equal(sampled == idx[:, None], flips, out=out[:, b:], casting="unsafe")
        return out

    @functools.cached_property
    def _subsets(self) -> NDArray[np.int64] | None:
        """Every ``b``-subset of the buckets, sorted, one per row (lexicographic), when
        there are at most :data:`_SUBSET_TABLE_ROWS`; else ``None``."""
        if math.comb(self.d, self.b) > _SUBSET_TABLE_ROWS:
            return None
        rows = list(itertools.combinations(range(self.d), self.b))
        return np.array(rows, dtype=np.int64).reshape(len(rows), self.b)

    def _fresh_subsets(self, n: int, gen: np.random.Generator) -> NDArray[np.int64]:
        """``n`` uniform ``b``-subsets of the buckets, sorted: a uniform row of the table
        of all subsets when it is small, else the ``b`` least of ``d`` uniforms per row."""
        if self.b == self.d:
            return np.tile(np.arange(self.d, dtype=np.int64), (n, 1))
        table = self._subsets
        if table is not None:
            return np.take(table, gen.integers(table.shape[0], size=n), axis=0)
        out = np.empty((n, self.b), dtype=np.int64)
        step = max(1, _SUBSET_CELLS // self.d)
        for start in range(0, n, step):
            u = gen.random((min(step, n - start), self.d))
            out[start : start + step] = np.argpartition(u, self.b - 1, axis=1)[:, : self.b]
        out.sort(axis=1)
        return out

    def sampled_buckets(self, key: bytes) -> NDArray[np.int64]:
        """The device's ``b`` buckets, sorted: the least ``b`` of ``d`` PRF uniforms."""
        u = prf_uniforms(key, [NAME.encode() + b" buckets"], self.d)[0]
        return np.sort(np.argsort(u, kind="stable")[: self.b]).astype(np.int64)

    def memo_keys(self, values: NDArray[Any], key: bytes) -> NDArray[np.int64]:
        """The bucket vector as a number: the position of the value's bucket among the
        sampled ones, or ``b`` when it is not sampled."""
        return self._positions(check_indices(values, self.d), self.sampled_buckets(key))

    def _positions(self, idx: NDArray[np.int64], sampled: NDArray[np.int64]) -> NDArray[np.int64]:
        at = np.minimum(np.searchsorted(sampled, idx), self.b - 1)
        return np.where(sampled[at] == idx, at, self.b)

    def perturb_memoised(
        self, values: NDArray[Any], key: bytes, rng: np.random.Generator | None = None
    ) -> NDArray[np.int64]:
        """The memoised response of each value's bucket vector (no fresh noise: ``rng``
        is not drawn from)."""
        v = one_index(values, self.d)
        if v is not None:  # a device's one record, memoised in memory (see longitudinal)
            memo = self._permanent_memo
            found: NDArray[np.int64] | None = memo.get(key, v)
            if found is None:
                found = np.array([self._memoised_one(v, key)], dtype=np.int64)
                found.flags.writeable = False
                memo.put(key, v, found)
            return found.copy()
        idx = check_indices(values, self.d)
        sampled = self.sampled_buckets(key)
        positions = self._positions(idx, sampled)
        distinct, inverse = np.unique(positions, return_inverse=True)
        u = prf_uniforms(key, value_messages(distinct, NAME.encode()), self.b)
        truth = np.arange(self.b)[None, :] == distinct[:, None]
        bits = (truth ^ (u < self.flip))[inverse]
        return np.hstack([np.tile(sampled, (positions.size, 1)), bits]).astype(np.int64)

    @functools.cached_property
    def _sampled_memo(self) -> PermanentMemo[list[int]]:
        """The sampled buckets of one-record calls' devices, by PRF key."""
        return PermanentMemo()

    def _memoised_one(self, value: int, key: bytes) -> list[int]:
        """:meth:`perturb_memoised` of one value, on Python numbers (the same draws)."""
        memo = self._sampled_memo
        sampled: list[int] | None = memo.get(key, 0)  # the device's buckets, kept too
        if sampled is None:
            u = prf_uniform_list(key, NAME.encode() + b" buckets", self.d)
            sampled = sorted(sorted(range(self.d), key=lambda i: (u[i], i))[: self.b])
            memo.put(key, 0, sampled)
        position = sampled.index(value) if value in sampled else self.b
        flips = prf_uniform_list(key, NAME.encode() + b"\n" + str(position).encode(), self.b)
        bits = [int((j == position) != (f < self.flip)) for j, f in enumerate(flips)]
        return [*sampled, *bits]

    # ------------------------------------------------------------------ wire

    def pack(self, answers: NDArray[Any]) -> NDArray[np.uint8]:
        buckets = np.ascontiguousarray(answers[:, : self.b])
        head = buckets.astype(f">u{self.width}").view(np.uint8).reshape(-1, self.b * self.width)
        return np.hstack([head, pack_rows(answers[:, self.b :].astype(np.bool_))])

    def unpack(self, segment: NDArray[np.uint8]) -> Unpacked:
        n, head = segment.shape[0], self.b * self.width
        cells = segment[:, :head].reshape(n, self.b, self.width).astype(np.int64)
        buckets = cells[:, :, 0] if self.width == 1 else (cells[:, :, 0] << 8) | cells[:, :, 1]
        bits = unpack_bits(np.ascontiguousarray(segment[:, head:]), self.b)
        bad = bits.bad | (buckets >= self.d).any(axis=1) | (np.diff(buckets, axis=1) <= 0).any(1)
        return Unpacked(
            values=np.hstack([buckets, bits.values.astype(np.int64)]),
            bad=np.asarray(bad),
            problem=f"buckets not strictly increasing below {self.d}, or padding bits set",
        )

    # ------------------------------------------------------------------ estimation

    def accumulate(self, answers: NDArray[Any]) -> dict[str, NDArray[Any]]:
        buckets, bits = answers[:, : self.b], answers[:, self.b :]
        return {
            "sampled": np.bincount(buckets.ravel(), minlength=self.d).astype(np.int64),
            "ones": np.bincount(buckets[bits == 1], minlength=self.d).astype(np.int64),
        }

    def planned_variance(self) -> PlannedVariance:
        """One period's frequency of a bucket nobody's value falls in: the module
        docstring's ``q(1 − q)/(n_v (p − q)²)`` with ``n_v`` at its mean ``n·b/d`` (first
        order in ``1/n``; Ding, Kulkarni and Yekhanin 2017's estimator has ``nb/d`` in
        place of ``n_v``), per report ``(d/b)·q(1 − q)/(p − q)²``."""
        per_report = self.d / self.b * self.q * (1.0 - self.q) / (self.p - self.q) ** 2
        return PlannedVariance(
            per_report=per_report, parameters={"buckets": self.d, "bits": self.b}
        )

    def variance_curve(self, sampled: FloatArray, n: int) -> VarianceCurve:
        """``V(f)`` of each bucket's estimate given its ``n_v`` (module docstring)."""
        channel = self.q * (1.0 - self.q) / (sampled * (self.p - self.q) ** 2)
        finite = (n - sampled) / (sampled * (n - 1)) if n > 1 else np.zeros_like(sampled)
        return VarianceCurve.of(channel, 0.0) + VarianceCurve.bernoulli(finite)

    def estimate_stats(self, stats: Blocks, n: int, confidence: float) -> FrequencyEstimate:
        z_value(confidence)
        sampled = np.asarray(stats["sampled"], dtype=np.float64)
        if not (sampled > 0).all():
            empty = int(np.flatnonzero(sampled <= 0)[0])
            raise InsufficientReportsError(
                f"bucket {empty} was sampled by none of the {n} reports yet: dBitFlipPM"
                " estimates a bucket from the reports that sampled it"
            )
        ones = np.asarray(stats["ones"], dtype=np.float64)
        f_hat: FloatArray = (ones / sampled - self.q) / (self.p - self.q)
        step = 1.0 / (sampled * (self.p - self.q))
        return FrequencyEstimate.score(n, f_hat, self.variance_curve(sampled, n), confidence, step)
