"""Discrete Gaussian noise on an L2-clipped gradient (``"l2-gaussian"``), (ε, δ)-LDP.

The Gaussian mechanism (Dwork and Roth, 2014, App. A; the coursework's other recipe): a
vector clipped to ``‖g‖₂ <= C`` has L2 sensitivity ``2C``, and ``g + N(0, σ²I)`` is
(ε, δ)-DP for σ calibrated to ``2C``. Here the noise is discrete and exact on the wire, as
in :mod:`ldp_shared.mechanisms.gradient_laplace`, and the δ is a proven bound computed
from the parameters:

1. **Round onto the lattice, with the L2 norm bounded.** With ``t = g/C`` (``‖t‖₂ <= 1``)
   and ``L`` steps per unit, ``u = L·t``. Each coordinate is rounded on its own to
   ``⌊u_j⌋`` or ``⌈u_j⌉`` with its fractional part's probability, so ``E[z] = u`` and
   ``Var z_j = f_j(1 − f_j)``. Rounding can raise the norm: ``|z_j − u_j| < 1``, so
   ``‖z‖₂ <= ‖u‖₂ + ‖z − u‖₂ < L + √d``, and this is attained in the limit (every
   ``|u_j|`` just above ``L/√d`` rounding up). The mechanism therefore **accounts for
   the worst case**: ``‖z‖₂² <= Q = ⌊(L + √d)²⌋``, enforced on the integers (a
   floating-point excess undoes round-ups; mathematically it never happens), so two
   rounded vectors are at most ``Δ = 2√Q`` steps apart in L2. ``L`` is the smallest
   power of two ``>= 64√d`` (up to :data:`MAX_STEPS`; halved while the noise table is too
   big, see :func:`build_gaussian_vector`), so the worst case costs at most
   ``(1 + 1/64)²``, 3%, of the noise variance (1.9% at ``d = 92``), and rounding adds
   at most ``d/(4L²)`` to the trace, under ``1/16384`` of ``C²``.
2. **Noise.** ``y_j = z_j + Y_j``, ``Y_j`` independent, drawn from the discrete Gaussian
   ``P(Y = y) ∝ exp(−y²/(2s²))`` on ``|y| <= M = ⌈9s⌉`` (Canonne, Kamath and Steinke,
   "The Discrete Gaussian for Differential Privacy", NeurIPS 2020), quantised to one
   column of 53-bit integer weights and sampled exactly
   (:mod:`ldp_shared.mechanisms.integer_channel`). No floating-point digit of the
   gradient travels (Mironov, CCS 2012).
3. **δ, a bound computed from ``(ε, d, L, s)``.** Three steps, each proven:

   * *Rényi divergence.* For an integer shift ``a``, ``Σ_y p(y − a)^α p(y)^{1−α} =
     e^{α(α−1)a²/(2s²)}·θ(αa)/θ(0)``, where ``θ(c) = Σ_y e^{−(y−c)²/(2s²)}`` is largest
     at ``c = 0`` (Poisson summation: ``θ(c) = s√(2π)Σ_k e^{−2π²s²k²}cos(2πkc)``). So
     ``D_α <= α a²/(2s²)``, and over independent coordinates ``D_α <= α‖z − z'‖₂²/(2s²)
     <= α·ρ`` with ``ρ = Δ²/(2s²) = 2Q/s²``: the ideal (untruncated, unquantised)
     mechanism is ρ-zCDP, as the continuous Gaussian is (CKS 2020, §2 and §4).
   * *Conversion* (CKS 2020, §2.3; Asoodeh, Liao, Calmon, Kosut and Sankar, 2020):
     ρ-zCDP implies (ε, δ₀)-DP for ``δ₀ = inf_{α>1} e^{(α−1)(αρ−ε)}·(1 − 1/α)^α/(α−1)``
     (:func:`zcdp_delta`; every α gives a valid bound, the infimum is searched on a grid
     and refined).
   * *What is sampled.* The sent noise differs from the ideal discrete Gaussian: the tails
     beyond ``M`` are cut and each weight is rounded to an integer. Per coordinate the
     total variation is at most ``η₁ = G·2^−53 + P(|Y| > M)`` (``G = 2M + 1`` weights,
     each within one unit of ``2^53·p``; the tail bounded by the Gaussian integral), over
     ``d`` coordinates at most ``d·η₁``. For any event ``S``: ``P̃_z(S) <= P_z(S) + dη₁ <=
     e^ε P_{z'}(S) + δ₀ + dη₁ <= e^ε P̃_{z'}(S) + δ₀ + (1 + e^ε)dη₁``. Randomized rounding
     mixes such pairs, and the hockey-stick divergence is jointly convex.

   So the report is **(ε, δ)-LDP with ``δ = δ₀ + (1 + e^ε)·d·η₁``**
   (:attr:`L2Gaussian.delta`), at the allotted ε. ``s`` is the smallest (relative
   ``1e-12``) for which that δ is within the requested one. There is no closed form for
   the exact δ(ε) of a multivariate discrete Gaussian over every L2-bounded integer shift;
   the continuous Gaussian's exact curve (Balle and Wang, ICML 2018) at the same ``s``
   and ``Δ`` is published beside it (``continuous_delta``) as the reference. The
   conversion costs 6 to 9% of σ against that curve (δ = 1e-6, ε from 8 down to 0.1).

**Estimation.** The statistics are int64 ``sums[d]`` and ``squares[d]`` of ``y``. The
mean vector is ``C·(Σy/n − μ)/L``, with ``μ`` the quantised noise's exact mean (zero up
to a weight's rounding), unbiased; its variance per coordinate is estimated by the
sample variance over ``n``. The sums are exact while ``n·(√Q + M)² < 2^63``: for any
parameters at least 2^21 reports a round (the noise table has at most 2^22 cells).

Segment: ``values``, ``d`` unsigned big-endian integers ``y + √Q + M`` of 1 to 4 bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from ldp_shared.errors import ConfigurationError, InvalidQueryError, InvalidRecordError
from ldp_shared.kernel import FloatArray
from ldp_shared.mechanisms._checks import check_epsilon
from ldp_shared.mechanisms.base import Blocks, Segment, StatsBlock, Unpacked
from ldp_shared.mechanisms.gaussian import TAIL_SDS, analytic_gaussian_delta
from ldp_shared.mechanisms.gradient import (
    GradientNorm,
    GradientRandomizer,
    check_parameters,
    check_vectors,
    register_gradient,
)
from ldp_shared.mechanisms.integer_channel import (
    TOTAL,
    IntegerChannel,
    integer_channel,
    uniform_words,
)
from ldp_shared.rand import resolve_rng

STEPS_PER_ROOT_D = 64
"""``L >= 64√d``: the worst-case rounding costs at most ``(1 + 1/64)²`` of the variance."""
MAX_STEPS = 4096
MAX_NOISE_CELLS = 1 << 22
"""The noise table's size limit (``G = 2M + 1``); ``L`` halves until the table fits."""
RELATIVE_PRECISION = 1e-12


def zcdp_delta(epsilon: float, rho: float) -> float:
    """``inf_{α>1} e^{(α−1)(αρ−ε)}(1 − 1/α)^α/(α−1)``: the δ at ε of a ρ-zCDP mechanism
    (a grid over ``log(α − 1)``, then golden-section refinement; any α is a valid bound)."""
    if rho <= 0.0:
        return 0.0

    def log_bound(log_a1: float) -> float:
        a1 = math.exp(log_a1)
        alpha = 1.0 + a1
        return a1 * (alpha * rho - epsilon) - log_a1 + alpha * math.log1p(-1.0 / alpha)

    grid = np.linspace(-12.0, 14.0, 521)
    values = [log_bound(float(x)) for x in grid]
    i = int(np.argmin(values))
    lo, hi = float(grid[max(i - 1, 0)]), float(grid[min(i + 1, len(grid) - 1)])
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    for _ in range(80):
        a, b = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
        lo, hi = (lo, b) if log_bound(a) <= log_bound(b) else (a, hi)
    best = min(values[i], log_bound(lo), log_bound(hi))
    return min(1.0, math.exp(best))


def tail_mass(sigma: float, margin: int) -> float:
    """A bound on ``P(|Y| > M)`` for the discrete Gaussian of parameter ``s``: the tails'
    sum is below the Gaussian integral beyond ``M``, the normaliser above the whole
    integral minus its peak (and above 1)."""
    tails = sigma * math.sqrt(2.0 * math.pi) * math.erfc(margin / (sigma * math.sqrt(2.0)))
    return tails / max(1.0, sigma * math.sqrt(2.0 * math.pi) - 1.0)


def noise_margin(sigma: float) -> int:
    """``M = ⌈9s⌉``."""
    return math.ceil(TAIL_SDS * sigma)


def vector_delta(epsilon: float, dimension: int, squared_bound: int, sigma: float) -> float:
    """``δ₀ + (1 + e^ε)·d·η₁`` (see the module docstring)."""
    margin = noise_margin(sigma)
    eta = (2 * margin + 1) / float(TOTAL) + tail_mass(sigma, margin)
    sampled = (1.0 + math.exp(min(epsilon, 700.0))) * dimension * eta
    return zcdp_delta(epsilon, 2.0 * squared_bound / sigma**2) + sampled


def noise_table(sigma: float) -> IntegerChannel:
    """The discrete Gaussian on ``[−M, M]`` as one quantised column (weights sum to 2^53)."""
    margin = noise_margin(sigma)
    y = np.arange(-margin, margin + 1, dtype=np.float64)
    weight = np.exp(-np.square(y) / (2.0 * sigma**2))
    return integer_channel((weight / weight.sum())[:, None], math.inf)


@dataclass(frozen=True)
class GaussianVectorNoise:
    """The calibrated noise of ``l2-gaussian``: ``L``, ``Q``, ``s``, the table, its exact
    mean and variance (in steps) and the δ at ε."""

    steps: int
    squared_bound: int
    sigma: float
    table: IntegerChannel
    mean: float
    variance: float
    delta: float

    @property
    def margin(self) -> int:
        return (self.table.outputs - 1) // 2

    @property
    def offset(self) -> int:
        """``⌊√Q⌋ + M``: added to ``y`` so that it travels unsigned."""
        return math.isqrt(self.squared_bound) + self.margin


def calibrated_sigma(epsilon: float, delta: float, dimension: int, squared_bound: int) -> float:
    """The smallest ``s`` (relative :data:`RELATIVE_PRECISION`) whose bound is ``<= δ``."""

    def fits(s: float) -> bool:
        return vector_delta(epsilon, dimension, squared_bound, s) <= delta

    hi = math.sqrt(squared_bound)
    while not fits(hi):
        hi *= 2.0
        if noise_margin(hi) > MAX_NOISE_CELLS:
            return hi
    lo = hi / 2.0
    while fits(lo) and lo > 1e-3:
        hi, lo = lo, lo / 2.0
    while hi - lo > RELATIVE_PRECISION * hi:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if fits(mid) else (mid, hi)
    return hi


@lru_cache(maxsize=32)
def build_gaussian_vector(epsilon: float, delta: float, dimension: int) -> GaussianVectorNoise:
    """The noise for ``(ε, δ)`` on ``d``-vectors: ``L`` from ``64√d``, halved while the
    table is too big (its size, and so the sampling slack ``(1 + e^ε)·d·η₁``, grows with
    ``L``: at ε = 8 and ``d = 92`` that slack alone would exceed δ = 1e-6 at ``L = 1024``)."""
    steps = 1
    while steps < min(STEPS_PER_ROOT_D * math.sqrt(dimension), MAX_STEPS):
        steps *= 2
    while steps >= 1:
        squared = math.floor((steps + math.sqrt(dimension)) ** 2)
        sigma = calibrated_sigma(epsilon, delta, dimension, squared)
        if 2 * noise_margin(sigma) + 1 <= MAX_NOISE_CELLS:
            break
        steps //= 2
    else:
        raise ConfigurationError(
            f"the discrete Gaussian at ε = {epsilon!r}, δ = {delta!r} needs a noise table of"
            f" more than {MAX_NOISE_CELLS} cells, or loses more than δ to its rounding; use a"
            f" larger δ, or a {'larger' if epsilon < 1.0 else 'smaller'} ε"
        )
    table = noise_table(sigma)
    margin = (table.outputs - 1) // 2
    y = range(-margin, margin + 1)
    weights = [int(w) for w in table.weights[:, 0]]
    first = sum(w * v for w, v in zip(weights, y, strict=True))  # exact integers
    second = sum(w * v * v for w, v in zip(weights, y, strict=True))
    mean = first / TOTAL
    exact = vector_delta(epsilon, dimension, squared, sigma)
    return GaussianVectorNoise(
        steps, squared, sigma, table, mean, second / TOTAL - mean * mean, exact
    )


def round_in_ball(u: FloatArray, squared_bound: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """Independent unbiased rounding of each row of ``u`` with ``‖z‖₂² <= Q`` enforced on
    the integers (only a floating-point excess ever triggers the fix)."""
    a = np.abs(u)
    base = np.floor(a)
    up = rng.random(u.shape) < (a - base)
    magnitude = (base + up).astype(np.int64)
    for row in np.flatnonzero(np.square(magnitude).sum(axis=1) > squared_bound):
        for j in np.flatnonzero(up[row])[::-1]:
            magnitude[row, j] -= 1
            if int(np.square(magnitude[row]).sum()) <= squared_bound:
                break
    out: NDArray[np.int64] = np.where(u < 0, -magnitude, magnitude)
    return out


def value_width(cells: int) -> int:
    """Bytes of an unsigned big-endian value below ``cells``."""
    return max(1, ((cells - 1).bit_length() + 7) // 8)


@register_gradient
@dataclass(frozen=True)
class L2Gaussian(GradientRandomizer):
    """Discrete Gaussian noise on every coordinate of a vector with ``‖g‖₂ <= bound``."""

    name: ClassVar[str] = "l2-gaussian"
    norm: ClassVar[GradientNorm] = "l2"

    dimension: int
    epsilon: float
    target_delta: float
    bound: float = 1.0
    noise: GaussianVectorNoise = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        eps = check_parameters(self.dimension, self.epsilon, self.bound, self.name, math.inf)
        if not (isinstance(self.target_delta, float | int) and 0.0 < self.target_delta < 1.0):
            raise ConfigurationError(
                f"l2-gaussian needs δ in the open interval (0, 1), got {self.target_delta!r}"
            )
        d, delta = int(self.dimension), float(self.target_delta)
        room = delta * TOTAL / (3.0 * d) - 1.0  # (1 + e^ε)·d·η₁ <= δ with η₁ >= 3·2^−53
        most = math.log(room) if room > 1.0 else 0.0
        check_epsilon(eps, most, f"l2-gaussian at δ = {delta:g} on {d} coordinates")
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "dimension", d)
        object.__setattr__(self, "target_delta", delta)
        noise = build_gaussian_vector(eps, delta, d)
        object.__setattr__(self, "noise", noise)

    @classmethod
    def create(
        cls, dimension: int, epsilon: float, bound: float = 1.0, delta: float | None = None
    ) -> L2Gaussian:
        if delta is None:
            raise ConfigurationError("l2-gaussian is (ε, δ)-LDP: it needs a δ")
        return cls(dimension=dimension, epsilon=epsilon, target_delta=delta, bound=bound)

    @property
    def exact_epsilon(self) -> float:
        """The allotted ε: :attr:`delta` is computed at it."""
        return self.epsilon

    @property
    def delta(self) -> float:
        """``δ₀ + (1 + e^ε)·d·η₁`` at ε (at most the requested δ)."""
        return self.noise.delta

    @property
    def continuous_delta(self) -> float:
        """The continuous Gaussian's exact δ at ε for the same ``s`` and ``Δ = 2√Q``
        (Balle and Wang 2018): the reference, not a claim."""
        sensitivity = 2.0 * math.sqrt(self.noise.squared_bound)
        return analytic_gaussian_delta(self.epsilon, self.noise.sigma, sensitivity)

    @property
    def cells(self) -> int:
        return 2 * self.noise.offset + 1

    @property
    def segment(self) -> Segment:
        return Segment("values", self.dimension * value_width(self.cells))

    @property
    def stats_layout(self) -> tuple[StatsBlock, ...]:
        return (
            StatsBlock("sums", "int64", self.dimension),
            StatsBlock("squares", "int64", self.dimension),
        )

    def published(self) -> dict[str, Any]:
        noise = self.noise
        return {
            "dimension": self.dimension,
            "bound": self.bound,
            "steps": noise.steps,
            "squared_bound": noise.squared_bound,
            "sigma_steps": noise.sigma,
            "margin": noise.margin,
            "delta": noise.delta,
            "continuous_delta": self.continuous_delta,
        }

    def scaled(self, values: Any) -> FloatArray:
        """``t = g/bound`` of clipped vectors (a row outside the L2 ball is refused)."""
        t = check_vectors(values, self.dimension) / self.bound
        if t.size and float(np.sqrt(np.square(t).sum(axis=1)).max()) > 1.0 + 1e-9:
            raise InvalidRecordError(f"vectors must have an L2 norm of at most {self.bound}")
        return t

    def perturb(self, values: Any, rng: np.random.Generator | None = None) -> NDArray[np.int64]:
        """``n × d`` values ``y + offset`` for clipped vectors (vectorised)."""
        t = self.scaled(values)
        gen = resolve_rng(rng)
        z = round_in_ball(t * self.noise.steps, self.noise.squared_bound, gen)
        draws = uniform_words(t.size, gen)
        cells = np.searchsorted(self.noise.table.cumulative[:, 0], draws, side="right")
        out: NDArray[np.int64] = z + cells.reshape(t.shape) - self.noise.margin
        return out + self.noise.offset

    def pack(self, answers: NDArray[Any]) -> NDArray[np.uint8]:
        values = np.asarray(answers, dtype=np.int64)
        width = value_width(self.cells)
        raw = values.reshape(-1).astype(">u4").view(np.uint8).reshape(-1, 4)[:, 4 - width :]
        return raw.reshape(values.shape[0], -1)

    def unpack(self, segment: NDArray[np.uint8]) -> Unpacked:
        width = value_width(self.cells)
        raw = np.asarray(segment, dtype=np.uint8).reshape(-1, width).astype(np.int64)
        flat = np.zeros(raw.shape[0], dtype=np.int64)
        for byte in range(width):
            flat = (flat << 8) | raw[:, byte]
        values = flat.reshape(-1, self.dimension)
        return Unpacked(
            values=values,
            bad=np.asarray((values >= self.cells).any(axis=1)),
            problem="value outside the noise window",
        )

    def accumulate(self, answers: NDArray[Any]) -> dict[str, NDArray[Any]]:
        y = np.asarray(answers, dtype=np.int64) - self.noise.offset
        return {"sums": y.sum(axis=0), "squares": np.square(y).sum(axis=0)}

    def estimate_mean(self, stats: Blocks, n: int) -> tuple[FloatArray, FloatArray]:
        if n <= 0:
            raise InvalidQueryError("no reports to estimate from")
        sums = np.asarray(stats["sums"], dtype=np.float64)
        squares = np.asarray(stats["squares"], dtype=np.float64)
        scale = self.bound / self.noise.steps
        mean: FloatArray = (sums / n - self.noise.mean) * scale
        spread = np.maximum(squares - sums * sums / n, 0.0) / max(n - 1, 1)
        variance: FloatArray = spread / n * scale**2
        return mean, variance

    def coordinate_variance(self, gradients: Any) -> FloatArray:
        """``(f(1 − f) + Var Y)·(bound/L)²``: rounding and the quantised noise."""
        u = np.abs(self.scaled(gradients)) * self.noise.steps
        f = u - np.floor(u)
        out: FloatArray = (f * (1.0 - f) + self.noise.variance) * (
            self.bound / self.noise.steps
        ) ** 2
        return out
