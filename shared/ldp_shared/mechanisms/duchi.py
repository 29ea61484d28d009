"""Duchi et al.'s one-bit mechanism for a bounded number (``"mechanism": "duchi"``).

Duchi, Jordan and Wainwright, "Minimax Optimal Procedures for Locally Private
Estimation", JASA 2018 (the one-dimensional case, as restated by Wang et al., ICDE 2019,
§III-A). A value scaled to ``t ∈ [−1, 1]`` is answered by ``±C`` with

    C = (e^ε + 1)/(e^ε − 1),   P(+C | t) = 1/2 + t/(2C) = 1/2 + t·(e^ε − 1)/(2(e^ε + 1)).

``E[answer] = t``, so the mean of the answers is unbiased for the mean of ``t``, with
``Var(answer | t) = C² − t²``. The mean over ``n`` reports therefore has variance
``(C² − mean(t_i²))/n``; the true second moment is unknown, and since
``mean(t_i²) ≥ t̄²`` the released standard error uses the plug-in ``(C² − t̂²)/n``
(``t̂`` clipped to ``[−1, 1]``), which is never below the exact variance at the truth
(conservative). The answers carry no second moment, so the spread of the true values
is not estimated.

Privacy: ``ln(P(+C|1)/P(+C|−1)) = ε``. The device draws the answer by comparing a uniform
double ``u = k/2^53`` (numpy's generators) with ``P(+C|t)``, so the probability it really
uses is ``⌈2^53 P⌉/2^53``; :attr:`DuchiRandomizer.exact_epsilon` is computed from those
quantised probabilities at ``t = ±1`` (IEEE rounding is monotone, so they are the
extremes). The answer is one of two values, so no floating-point digit of ``t`` travels.

Segment: ``sign``, one byte, ``0x00`` for ``−C`` and ``0x01`` for ``+C`` (any other byte
is rejected). Statistics: one int64 block ``positive[1]``, the number of ``+C`` answers:
exact integers, so a recount from the stored reports always agrees.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from ldp_shared.errors import ConfigurationError, InvalidRecordError
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
from ldp_shared.mechanisms.numeric import NumericSpec, bounded_variance, from_unit
from ldp_shared.rand import resolve_rng

_DOUBLE_STEPS = float(2**53)


def _as_drawn(probability: float) -> float:
    """The probability that a uniform double ``k/2^53`` falls below ``probability``."""
    return math.ceil(probability * _DOUBLE_STEPS) / _DOUBLE_STEPS


@register
class DuchiSpec(NumericSpec):
    """A number in ``[lo, hi]`` reported by Duchi et al.'s one-bit mechanism."""

    mechanism: Literal["duchi"]

    def randomizer(self, epsilon: float | None, classes: int = 1) -> DuchiRandomizer:
        if epsilon is None:
            raise ConfigurationError(f"attribute {self.name!r}: duchi needs an ε")
        return DuchiRandomizer(epsilon=epsilon, lo=self.lo, hi=self.hi)


@dataclass(frozen=True)
class DuchiRandomizer(Randomizer):
    """The one-bit mechanism at ``epsilon`` for values in ``[lo, hi]``."""

    epsilon: float
    lo: float
    hi: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))

    @property
    def c(self) -> float:
        """``C = (e^ε + 1)/(e^ε − 1)``, the magnitude of an answer (``t``-scale)."""
        return 1.0 / math.tanh(self.epsilon / 2.0)

    def positive_probability(self, t: FloatArray) -> FloatArray:
        """``P(+C | t) = 1/2 + t·tanh(ε/2)/2``."""
        out: FloatArray = 0.5 + np.asarray(t, dtype=np.float64) * (
            0.5 * math.tanh(self.epsilon / 2)
        )
        return out

    @property
    def exact_epsilon(self) -> float:
        high = _as_drawn(float(self.positive_probability(np.array([1.0]))[0]))
        low = _as_drawn(float(self.positive_probability(np.array([-1.0]))[0]))
        if low <= 0.0 or high >= 1.0:
            return math.inf
        return max(math.log(high / low), math.log((1.0 - low) / (1.0 - high)))

    @property
    def segment(self) -> Segment:
        return Segment(encoding="sign", byte_length=1)

    @property
    def stats_layout(self) -> tuple[StatsBlock, ...]:
        return (StatsBlock("positive", "int64", 1),)

    def published(self) -> dict[str, Any]:
        return {"lo": self.lo, "hi": self.hi, "scale": self.c}

    def perturb(self, values: Any, rng: np.random.Generator | None = None) -> NDArray[np.bool_]:
        """``True`` for ``+C``, one per scaled value ``t`` (vectorised)."""
        t = np.asarray(values, dtype=np.float64)
        if t.ndim != 1 or (t.size and (np.abs(t) > 1.0).any()) or not np.isfinite(t).all():
            raise InvalidRecordError("duchi perturbs scaled values t in [-1, 1]")
        gen = resolve_rng(rng)
        drawn: NDArray[np.bool_] = gen.random(t.size) < self.positive_probability(t)
        return drawn

    def pack(self, answers: NDArray[Any]) -> NDArray[np.uint8]:
        return np.asarray(answers, dtype=np.uint8).reshape(-1, 1)

    def unpack(self, segment: NDArray[np.uint8]) -> Unpacked:
        byte = segment[:, 0]
        return Unpacked(values=byte == 1, bad=byte > 1, problem="sign byte is neither 0 nor 1")

    def accumulate(self, answers: NDArray[Any]) -> dict[str, NDArray[Any]]:
        return {"positive": np.array([int(np.count_nonzero(answers))], dtype=np.int64)}

    def mean_t(self, positive: float, n: int) -> float:
        """``t̂ = C·(2·positive/n − 1)``: the unbiased mean on the ``t`` scale."""
        return self.c * (2.0 * positive / n - 1.0)

    def variance_t(self, t_hat: float, n: int) -> float:
        """The plug-in ``(C² − t̂²)/n`` (``t̂`` clipped to ``[−1, 1]``): conservative."""
        t = min(max(t_hat, -1.0), 1.0)
        return (self.c**2 - t * t) / n

    def estimate_stats(self, stats: Blocks, n: int, confidence: float) -> FrequencyEstimate:
        """The mean of the (clipped) true values, its standard error and interval."""
        t_hat = self.mean_t(float(np.asarray(stats["positive"])[0]), n)
        half = (self.hi - self.lo) / 2.0
        mean = from_unit(np.array([t_hat]), self.lo, self.hi)
        se = np.array([math.sqrt(self.variance_t(t_hat, n)) * half])
        return FrequencyEstimate.normal(n, mean, se, confidence)

    def unit_variance(self, estimate: NDArray[np.float64]) -> NDArray[np.float64]:
        return bounded_variance(estimate, self.lo, self.hi)

    def planned_variance(self) -> PlannedVariance:
        """``C² − t²`` at its worst, ``t = 0`` (the midpoint), in the attribute's units."""
        half = (self.hi - self.lo) / 2.0
        return PlannedVariance(per_report=self.c**2 * half * half, at=(self.lo + self.hi) / 2.0)
