"""Numeric mechanisms whose answers live on a fixed lattice, with an exact ε.

Floating-point noise added to a floating-point value leaks the value through the low
bits of the sum (Mironov, "On Significance of the Least Significant Bits for Differential
Privacy", CCS 2012), and a continuous output such as the Piecewise mechanism's (Wang et
al., ICDE 2019) has no finite channel whose ε one could compute. The mechanisms built on
this module (``piecewise``, ``hybrid``, ``laplace``) instead answer with one of ``G``
cells from a channel fixed by the spec alone:

1. **Levels.** The device rounds ``t ∈ [−1, 1]`` to one of ``K + 1`` levels
   ``t_k = −1 + 2k/K`` by unbiased randomized rounding: with ``s = (t + 1)K/2``, level
   ``⌊s⌋ + 1`` with probability ``s − ⌊s⌋`` (a uniform double of the injected generator),
   else ``⌊s⌋``. ``E[t_level] = t``, and the rounding adds a variance
   ``(2/K)²·f(1 − f) ≤ 1/K²``. It is pre-processing: the answer's distribution given
   ``t`` is a convex combination of the channel's columns, so ε is the channel's.
2. **Channel.** ``M[g, k] = P(cell g | level k)`` comes from the ideal mechanism
   (integrating its density over each cell, or summing its mass), quantised to int64
   weights per column summing to ``2^53``, each ``>= 1``, and sampled exactly from a
   53-bit raw word (:mod:`ldp_shared.mechanisms.integer_channel`). The set of possible
   answers is ``{0, …, G − 1}`` whatever the value: no digit of ``t`` travels.
3. **Privacy.** ε is ``channel_epsilon(W/2^53)``, computed from the integers; a channel
   whose quantisation spends more than the allotted ε by the relative
   :data:`~ldp_shared.mechanisms.integer_channel.EPSILON_SLACK` is refused.
4. **Estimation.** The aggregator keeps int64 ``counts[G]``. Decoders ``v`` and ``w``
   with ``Mᵀv = (t_k)_k`` and ``Mᵀw = (t_k²)_k`` make ``mean(v[y])`` unbiased for the
   mean of the (rounded, hence of the true) ``t`` and ``mean(w[y])`` for the mean of
   ``t_level²``. Among the solutions we take the one of least weighted norm
   ``Σ_g π̄_g v_g²``, ``π̄ = M·1/(K+1)`` the answer distribution of uniformly spread
   levels: that is exactly the unbiased decoder of least variance averaged over the
   levels (plain least norm weights every cell alike and, for the Piecewise channel at
   ε = 8, has a worst-case variance 1.9 times larger). A residual above
   :data:`DECODE_TOLERANCE` refuses the configuration (mean) or drops the second moment
   (``w`` is ``None``: a two-cell channel carries no second moment).

   The variance of ``t̂ = Σ_g c_g v_g/n`` given the values is
   ``Σ_i (E[q_{k_i}] − t_i²)/n²`` with ``q_k = Σ_g M[g,k] v_g²``. Released plug-in:
   ``(Q̂ − m̂₂)/n`` with ``Q̂ = Σ_g c_g v_g²/n`` (unbiased for the first term) and
   ``m̂₂ = clip(Σ_g c_g w_g/n − 1/K², t̂_c², 1)`` for the mean of ``t²`` (``t̂_c`` = ``t̂``
   clipped to ``[−1, 1]``; the ``1/K²`` takes off the most the rounding can add to the
   second moment, so the error is never understated on that account; without ``w``,
   ``m̂₂ = t̂_c²``, Duchi's conservative choice), floored at the smallest per-report
   variance ``min_k(q_k − t_k²)``. Where ``w`` exists, the spread of the values is
   estimated by ``ŝ² = m̂ − t̂² + (Q̂ − m̂)/n`` (``m̂ = Σ_g c_g w_g/n``; the last term
   is the unbiased estimate of ``Var t̂``), clipped to ``[0, 1 − t̂_c²]``: unbiased for
   the variance of the rounded values, which exceeds the true values' by at most
   ``1/K²``, so it is released only from :data:`MIN_SPREAD_LEVELS` levels. Both map back
   to ``x`` units by ``((hi − lo)/2)²``.
5. **Segment.** ``index``: the cell as a big-endian unsigned integer of 1 byte
   (``G <= 256``) or 2; an index ``>= G`` is rejected.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray
from threadpoolctl import threadpool_limits

from ldp_shared.errors import ConfigurationError, InvalidQueryError, InvalidRecordError
from ldp_shared.kernel import FloatArray, FrequencyEstimate
from ldp_shared.mechanisms._checks import MAX_EPSILON, check_epsilon
from ldp_shared.mechanisms.base import (
    Blocks,
    PlannedVariance,
    Randomizer,
    Segment,
    StatsBlock,
    Unpacked,
)
from ldp_shared.mechanisms.categorical import index_segment, pack_index, unpack_index
from ldp_shared.mechanisms.integer_channel import IntegerChannel, integer_channel
from ldp_shared.mechanisms.numeric import bounded_variance, from_unit
from ldp_shared.rand import resolve_rng

DECODE_TOLERANCE = 1e-9
"""Largest ``max_k |(Mᵀv)_k − t_k|`` (resp. ``t_k²``) a decoder may leave."""
MAX_CELLS = 65_536
"""A cell index travels in at most 2 bytes."""
MIN_SPREAD_LEVELS = 16
"""The spread of the values is released only from ``K >= 16`` levels: the rounding
inflates it by up to ``1/K²`` (``t`` scale), at most ``1/256`` there."""


def level_values(levels: int) -> FloatArray:
    """``t_k = −1 + 2k/K`` for ``k = 0..K``."""
    return -1.0 + 2.0 * np.arange(levels + 1, dtype=np.float64) / levels


def split_levels(t: FloatArray, levels: int) -> tuple[NDArray[np.int64], FloatArray]:
    """The lower neighbouring level of each ``t`` and the probability of the upper one."""
    s = (np.asarray(t, dtype=np.float64) + 1.0) * (levels / 2.0)
    lower = np.minimum(np.floor(s), levels - 1).astype(np.int64)
    return lower, np.clip(s - lower, 0.0, 1.0)


def round_to_levels(t: FloatArray, levels: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """Unbiased randomized rounding of each ``t`` to a level index (one uniform each)."""
    lower, upper = split_levels(t, levels)
    out: NDArray[np.int64] = lower + (rng.random(lower.size) < upper)
    return out


def weighted_decoder(matrix: FloatArray, target: FloatArray) -> tuple[FloatArray, float]:
    """The solution ``v`` of ``Mᵀv = target`` of least ``Σ_g π̄_g v_g²`` (``π̄`` the mean
    column), and the largest residual left."""
    root = np.sqrt(matrix.mean(axis=1))
    # One BLAS thread: on a busy 2-core machine OpenBLAS's pool made this solve (2,047 x
    # 129 at eps = 1) take 1.6-4 s instead of 0.1-0.25 s; the integer channel devices
    # sample is the same either way, the decoder equal to ~1e-13 relative
    with threadpool_limits(1, user_api="blas"):
        scaled, *_ = np.linalg.lstsq((matrix / root[:, None]).T, target, rcond=None)
    v: FloatArray = scaled / root
    return v, float(np.max(np.abs(matrix.T @ v - target)))


PLANNING_GRID = 1001
"""Values of ``t`` the planner scans for a lattice mechanism's worst variance."""


@dataclass(frozen=True)
class LatticeChannel:
    """A quantised lattice channel over ``K + 1`` levels and ``G`` cells, with its decoders."""

    levels: int
    integer: IntegerChannel
    mean_decoder: FloatArray
    square_decoder: FloatArray | None
    second_moments: FloatArray
    """``q_k = Σ_g M[g,k] v_g²``: ``E[v_y² | level k]``."""

    @property
    def cells(self) -> int:
        return self.integer.outputs

    @property
    def epsilon(self) -> float:
        return self.integer.epsilon

    @property
    def matrix(self) -> FloatArray:
        return self.integer.matrix

    @property
    def level_variances(self) -> FloatArray:
        """``q_k − t_k²``: the variance of ``v_y`` at level ``k``."""
        out: FloatArray = self.second_moments - level_values(self.levels) ** 2
        return out

    def report_variance(self, t: FloatArray) -> FloatArray:
        """``Var(v_y | t)`` at true values ``t`` (rounding included): ``E[q_k | t] − t²``."""
        lower, upper = split_levels(t, self.levels)
        q = self.second_moments
        out: FloatArray = (1.0 - upper) * q[lower] + upper * q[lower + 1] - np.square(t)
        return out


def lattice_channel(ideal: FloatArray, epsilon: float) -> LatticeChannel:
    """Quantise an ideal ``G × (K+1)`` channel and solve its decoders (see the module
    docstring); :class:`ConfigurationError` when the channel cannot be sent or decoded."""
    cells, columns = ideal.shape
    if not 2 <= cells <= MAX_CELLS:
        raise ConfigurationError(f"a lattice channel needs 2 to {MAX_CELLS} cells, got {cells}")
    # columns renormalised: quantise closes a column's gap one unit per cell and step
    with np.errstate(divide="ignore", invalid="ignore"):
        normalised = ideal / ideal.sum(axis=0, keepdims=True)
    if not np.isfinite(normalised).all():  # e.g. every probability underflowed at a tiny ε
        raise ConfigurationError(
            f"ε = {epsilon:g} is too {'small' if epsilon < 1.0 else 'large'}: the mechanism's"
            " probabilities are not finite in floating point; use a"
            f" {'larger' if epsilon < 1.0 else 'smaller'} ε"
        )
    quantised = integer_channel(normalised, epsilon)
    matrix = quantised.matrix
    t = level_values(columns - 1)
    v, residual = weighted_decoder(matrix, t)
    if not residual <= DECODE_TOLERANCE:
        raise ConfigurationError(
            f"the lattice channel at ε = {epsilon!r} cannot be decoded without bias"
            f" (residual {residual:.3g} > {DECODE_TOLERANCE:g})"
        )
    w, square_residual = weighted_decoder(matrix, t * t)
    square = w if square_residual <= DECODE_TOLERANCE else None
    q: FloatArray = matrix.T @ (v * v)
    for array in (v, q, *(() if square is None else (square,))):
        array.setflags(write=False)
    return LatticeChannel(columns - 1, quantised, v, square, q)


@dataclass(frozen=True)
class MeanEstimate(FrequencyEstimate):
    """A released mean with, where the mechanism carries it, the estimated variance of
    the (clipped) true values in ``x`` units."""

    value_variance: FloatArray | None = None


@dataclass(frozen=True)
class LatticeRandomizer(Randomizer):
    """A lattice mechanism at ``epsilon`` for values in ``[lo, hi]``; a subclass supplies
    its channel (:meth:`build`) and the parameters it publishes besides the lattice's."""

    mechanism: ClassVar[str] = "a lattice mechanism"
    largest_epsilon: ClassVar[float] = MAX_EPSILON
    """The largest ε whose channel can be built (the one rule of ``_checks.py``)."""

    epsilon: float
    lo: float
    hi: float
    channel: LatticeChannel = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        eps = check_epsilon(self.epsilon, self.largest_epsilon, self.mechanism)
        object.__setattr__(self, "epsilon", eps)
        if math.isinf(self.epsilon):
            raise ConfigurationError(f"{type(self).__name__} needs a finite ε")
        object.__setattr__(self, "channel", self.build())

    @abstractmethod
    def build(self) -> LatticeChannel:
        """The lattice channel at ``self.epsilon`` (cached by the subclass)."""

    def published_parameters(self) -> dict[str, Any]:
        """What a client needs, besides ``K`` and ``G``, to rebuild the channel."""
        return {}

    @property
    def exact_epsilon(self) -> float:
        """ε of the integer channel the device samples from."""
        return self.channel.epsilon

    @property
    def segment(self) -> Segment:
        return index_segment(self.channel.cells)

    @property
    def stats_layout(self) -> tuple[StatsBlock, ...]:
        return (StatsBlock("counts", "int64", self.channel.cells),)

    def published(self) -> dict[str, Any]:
        return {
            "lo": self.lo,
            "hi": self.hi,
            "levels": self.channel.levels,
            "cells": self.channel.cells,
            **self.published_parameters(),
        }

    def perturb(self, values: Any, rng: np.random.Generator | None = None) -> NDArray[np.int64]:
        """The cell index of each scaled value ``t`` (vectorised)."""
        t = np.asarray(values, dtype=np.float64)
        if t.ndim != 1 or not np.isfinite(t).all() or (t.size and (np.abs(t) > 1.0).any()):
            raise InvalidRecordError(f"{type(self).__name__} perturbs scaled values t in [-1, 1]")
        gen = resolve_rng(rng)
        return self.channel.integer.sample(round_to_levels(t, self.channel.levels, gen), gen)

    def pack(self, answers: NDArray[Any]) -> NDArray[np.uint8]:
        return pack_index(np.asarray(answers, dtype=np.int64), self.segment.byte_length)

    def unpack(self, segment: NDArray[np.uint8]) -> Unpacked:
        return unpack_index(segment, self.channel.cells)

    def accumulate(self, answers: NDArray[Any]) -> dict[str, NDArray[Any]]:
        counts = np.bincount(np.asarray(answers, dtype=np.int64), minlength=self.channel.cells)
        return {"counts": counts.astype(np.int64)}

    def estimate_t(self, counts: Any, n: int) -> tuple[float, float, float | None]:
        """``t̂``, the plug-in variance of ``t̂`` and the spread ``ŝ²`` (``t`` scale), or
        ``None`` for the spread when the channel carries no second moment."""
        if n <= 0:
            raise InvalidQueryError("no reports to estimate from")
        pi = np.asarray(counts, dtype=np.float64) / n
        ch = self.channel
        t_hat = float(pi @ ch.mean_decoder)
        q_hat = float(pi @ np.square(ch.mean_decoder))
        tc2 = min(max(t_hat, -1.0), 1.0) ** 2
        floor = float(ch.level_variances.min())
        if ch.square_decoder is None:
            return t_hat, max(q_hat - tc2, floor) / n, None
        m_hat = float(pi @ ch.square_decoder)
        m2 = min(max(m_hat - 1.0 / ch.levels**2, tc2), 1.0)
        if ch.levels < MIN_SPREAD_LEVELS:
            return t_hat, max(q_hat - m2, floor) / n, None
        spread = m_hat - t_hat * t_hat + (q_hat - m_hat) / n
        return t_hat, max(q_hat - m2, floor) / n, min(max(spread, 0.0), 1.0 - tc2)

    def estimate_stats(self, stats: Blocks, n: int, confidence: float) -> MeanEstimate:
        """The mean of the (clipped) true values, its standard error and interval, and the
        estimated variance of the values where the channel carries a second moment."""
        t_hat, var_t, spread = self.estimate_t(stats["counts"], n)
        half = (self.hi - self.lo) / 2.0
        mean = from_unit(np.array([t_hat]), self.lo, self.hi)
        se = np.array([math.sqrt(var_t) * half])
        value_variance = None if spread is None else np.array([spread * half * half])
        return MeanEstimate.normal(n, mean, se, confidence, value_variance=value_variance)

    def unit_variance(self, estimate: NDArray[np.float64]) -> NDArray[np.float64]:
        return bounded_variance(estimate, self.lo, self.hi)

    def planned_variance(self) -> PlannedVariance:
        """The channel's worst ``Var(v_y | t)`` over a grid of ``t`` (rounding included),
        in the attribute's units, and the value where it is reached."""
        t = np.linspace(-1.0, 1.0, PLANNING_GRID)
        per_t = self.channel.report_variance(t)
        worst = int(np.argmax(per_t))
        half = (self.hi - self.lo) / 2.0
        at = float(from_unit(t[worst : worst + 1], self.lo, self.hi)[0])
        return PlannedVariance(per_report=float(per_t[worst]) * half * half, at=at)
