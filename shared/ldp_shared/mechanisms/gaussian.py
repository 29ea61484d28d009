"""The discrete Gaussian mechanism on the level grid (``"mechanism": "gaussian"``), (ε, δ)-LDP.

**Calibration** (plain functions, reusable wherever Gaussian noise of L2 sensitivity
``Δ`` is added). The Gaussian mechanism ``f(x) + N(0, σ²)`` is (ε, δ)-DP

* *classical*: for ``σ = Δ·sqrt(2 ln(1.25/δ))/ε`` when ``ε < 1`` (Dwork and Roth, "The
  Algorithmic Foundations of Differential Privacy", 2014, Thm A.1). The proof needs
  ``ε < 1`` and the formula fails above it (for large ε it falls below the exact
  calibration, which decays like ``1/sqrt(ε)``, not ``1/ε``), so
  :func:`classical_gaussian_sigma` refuses ``ε >= 1``;
* *analytic*: exactly when ``Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ) <= δ`` (Balle and
  Wang, "Improving the Gaussian Mechanism for Differential Privacy: Analytical
  Calibration and Optimal Denoising", ICML 2018, Thm 8). The left side falls as σ grows;
  :func:`analytic_gaussian_sigma` returns the smallest such σ (bisection on ``log σ``, Φ
  from ``math.erfc``, which keeps its relative precision in the lower tail).

**On the device.** Floating-point Gaussian noise leaks the value through its low bits
(Mironov, CCS 2012), so the device instead rounds ``t`` to a level ``k ∈ {0, …, K}``
(:mod:`ldp_shared.mechanisms.lattice`) and answers ``y = clamp(k + Z, −M, K + M)`` with
``Z`` discrete Gaussian, ``P(Z = z) ∝ exp(−z²/(2s²))`` on the integers (Canonne, Kamath
and Steinke, "The Discrete Gaussian for Differential Privacy", NeurIPS 2020). Two levels
are at most ``K`` steps apart (sensitivity ``K``), so ``s`` starts at the chosen
calibration's σ for ``Δ = K``; in value units ``σ_x = s·(hi − lo)/K``, on the ``t`` scale
``σ_t = 2s/K``. ``M = ⌈9s⌉``: the clamped tails, ``P(|Z| > 9s) ≈ 2e-19``, are below the
``2^−53`` resolution of a weight, so the window costs the decoder nothing. The channel is
quantised to 53-bit integer weights (every cell possible under every level) and sampled
exactly (:mod:`ldp_shared.mechanisms.integer_channel`), like ``laplace``.

**Exact δ.** Randomized rounding mixes two columns and the hockey-stick divergence is
jointly convex, so the δ at ε of what is sent is that of the quantised channel between
levels, :func:`hockey_stick_delta`: ``max_{k,k'} Σ_y max(0, P(y|k) − e^ε P(y|k'))``. The
discrete, quantised channel's δ differs from the continuous Gaussian's (by up to a factor
3 at ``s < 1``), so ``s`` is raised by steps of ``1/4096`` (relative) until that exact δ is
at most the requested one; the config publishes the calibration, ``s`` (``sigma_levels``),
``σ_x`` (``sigma``) and the exact δ, and the randomizer reports ``(ε, δ)`` with ε the
allotted one. (The channel's pure ε, from weights of 1 against ``2^52``, is about 36:
meaningless, and not claimed.)

**K.** As ``laplace``: among the powers of two 1 … 256 whose window fits
:data:`MAX_CELLS`, the smallest whose worst-case variance per report (rounding included)
is within 1% of the best. Since ``s ∝ K``, the noise on the ``t`` scale hardly depends on
``K`` and the rounding's ``1/K²`` is what a larger grid buys. Measured (δ = 1e-5,
analytic; worst case on the ``t`` scale against the continuous Gaussian's ``σ_t²``; CPU
time of the build with all candidates, one BLAS thread; peak traced memory): ε = 0.5:
K = 1, 198.8 (197.8), 0.04 s, 2.5 MB; ε = 1: K = 2, 55.92 (55.67), 0.05 s, 1.4 MB; ε = 2:
K = 4, 15.97 (15.90), 0.07 s, 2.8 MB; ε = 4: K = 8, 4.698 (4.676), 0.10 s, 5.9 MB; ε = 8:
K = 16, 1.445 (1.441), 0.18 s, 13 MB. That is 10 to 12 times ``laplace``'s worst case at
every ε: in one dimension the Gaussian pays for δ with more noise than a bounded number
needs; it is here for (ε, δ) accounting and for noise on vectors. ε below about 0.03 (at
δ = 1e-5) needs more than 2048 cells and is refused.

Segment: ``index``, 1 or 2 bytes (``G <= 256`` or not). Statistics: int64 ``counts[G]``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, model_validator

from ldp_shared.errors import ConfigurationError
from ldp_shared.kernel import FloatArray
from ldp_shared.mechanisms._checks import check_epsilon
from ldp_shared.mechanisms.base import AttributeSpec, PlannedVariance, register
from ldp_shared.mechanisms.integer_channel import integer_channel
from ldp_shared.mechanisms.laplace import MAX_CELLS, MAX_LEVELS, TIE, worst_variance
from ldp_shared.mechanisms.lattice import LatticeChannel, LatticeRandomizer, lattice_channel
from ldp_shared.mechanisms.numeric import NumericSpec

Calibration = Literal["analytic", "classical"]
TAIL_SDS = 9.0
"""``M = ⌈9s⌉``: the window holds all but ``P(|Z| > 9s) ≈ 2e-19`` of every column."""
STEP = 1.0 / 4096.0
"""``s`` grows by factors ``1 + STEP`` until the exact δ is within the requested one."""
MAX_STEPS = 1 << 16
PLANNED_DELTA = 1e-6
"""δ per report of a planned ``gaussian`` attribute."""


def _check(epsilon: float, delta: float, sensitivity: float) -> None:
    if not (math.isfinite(epsilon) and epsilon > 0.0):
        raise ConfigurationError(f"the Gaussian mechanism needs a finite ε > 0, got {epsilon!r}")
    check_epsilon(epsilon, mechanism="the Gaussian mechanism")
    if not 0.0 < delta < 1.0:
        raise ConfigurationError(f"δ must be in the open interval (0, 1), got {delta!r}")
    if not (math.isfinite(sensitivity) and sensitivity > 0.0):
        raise ConfigurationError(f"the sensitivity must be finite and > 0, got {sensitivity!r}")


def normal_cdf(x: float) -> float:
    """``Φ(x)``, relatively precise in the lower tail."""
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def classical_gaussian_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """``Δ·sqrt(2 ln(1.25/δ))/ε`` (Dwork and Roth 2014, Thm A.1), only for ``ε < 1``."""
    _check(epsilon, delta, sensitivity)
    if epsilon >= 1.0:
        raise ConfigurationError(
            f"the classical Gaussian calibration is proven only for ε < 1 (Dwork and Roth,"
            f" Thm A.1), got ε = {epsilon!r}; use calibration 'analytic'"
        )
    return sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon


def analytic_gaussian_delta(epsilon: float, sigma: float, sensitivity: float) -> float:
    """The least δ at which ``N(0, σ²)`` noise is (ε, δ)-DP for sensitivity ``Δ``:
    ``Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ)`` (Balle and Wang 2018, Thm 8)."""
    a, b = sensitivity / (2.0 * sigma), epsilon * sigma / sensitivity
    tail = normal_cdf(-a - b)
    second = 0.0 if tail == 0.0 else math.exp(min(epsilon + math.log(tail), 700.0))
    return max(normal_cdf(a - b) - second, 0.0)


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """The smallest σ with :func:`analytic_gaussian_delta` ``<= δ`` (to a relative 1e-15)."""
    _check(epsilon, delta, sensitivity)
    hi = sensitivity
    while analytic_gaussian_delta(epsilon, hi, sensitivity) > delta:
        hi *= 2.0
    lo = hi
    while analytic_gaussian_delta(epsilon, lo, sensitivity) <= delta:
        lo /= 2.0
    for _ in range(200):  # invariant: δ(lo) > delta >= δ(hi)
        mid = math.sqrt(lo * hi)
        if not lo < mid < hi or hi - lo <= 1e-15 * hi:
            break
        lo, hi = (
            (lo, mid) if analytic_gaussian_delta(epsilon, mid, sensitivity) <= delta else (mid, hi)
        )
    return hi


SIGMAS = {"analytic": analytic_gaussian_sigma, "classical": classical_gaussian_sigma}


def hockey_stick_delta(matrix: FloatArray, epsilon: float) -> float:
    """``max_{k,k'} Σ_y max(0, M[y,k] − e^ε M[y,k'])``: the least δ at which the channel
    ``M[y, k] = P(y | k)`` is (ε, δ)-LDP (all pairs of columns)."""
    m = np.asarray(matrix, dtype=np.float64)
    ratio = math.exp(min(epsilon, 700.0))
    return max(
        float(np.maximum(m[:, [k]] - ratio * m, 0.0).sum(axis=0).max()) for k in range(m.shape[1])
    )


def gaussian_channel(sigma_levels: float, levels: int, margin: int) -> FloatArray:
    """``M[g, k] = P(clamp(k + Z, −M, K + M) = g − M)``, ``Z`` discrete Gaussian of
    parameter ``s``, normalised over every integer whose weight does not underflow."""
    reach = levels + margin + math.ceil(38.6 * sigma_levels) + 1  # exp(−z²/2s²) = 0 beyond
    weight = np.exp(
        -np.square(np.arange(-reach, reach + 1, dtype=np.float64)) / (2.0 * sigma_levels**2)
    )
    below = np.cumsum(weight)  # P(Z <= z) up to the normaliser, at index z + reach
    y = np.arange(-margin, levels + margin + 1)[:, None]
    k = np.arange(levels + 1)[None, :]
    channel: FloatArray = weight[y - k + reach]
    channel[0] = below[reach - margin - k[0]]
    channel[-1] = below[reach - (levels + margin) + k[0]]  # P(Z >= z) = P(Z <= −z)
    channel /= below[-1]
    return channel


@dataclass(frozen=True)
class GaussianLattice:
    """A calibrated discrete Gaussian lattice: its channel, ``s`` and the exact δ at ε."""

    channel: LatticeChannel
    sigma_levels: float
    delta: float

    @property
    def margin(self) -> int:
        return (self.channel.cells - 1 - self.channel.levels) // 2


def window(sigma_levels: float, levels: int) -> int:
    """``G = K + 2M + 1`` cells, ``M = ⌈9s⌉``."""
    return levels + 2 * math.ceil(TAIL_SDS * sigma_levels) + 1


def ideal_channel(sigma_levels: float, levels: int) -> FloatArray:
    """The clamped discrete Gaussian on the window of ``s``, columns summing to one as
    :func:`~ldp_shared.mechanisms.lattice.lattice_channel` quantises them."""
    ideal = gaussian_channel(sigma_levels, levels, math.ceil(TAIL_SDS * sigma_levels))
    out: FloatArray = ideal / ideal.sum(axis=0, keepdims=True)
    return out


def least_step(test: Callable[[int], bool], first: int) -> int:
    """The least ``j >= first`` with ``test(j)``, for a test that turns true and stays
    true (exponential, then binary search)."""
    if test(first):
        return first
    bad, span = first, 1
    while not test(first + span):
        bad, span = first + span, span * 2
        if span > MAX_STEPS:
            raise ConfigurationError("no discrete Gaussian on this grid meets the requested δ")
    good = first + span
    while good - bad > 1:
        mid = (bad + good) // 2
        bad, good = (bad, mid) if test(mid) else (mid, good)
    return good


def calibrate(
    epsilon: float, delta: float, start: float, levels: int, columns: list[int] | None, first: int
) -> int:
    """The least ``j >= first`` for which the quantised channel of ``s = σ₀(1 + STEP)^j``
    has an exact δ at ε within ``delta`` between ``columns`` (every pair when ``None``),
    or whose window exceeds :data:`MAX_CELLS` (windows only widen as ``s`` grows)."""

    def fits(j: int) -> bool:
        s = start * (1.0 + STEP) ** j
        if window(s, levels) > MAX_CELLS:
            return True
        m = integer_channel(ideal_channel(s, levels), math.inf).matrix
        return hockey_stick_delta(m if columns is None else m[:, columns], epsilon) <= delta

    return least_step(fits, first)


def _too_wide(epsilon: float, delta: float) -> ConfigurationError:
    return ConfigurationError(
        f"the discrete Gaussian at ε = {epsilon!r}, δ = {delta!r} needs more than"
        f" {MAX_CELLS} cells even on two levels; use a larger ε or δ"
    )


@lru_cache(maxsize=32)
def build_gaussian(epsilon: float, delta: float, calibration: Calibration) -> GaussianLattice:
    """The calibrated discrete Gaussian lattice on the chosen grid (cached).

    Each candidate ``K`` is calibrated on its extreme levels (the farthest shift diverges
    most); the chosen one is then checked, and if need be raised further, on every pair."""
    if calibration not in SIGMAS:
        raise ConfigurationError(
            f"calibration must be 'analytic' or 'classical', got {calibration!r}"
        )
    built: list[tuple[float, float, int, LatticeChannel]] = []
    for levels in (1 << j for j in range(MAX_LEVELS.bit_length())):
        start = SIGMAS[calibration](epsilon, delta, float(levels))
        step = calibrate(epsilon, delta, start, levels, [0, levels], 0)
        s = start * (1.0 + STEP) ** step
        if window(s, levels) > MAX_CELLS:
            break  # s grows with K: larger grids do not fit either
        channel = lattice_channel(ideal_channel(s, levels), math.inf)
        built.append((worst_variance(channel), start, step, channel))
    if not built:
        raise _too_wide(epsilon, delta)
    best = min(entry[0] for entry in built)
    _, start, step, channel = next(entry for entry in built if entry[0] <= best * (1.0 + TIE))
    levels = channel.levels
    checked = calibrate(epsilon, delta, start, levels, None, step)
    s = start * (1.0 + STEP) ** checked
    if window(s, levels) > MAX_CELLS:
        raise _too_wide(epsilon, delta)
    if checked != step:
        channel = lattice_channel(ideal_channel(s, levels), math.inf)
    return GaussianLattice(channel, s, hockey_stick_delta(channel.matrix, epsilon))


@register
class GaussianSpec(NumericSpec):
    """A number in ``[lo, hi]`` reported with discrete Gaussian noise on a level grid."""

    mechanism: Literal["gaussian"]
    delta: float = Field(description="δ of (ε, δ)-LDP, in the open interval (0, 1)")
    calibration: Calibration = Field(
        default="analytic",
        description="σ from Balle and Wang's exact condition, or the classical formula (ε < 1)",
    )

    @model_validator(mode="after")
    def _check_delta(self) -> GaussianSpec:
        if not 0.0 < self.delta < 1.0:
            raise ValueError(
                f"attribute {self.name!r}: delta must be in the open interval (0, 1),"
                f" got {self.delta!r}"
            )
        return self

    @classmethod
    def plan_specs(
        cls, domain_size: int | None, lo: float | None, hi: float | None
    ) -> list[AttributeSpec]:
        """Planned for numbers in ``[lo, hi]`` at δ = :data:`PLANNED_DELTA` per report (the
        query's δ is the shuffled central guarantee's), analytic calibration; the mean
        at its worst value, the lattice's :meth:`LatticeRandomizer.planned_variance`."""
        if lo is None or hi is None or domain_size is not None:
            return []
        try:
            return [cls(name="planned", mechanism="gaussian", lo=lo, hi=hi, delta=PLANNED_DELTA)]
        except ValueError:
            return []

    def randomizer(self, epsilon: float | None, classes: int = 1) -> GaussianRandomizer:
        if epsilon is None:
            raise ConfigurationError(f"attribute {self.name!r}: gaussian needs an ε")
        return GaussianRandomizer(
            epsilon=epsilon,
            lo=self.lo,
            hi=self.hi,
            target_delta=self.delta,
            calibration=self.calibration,
        )


@dataclass(frozen=True)
class GaussianRandomizer(LatticeRandomizer):
    """Discrete Gaussian noise at ``(epsilon, target_delta)`` on the level grid of ``[lo, hi]``."""

    mechanism: ClassVar[str] = "gaussian"

    target_delta: float
    calibration: Calibration = "analytic"

    def build(self) -> LatticeChannel:
        return self.lattice.channel

    @property
    def lattice(self) -> GaussianLattice:
        return build_gaussian(self.epsilon, float(self.target_delta), self.calibration)

    @property
    def exact_epsilon(self) -> float:
        """The allotted ε: the channel's δ is computed at it."""
        return self.epsilon

    @property
    def delta(self) -> float:
        """The exact δ at ε of the quantised channel sampled (at most ``target_delta``)."""
        return self.lattice.delta

    def planned_variance(self) -> PlannedVariance:
        """The lattice's worst ``Var(v_y | t)`` (the mean's variance per report at its worst
        value, rounding included), at the δ it was built for."""
        return replace(super().planned_variance(), parameters={"delta": self.target_delta})

    def published_parameters(self) -> dict[str, Any]:
        lattice = self.lattice
        return {
            "margin": lattice.margin,
            "calibration": self.calibration,
            "sigma_levels": lattice.sigma_levels,
            "sigma": lattice.sigma_levels * (self.hi - self.lo) / lattice.channel.levels,
        }
