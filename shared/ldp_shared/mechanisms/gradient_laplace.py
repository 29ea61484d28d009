"""Discrete Laplace noise on an L1-clipped gradient (``"l1-laplace"``).

The Laplace mechanism (Dwork, McSherry, Nissim and Smith, TCC 2006; as in the
coursework this project started from): a vector ``g`` clipped to ``‖g‖₁ <= C`` has L1
sensitivity ``Δ = 2C`` (any two such vectors are at most ``2C`` apart), and
``g + Lap(Δ/ε)^d`` is ε-DP, with variance ``2(Δ/ε)² = 8C²/ε²`` per coordinate. Here the
noise is exact and discrete (no floating-point noise on the wire: Mironov, CCS 2012):

1. **Round inside the lattice ball.** With ``t = g/C`` (``‖t‖₁ <= 1``) and ``L`` steps
   per unit, ``u = L·t`` has ``‖u‖₁ <= L``. Rounding each coordinate on its own would
   break the sensitivity: each can round up by almost a step, so ``‖z‖₁`` could reach
   ``L + d`` and the sensitivity ``2(L + d)`` steps (93 times the noise at ``L = 1`` and
   ``d = 92``). The device rounds the magnitudes ``|u_j|`` by **systematic rounding**
   (Madow's systematic sampling, 1949): with fractional parts ``f_j`` and their running
   sums ``F_j``, one uniform ``U`` rounds coordinate ``j`` up iff some integer ``m`` has
   ``F_{j−1} <= m + U < F_j``. Each coordinate rounds up with probability ``f_j`` (so
   ``E[z_j] = u_j`` and its variance is ``f_j(1 − f_j)``, as with independent rounding),
   and the number rounded up is ``⌊F_d⌋`` or ``⌈F_d⌉``, so ``‖z‖₁ <= ⌈‖u‖₁⌉ <= L``. The
   bound is then enforced on the integers (a floating-point excess, probability about
   ``2^−52``, undoes the last round-up), so it holds for every report: **the L1
   sensitivity is ``Δ = 2L`` lattice steps**, no more than the continuous ball's.
2. **Noise.** ``y_j = clamp(z_j + Z_j, −L − M, L + M)``, ``Z_j`` independent two-sided
   geometric, ``P(Z = z) ∝ r^{|z|}``, ``r = e^{−ε/(2L)}``: the discrete Laplace channel of
   :mod:`ldp_shared.mechanisms.laplace` on ``K = 2L`` levels (level ``z_j + L``) and margin
   ``M``, quantised to 53-bit integer weights ``W`` and sampled exactly.
3. **Exact ε.** Let ``ρ = max_y max_k |ln W[y, k+1] − ln W[y, k]|``, the largest
   log-ratio between adjacent levels of the quantised 1-D channel (``ε/(2L)`` ideally).
   Two rounded vectors are joined by ``‖z − z'‖₁ <= 2L`` unit steps, each changing one
   coordinate's likelihood by at most ``e^ρ``, so the report is ``2L·ρ``-LDP: that is
   :attr:`L1Laplace.exact_epsilon`. It is attained up to quantisation: ``z = L·e₁``,
   ``z' = −L·e₁`` and ``y₁`` at the clamped end multiply ``2L`` ratios of exactly
   ``e^{ε/2L}`` in the ideal channel. Quantising a weight ``w`` moves a log-ratio by up to
   ``1/w``, so ``M`` is the largest margin whose smallest cell probability is at least
   ``4K/(2^53·ε·1e-9)``: the ``2L`` steps then add at most half the relative slack
   ``1e-9``, and a channel over it is refused.
4. **L.** The device's rounding adds at most ``C²/L`` to the trace of a report's
   covariance (``Σ_j f_j(1 − f_j)/L² <= ‖u‖₁/L²``); the noise adds ``d·q_L`` at the zero
   vector (``q_L`` the decoder's variance at level ``L``, i.e. ``t = 0``). ``L`` is the
   power of two up to :data:`MAX_STEPS` minimising ``d·q_L + 1/L``, the smallest within
   1% of the best. From ``d = 12`` on it is ``L = 1`` at every ε from 0.1 to 8 (the
   rounded vector is then ``0`` or ``±e_j``, coordinate ``j`` chosen with probability
   ``|t_j|``, and the noise geometric with ``r = e^{−ε/2}``); a short vector at large ε
   takes a fine lattice (``d = 2``: ``L = 16`` at ε = 2, 32 at ε = 4). Per-coordinate
   variances at ``t = 0`` with ``L = 1`` (``C = 1``; the continuous Laplace mechanism's
   ``8/ε²`` in brackets): ε = 0.1: 409.9 (800); 1: 4.877 (8); 2: 1.346 (2); 4: 0.3189
   (0.5); 8: 0.03733 (0.125); ``G`` = 315, 49, 25, 13, 5 cells.

**Estimation.** int64 ``counts[d, G]`` (coordinate, cell), decoded per coordinate with
the lattice channel's unbiased decoders (:func:`~ldp_shared.mechanisms.gradient.
coordinate_estimates`, inflation 1) and scaled by ``C``.

Segment: ``cells``, ``d`` cells of 1 byte each (``G <= 256``) or 2 (big-endian).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from ldp_shared.errors import ConfigurationError, InvalidRecordError
from ldp_shared.kernel import FloatArray
from ldp_shared.mechanisms.base import EPSILON_SLACK, Segment, Unpacked
from ldp_shared.mechanisms.categorical import index_width, pack_index, read_index
from ldp_shared.mechanisms.gradient import (
    GradientNorm,
    LatticeGradient,
    check_parameters,
    check_vectors,
    refuse_delta,
    register_gradient,
)
from ldp_shared.mechanisms.integer_channel import TOTAL
from ldp_shared.mechanisms.laplace import laplace_channel
from ldp_shared.mechanisms.lattice import LatticeChannel, lattice_channel
from ldp_shared.rand import resolve_rng

MAX_STEPS = 32
"""Largest ``L`` tried (``K = 2L`` levels)."""
EPSILON_RANGE = (0.0019, 16.75)
"""The ε it takes (the one rule of ``_checks.py``): from about 0.001887 to 16.752
(measured by bisection) some ``L`` has a window whose 53-bit weights keep ``2L·ρ`` within
the slack; outside, none has (``tests/shared/mechanisms/test_epsilon_rule.py``)."""
MAX_CELLS = 4096
TIE = 0.01


def step_ratio(channel: LatticeChannel) -> float:
    """``ρ``: the largest |log-ratio| between adjacent levels, from the integer weights."""
    logs = np.log(channel.integer.weights.astype(np.float64))  # < 2^53: exact conversion
    return float(np.max(np.abs(np.diff(logs, axis=1))))


def margin(epsilon: float, levels: int) -> int:
    """``M``: the largest clamp margin whose smallest cell probability is at least
    ``4K/(2^53·ε·slack)`` (negative when none is)."""
    smallest = 4.0 * levels / (TOTAL * epsilon * EPSILON_SLACK)
    c = math.tanh(epsilon / (2.0 * levels))  # (1 − r)/(1 + r)
    return math.floor(math.log(c / smallest) * levels / epsilon - levels)


@lru_cache(maxsize=64)
def build_steps(epsilon: float, steps: int) -> LatticeChannel | None:
    """The quantised discrete Laplace channel on ``2·steps`` levels, or ``None`` when no
    window is precise enough or its ``2L·ρ`` exceeds the slack."""
    levels = 2 * steps
    m = margin(epsilon, levels)
    if m < 0 or levels + 2 * m + 1 > MAX_CELLS:
        return None
    try:
        channel = lattice_channel(laplace_channel(epsilon, levels, m), epsilon)
    except ConfigurationError:
        return None
    if levels * step_ratio(channel) > epsilon * (1.0 + EPSILON_SLACK):
        return None
    return channel


@lru_cache(maxsize=64)
def build_l1_laplace(epsilon: float, dimension: int) -> LatticeChannel:
    """The channel of the ``L`` minimising ``d·q_L + 1/L`` (see the module docstring)."""
    scored = []
    for steps in (1 << j for j in range(MAX_STEPS.bit_length())):
        channel = build_steps(epsilon, steps)
        if channel is not None:
            scored.append((dimension * channel.level_variances[steps] + 1.0 / steps, channel))
    if not scored:
        raise ConfigurationError(
            f"ε = {epsilon!r} leaves no discrete Laplace window that 53-bit weights represent"
        )
    best = min(score for score, _ in scored)
    return next(channel for score, channel in scored if score <= best * (1.0 + TIE))


def systematic_round(u: FloatArray, steps: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """Unbiased rounding of each row of ``u`` (``‖u‖₁ <= steps``) to integers with
    ``‖z‖₁ <= steps`` (one uniform per row; see the module docstring)."""
    a = np.abs(u)
    base = np.floor(a)
    running = np.cumsum(a - base, axis=1)
    hits = np.maximum(np.ceil(running - rng.random((u.shape[0], 1))), 0.0)
    up = np.clip(np.diff(hits, axis=1, prepend=0.0), 0.0, 1.0)
    magnitude = (base + up).astype(np.int64)
    excess = magnitude.sum(axis=1) - steps
    for row in np.flatnonzero(excess > 0):  # floating-point excess only: about 2^-52 a row
        ups = np.flatnonzero(up[row])[::-1][: excess[row]]
        magnitude[row, ups] -= 1
    out: NDArray[np.int64] = np.where(u < 0, -magnitude, magnitude)
    return out


@register_gradient
@dataclass(frozen=True)
class L1Laplace(LatticeGradient):
    """Discrete Laplace noise on every coordinate of a vector with ``‖g‖₁ <= bound``."""

    name: ClassVar[str] = "l1-laplace"
    norm: ClassVar[GradientNorm] = "l1"

    dimension: int
    epsilon: float
    bound: float = 1.0
    channel: LatticeChannel = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        least, most = EPSILON_RANGE
        eps = check_parameters(self.dimension, self.epsilon, self.bound, self.name, most, least)
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "dimension", int(self.dimension))
        object.__setattr__(self, "channel", build_l1_laplace(eps, self.dimension))

    @classmethod
    def create(
        cls, dimension: int, epsilon: float, bound: float = 1.0, delta: float | None = None
    ) -> L1Laplace:
        refuse_delta(cls.name, delta)
        return cls(dimension=dimension, epsilon=epsilon, bound=bound)

    @property
    def steps(self) -> int:
        """``L``: lattice steps per ``bound`` (the L1 sensitivity is ``2L`` steps)."""
        return self.channel.levels // 2

    @property
    def rho(self) -> float:
        return step_ratio(self.channel)

    @property
    def exact_epsilon(self) -> float:
        """``2L·ρ`` (see the module docstring)."""
        return self.channel.levels * self.rho

    @property
    def segment(self) -> Segment:
        return Segment("cells", self.dimension * index_width(self.channel.cells))

    def published_parameters(self) -> dict[str, Any]:
        return {"steps": self.steps}

    def scaled(self, values: Any) -> FloatArray:
        """``t = g/bound`` of clipped vectors (a row outside the L1 ball is refused)."""
        t = check_vectors(values, self.dimension) / self.bound
        if t.size and float(np.abs(t).sum(axis=1).max()) > 1.0 + 1e-9:
            raise InvalidRecordError(f"vectors must have an L1 norm of at most {self.bound}")
        return t

    def perturb(self, values: Any, rng: np.random.Generator | None = None) -> NDArray[np.int64]:
        """``n × d`` cell indices for clipped vectors (vectorised)."""
        t = self.scaled(values)
        gen = resolve_rng(rng)
        z = systematic_round(t * self.steps, self.steps, gen)
        cells = self.channel.integer.sample((z + self.steps).reshape(-1), gen)
        return cells.reshape(t.shape)

    def pack(self, answers: NDArray[Any]) -> NDArray[np.uint8]:
        cells = np.asarray(answers, dtype=np.int64)
        width = index_width(self.channel.cells)
        return pack_index(cells.reshape(-1), width).reshape(cells.shape[0], -1)

    def unpack(self, segment: NDArray[np.uint8]) -> Unpacked:
        width = index_width(self.channel.cells)
        raw = np.asarray(segment, dtype=np.uint8)
        cells = read_index(raw.reshape(-1, width)).reshape(raw.shape[0], self.dimension)
        return Unpacked(
            values=cells,
            bad=np.asarray((cells >= self.channel.cells).any(axis=1)),
            problem="cell index outside the window",
        )

    def accumulate(self, answers: NDArray[Any]) -> dict[str, NDArray[Any]]:
        cells = np.asarray(answers, dtype=np.int64)
        return self.count(np.arange(self.dimension)[None, :], cells)

    def coordinate_variance(self, gradients: Any) -> FloatArray:
        """``Var(v_y | t_j)·bound²``: rounding (its marginal is randomized rounding) and noise."""
        t = self.scaled(gradients)
        var = self.channel.report_variance(t.reshape(-1)).reshape(t.shape)
        out: FloatArray = var * self.bound**2
        return out
