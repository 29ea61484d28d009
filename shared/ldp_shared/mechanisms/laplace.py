"""The discrete Laplace mechanism on the level grid (``"mechanism": "laplace"``).

The device rounds ``t`` to a level ``k ∈ {0, …, K}`` (:mod:`ldp_shared.mechanisms.lattice`)
and answers ``y = clamp(k + Z, −M, K + M)``, ``Z`` two-sided geometric,

    P(Z = z) = (1 − r)/(1 + r) · r^{|z|},   r = e^{−ε/K}.

Two levels are at most ``K`` steps apart (sensitivity ``K``), and
``P(k + Z = y)/P(k' + Z = y) = r^{|y−k| − |y−k'|} <= e^{ε|k − k'|/K} <= e^ε``: ε-LDP, with
equality for every ``y`` outside ``(0, K)`` (Ghosh, Roughgarden and Sundararajan, STOC
2009, for the geometric mechanism). This is the discrete analogue of the Laplace
mechanism ``x + Lap(b)`` with ``b = Δ/ε = (hi − lo)/ε`` in ``x`` units: one level step is
``(hi − lo)/K``, so ``r^{|z|} = exp(−|z|·step/b)`` is the Laplace density at the
lattice points, and ``Z·step`` has variance ``2r/(1 − r)²·step² → 2b²`` as ``K → ∞``
(Canonne, Kamath and Steinke, "The Discrete Gaussian for Differential Privacy",
NeurIPS 2020, §2 and their discrete Laplace). Unlike floating-point Laplace noise
(Mironov, CCS 2012), the answer is an integer of a fixed window whatever the value.

**Clamping** to ``[−M, K + M]`` is post-processing (ε unchanged), and the decoder is
solved on the clamped channel (its end cells hold the tails), so it costs no bias at any
``M``. Why ``M`` is not chosen so the tails are below ``2^−53``: every cell outside
``(0, K)`` has ratio exactly ``e^ε``, and quantising a weight ``w`` moves a log-ratio by
up to ``1/w``, so cells of weight near 1 would spend far more than ε (the quantised
channel is then refused). ``M`` is the largest margin for which every cell probability,
down to ``(1 − r)/(1 + r)·r^{K+M}``, is at least :data:`MIN_PROBABILITY` ``/ε``: weights of
at least ``7.2e9/ε`` move ε by at most about ``3e-10·ε``, inside the slack. The end
cells then hold a tail of about ``1e-6/ε``, which the decoder accounts for.

**K.** With the weighted least-norm decoder, the level grid trades the rounding variance
(``<= 1/K²``) against the freedom of the decoder, which only has to be unbiased at the
``K + 1`` levels: a coarse grid lets it shrink far answers. ``K`` is therefore chosen
per ε among the powers of two 1 … 256 whose window fits :data:`MAX_CELLS`: the smallest
whose worst-case variance per report, ``max_t Var(v_y | t)`` (rounding included, on a
grid of 4,097 values), is within 1% of the best candidate's (the 1% keeps the choice,
which is published, the same on every platform). Measured worst-case variances (``t``
scale) against the continuous Laplace mechanism's ``8/ε²``: ε = 0.5: K = 1, 16.67 (32);
ε = 1: K = 1, 4.68 (8); ε = 2: K = 2, 1.48 (2); ε = 4: K = 4, 0.466 (0.5); ε = 8: K = 16,
0.125 (0.125). At K = 1 the device rounds to ``±1`` and the decoder recovers Duchi et
al.'s worst case ``C_d²``, the minimax optimum at small ε; the spread of the values is
then not released (see the lattice module: it needs ``K >= 16``). Build (all candidates,
cached) and peak memory: ε = 0.5: 0.04 s, 8 MB; 1: 0.09 s, 17 MB; 2: 0.05 s, 9 MB; 4:
0.11 s, 18 MB; 8: 0.06 s, 8 MB. ε from about 0.01 to 16; beyond, the far tail cells
would need weights below what the slack allows, and such a spec is refused.

Segment: ``index``, 1 or 2 bytes (``G <= 256`` or not). Statistics: int64 ``counts[G]``.
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
from ldp_shared.mechanisms.lattice import LatticeChannel, LatticeRandomizer, lattice_channel
from ldp_shared.mechanisms.numeric import NumericSpec

MAX_LEVELS = 256
MAX_CELLS = 2048
"""Largest window ``G = K + 2M + 1``: the channel is a dense ``G × (K + 1)`` matrix."""
MIN_PROBABILITY = 8e-7
"""Smallest cell probability times ε (see the module docstring): with the relative
slack 1e-9, ``2/(2^53·8e-7/ε) ≈ 2.8e-10·ε``."""
TIE = 0.01
"""Candidates within this relative worst-case variance of the best count as tied."""
WORST_CASE_GRID = 4097


def window(epsilon: float, levels: int) -> int:
    """``M``: the largest clamp margin whose smallest cell probability is at least
    ``MIN_PROBABILITY/ε`` (negative when even ``M = 0`` is below it)."""
    ratio = math.tanh(epsilon / (2.0 * levels)) * epsilon / MIN_PROBABILITY  # (1 − r)/(1 + r)·…
    if not ratio > 0.0:  # underflows at a tiny ε: no window
        return -1
    return math.floor(math.log(ratio) * levels / epsilon - levels)


def candidates(epsilon: float) -> list[tuple[int, int]]:
    """``(K, M)`` for each power of two ``K <= 256`` whose window fits ``MAX_CELLS``."""
    out = []
    for levels in (1 << j for j in range(MAX_LEVELS.bit_length())):
        margin = window(epsilon, levels)
        if margin >= 0 and levels + 2 * margin + 1 <= MAX_CELLS:
            out.append((levels, margin))
    return out


def worst_variance(channel: LatticeChannel) -> float:
    """``max_t Var(v_y | t)`` over a grid of ``t`` (rounding included)."""
    return float(channel.report_variance(np.linspace(-1.0, 1.0, WORST_CASE_GRID)).max())


def laplace_channel(epsilon: float, levels: int, margin: int) -> FloatArray:
    """``M[g, k] = P(clamp(k + Z, −M, K + M) = g − M)``."""
    y = np.arange(-margin, levels + margin + 1, dtype=np.float64)[:, None]
    k = np.arange(levels + 1, dtype=np.float64)[None, :]
    step = epsilon / levels
    c = math.tanh(step / 2.0)
    channel: FloatArray = c * np.exp(-step * np.abs(y - k))
    tail = 1.0 / -math.expm1(-step)  # Σ_{j >= 0} r^j
    channel[0] = c * np.exp(-step * (margin + k[0])) * tail
    channel[-1] = c * np.exp(-step * (levels + margin - k[0])) * tail
    return channel


@lru_cache(maxsize=32)
def build_laplace(epsilon: float) -> LatticeChannel:
    """The clamped discrete Laplace channel at ``epsilon`` on the chosen grid (cached)."""
    built: list[tuple[float, LatticeChannel]] = []
    for levels, margin in candidates(epsilon):
        try:
            channel = lattice_channel(laplace_channel(epsilon, levels, margin), epsilon)
        except ConfigurationError:
            continue
        built.append((worst_variance(channel), channel))
    if not built:
        raise ConfigurationError(
            f"the discrete Laplace lattice takes ε from about 0.01 to 16; ε = {epsilon!r}"
            " leaves no window whose cells 53-bit weights represent within the slack"
        )
    best = min(worst for worst, _ in built)
    return next(channel for worst, channel in built if worst <= best * (1.0 + TIE))


@register
class LaplaceSpec(NumericSpec):
    """A number in ``[lo, hi]`` reported with discrete Laplace noise on a level grid."""

    mechanism: Literal["laplace"]

    def randomizer(self, epsilon: float | None, classes: int = 1) -> LaplaceRandomizer:
        if epsilon is None:
            raise ConfigurationError(f"attribute {self.name!r}: laplace needs an ε")
        return LaplaceRandomizer(epsilon=epsilon, lo=self.lo, hi=self.hi)


@dataclass(frozen=True)
class LaplaceRandomizer(LatticeRandomizer):
    """Discrete Laplace noise at ``epsilon`` on the level grid of ``[lo, hi]``."""

    mechanism: ClassVar[str] = "laplace"

    def build(self) -> LatticeChannel:
        return build_laplace(self.epsilon)

    @property
    def margin(self) -> int:
        """``M``: answers lie in ``[−M, K + M]`` (cell ``g`` is the answer ``g − M``)."""
        return (self.channel.cells - 1 - self.channel.levels) // 2

    def published_parameters(self) -> dict[str, Any]:
        return {"margin": self.margin}
