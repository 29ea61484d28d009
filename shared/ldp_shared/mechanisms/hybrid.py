"""The Hybrid mechanism on a lattice (``"mechanism": "hybrid"``).

Wang et al., "Collecting and Analyzing Multidimensional Data with Local Differential
Privacy", ICDE 2019, §III-C: with probability ``α`` answer by the Piecewise mechanism at
ε, else by Duchi et al.'s one-bit mechanism at ε (answers ``±C_d``, ``C_d = (e^ε + 1)/
(e^ε − 1)``, ``P(+C_d | t) = 1/2 + t(e^ε − 1)/(2(e^ε + 1))``), where

    α = 1 − e^{−ε/2} for ε > ε* ≈ 0.61,   α = 0 otherwise,

which minimises the worst-case variance of the mixed answer (the paper's Lemma 4 and
its ``ε* = 0.61``). Both components are unbiased, so is the mixture.

On the lattice (:mod:`ldp_shared.mechanisms.lattice`), with ``K =`` :data:`LEVELS`
levels, the channel is the mixture of the two channels over **disjoint** cells: cells
``0 … G_pm − 1`` (``G_pm =`` :data:`PM_CELLS` equal cells of ``[−C, C]``) carry ``α``
times the lattice PM channel (:func:`~ldp_shared.mechanisms.piecewise.piecewise_channel`),
cell ``G_pm`` carries ``(1 − α)·P(−C_d | t_k)`` and cell ``G_pm + 1`` ``(1 − α)·P(+C_d |
t_k)``; ``G = G_pm + 2 = 256`` cells, one index byte. Keeping Duchi's answers in cells of
their own (rather than adding them into the PM cells that contain ``±C_d``) keeps each
cell's likelihood ratio that of one component, so the mixture's ε is at most ε — every
ratio is one component's — and the aggregator sees which component answered, which the
joint decoder uses. At ``α = 0`` the channel is Duchi's alone, on two cells: its
answers carry no second moment (``w`` does not exist), so the spread of the values is not
released and the standard error uses Duchi's conservative plug-in.

The decoder minimises the variance averaged over the levels, not the worst case: the
lattice HM's worst case per report is 4.30 at ε = 1 (continuous HM 4.29, PM 5.02,
Duchi 4.68) and 1.16 at ε = 2 (1.04), but 0.288 at ε = 4 (0.219) and 0.0332 at ε = 8
(0.0249, where the lattice PM gives 0.0253), with averages below the continuous HM's
(0.177 and 0.0172). A minimax decoder would close that gap (see ``docs/mechanisms.md``).

Segment: ``index``, 1 byte. Statistics: int64 ``counts[G]`` (``G = 256``, or 2 when
``ε <= 0.61``).
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
from ldp_shared.mechanisms.piecewise import (
    LARGEST_EPSILON,
    piecewise_channel,
    piecewise_scale,
)

LEVELS = 128
"""``K``, as the Piecewise mechanism's."""
PM_CELLS = 254
"""Cells of the PM component; with Duchi's two, 256 cells in one index byte."""
THRESHOLD = 0.61
"""``ε*``: at or below it the Hybrid mechanism is Duchi's (Wang et al., Lemma 4)."""


def pm_probability(epsilon: float) -> float:
    """``α = 1 − e^{−ε/2}`` above :data:`THRESHOLD`, else 0."""
    return -math.expm1(-epsilon / 2.0) if epsilon > THRESHOLD else 0.0


def duchi_scale(epsilon: float) -> float:
    """``C_d = (e^ε + 1)/(e^ε − 1) = coth(ε/2)``."""
    return 1.0 / math.tanh(epsilon / 2.0)


def hybrid_channel(epsilon: float, levels: int, pm_cells: int) -> FloatArray:
    """The mixture channel on disjoint cells: ``α·PM`` then ``(1 − α)·(P(−C_d), P(+C_d))``."""
    t = level_values(levels)
    positive = 0.5 + t * (0.5 * math.tanh(epsilon / 2.0))
    duchi = np.stack([1.0 - positive, positive])
    alpha = pm_probability(epsilon)
    if alpha == 0.0:
        return duchi
    return np.vstack([alpha * piecewise_channel(epsilon, levels, pm_cells), (1 - alpha) * duchi])


@lru_cache(maxsize=32)
def build_hybrid(epsilon: float) -> LatticeChannel:
    """The lattice HM channel at ``epsilon`` (cached)."""
    return lattice_channel(hybrid_channel(epsilon, LEVELS, PM_CELLS), epsilon)


@register
class HybridSpec(NumericSpec):
    """A number in ``[lo, hi]`` reported by the Hybrid mechanism on a lattice."""

    mechanism: Literal["hybrid"]

    def randomizer(self, epsilon: float | None, classes: int = 1) -> HybridRandomizer:
        if epsilon is None:
            raise ConfigurationError(f"attribute {self.name!r}: hybrid needs an ε")
        return HybridRandomizer(epsilon=epsilon, lo=self.lo, hi=self.hi)


@dataclass(frozen=True)
class HybridRandomizer(LatticeRandomizer):
    """HM at ``epsilon`` for values in ``[lo, hi]``: PM and Duchi cells side by side."""

    mechanism: ClassVar[str] = "hybrid"
    largest_epsilon: ClassVar[float] = LARGEST_EPSILON

    def build(self) -> LatticeChannel:
        return build_hybrid(self.epsilon)

    def published_parameters(self) -> dict[str, Any]:
        return {
            "pm_probability": pm_probability(self.epsilon),
            "scale": piecewise_scale(self.epsilon),
            "duchi_scale": duchi_scale(self.epsilon),
        }
