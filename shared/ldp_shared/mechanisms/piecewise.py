"""The Piecewise mechanism on a lattice (``"mechanism": "piecewise"``).

Wang, Xiao, Yang, Zhao, Hui, Shin, Shin and Yu, "Collecting and Analyzing
Multidimensional Data with Local Differential Privacy", ICDE 2019, Algorithm 2. A value
``t ∈ [−1, 1]`` is answered by ``y ∈ [−C, C]``,

    C = (e^{ε/2} + 1)/(e^{ε/2} − 1),
    l(t) = (C + 1)t/2 − (C − 1)/2,   r(t) = l(t) + C − 1,
    density p = (e^ε − e^{ε/2})/(2e^{ε/2} + 2) on [l(t), r(t)], p/e^ε elsewhere,

so ``E[y] = t`` and ``Var(y | t) = t²/(e^{ε/2} − 1) + (e^{ε/2} + 3)/(3(e^{ε/2} − 1)²)``
(the paper's Lemma 1). Its worst case (``t = ±1``) is below Duchi et al.'s ``C_d² − t²``
worst case (``t = 0``, ``C_d = (e^ε + 1)/(e^ε − 1)``) for ε above about 1.29 (the paper's
§III-B; ``tests/shared/mechanisms/test_piecewise.py`` checks the crossover on the
formulas).

Here the answer is a cell of the lattice (:mod:`ldp_shared.mechanisms.lattice`): the
device rounds ``t`` to one of ``K + 1 =`` :data:`LEVELS` ``+ 1`` levels, and the channel
``M[g, k]`` is the PM density of level ``t_k`` integrated over ``G =`` :data:`CELLS`
equal cells of ``[−C, C]`` (``p/e^ε·width + (p − p/e^ε)·|cell ∩ [l, r]|``), quantised to
``2^53`` weights. A cell inside one level's high band and outside another's has ratio
``e^ε`` exactly, so the channel's ε is the allotted ε up to quantisation (a weight of at
least ``2^53·(p/e^ε)·2C/G`` moves it by about ``1e-13`` relative at ε = 8). Above
ε ≈ 10 the band ``[l, r]`` (width ``C − 1``) is narrower than a cell, no cell is wholly
inside one band and outside another, and the channel spends less than allotted: the
published ε is that exact, smaller value (ε = 12 spends 11.54; ε = 40 spends 25.5).

The weighted least-norm decoder (see the lattice module) is unbiased on the lattice and
its worst-case variance per report, ``max_k(q_k − t_k²)``, is below the continuous PM's
(``t = ±1``) for ε from 0.05 to 8: ε = 0.5: 19.80 against 21.22; 1: 5.017 against
5.224; 2: 1.203 against 1.228; 4: 0.2405 against 0.2414; 8: 0.02528 against 0.02534 (the
rounding adds at most ``1/K² = 6.1e-5``). It also carries the second moment, so the
spread of the values is released.

Segment: ``index``, 1 byte (``G = 256``). Statistics: int64 ``counts[256]``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar, Literal

import numpy as np

from ldp_shared.errors import ConfigurationError
from ldp_shared.kernel import FloatArray
from ldp_shared.mechanisms.base import register
from ldp_shared.mechanisms.lattice import (
    LatticeChannel,
    LatticeRandomizer,
    lattice_channel,
    level_values,
)
from ldp_shared.mechanisms.numeric import NumericSpec

LEVELS = 128
"""``K``: the rounding adds a variance of at most ``1/K² ≈ 6e-5`` (PM's own is ≥ 0.0067
up to ε = 8)."""
CELLS = 256
"""``G``: equal cells of ``[−C, C]``, one index byte."""
LARGEST_EPSILON = 76.24
"""The largest ε the lattice PM channel (and HM's) takes: above about 76.2462 (measured
by bisection; ``tests/shared/mechanisms/test_epsilon_rule.py``) the band ``[l, r]``, of
width ``2/(e^{ε/2} − 1)``, is far narrower than a cell, and the quantised channel has no
unbiased decoder (residual 1); it already spends only about 36.7 there."""


def piecewise_scale(epsilon: float) -> float:
    """``C = (e^{ε/2} + 1)/(e^{ε/2} − 1) = coth(ε/4)``."""
    return 1.0 / math.tanh(epsilon / 4.0)


def piecewise_variance(t: FloatArray, epsilon: float) -> FloatArray:
    """``Var_PM(t) = t²/(e^{ε/2} − 1) + (e^{ε/2} + 3)/(3(e^{ε/2} − 1)²)`` (Lemma 1)."""
    e = math.expm1(epsilon / 2.0)
    out: FloatArray = np.square(t) / e + (e + 4.0) / (3.0 * e * e)
    return out


def piecewise_channel(epsilon: float, levels: int, cells: int) -> FloatArray:
    """``M[g, k]``: the PM density at ``t_k`` integrated over ``G`` equal cells."""
    c_minus_1 = 2.0 / math.expm1(epsilon / 2.0)  # C − 1 without cancellation
    c = 1.0 + c_minus_1
    half = math.exp(epsilon / 2.0)
    high = (math.exp(epsilon) - half) / (2.0 * half + 2.0)
    low = high * math.exp(-epsilon)
    t = level_values(levels)
    left = (c + 1.0) * t / 2.0 - c_minus_1 / 2.0
    right = left + c_minus_1
    edges = np.linspace(-c, c, cells + 1)
    a, b = edges[:-1, None], edges[1:, None]
    overlap = np.clip(np.minimum(b, right[None, :]) - np.maximum(a, left[None, :]), 0.0, None)
    channel: FloatArray = low * (b - a) + (high - low) * overlap
    return channel


@lru_cache(maxsize=32)
def build_piecewise(epsilon: float) -> LatticeChannel:
    """The lattice PM channel at ``epsilon`` (cached: configs rebuild it often)."""
    return lattice_channel(piecewise_channel(epsilon, LEVELS, CELLS), epsilon)


@register
class PiecewiseSpec(NumericSpec):
    """A number in ``[lo, hi]`` reported by the Piecewise mechanism on a lattice."""

    mechanism: Literal["piecewise"]

    def randomizer(self, epsilon: float | None, classes: int = 1) -> PiecewiseRandomizer:
        if epsilon is None:
            raise ConfigurationError(f"attribute {self.name!r}: piecewise needs an ε")
        return PiecewiseRandomizer(epsilon=epsilon, lo=self.lo, hi=self.hi)


@dataclass(frozen=True)
class PiecewiseRandomizer(LatticeRandomizer):
    """PM at ``epsilon`` for values in ``[lo, hi]``, answered on ``G`` cells."""

    mechanism: ClassVar[str] = "piecewise"
    largest_epsilon: ClassVar[float] = LARGEST_EPSILON

    def build(self) -> LatticeChannel:
        return build_piecewise(self.epsilon)

    def published_parameters(self) -> dict[str, Any]:
        return {"scale": piecewise_scale(self.epsilon)}
