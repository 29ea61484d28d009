"""The exponential mechanism (McSherry and Talwar, FOCS 2007) as a local randomizer.

A device holding value ``x`` of a ``d``-valued domain reports ``y`` with probability
``P(y|x) ∝ exp(λ·u(x, y))`` for a utility ``u`` and a scale ``λ``. Utilities:

* ``"equality"``: ``u(x, y) = [x = y]``. This is generalised randomized response
  (Kairouz, Oh and Viswanath 2014; Wang et al., USENIX Security 2017 §4.1): ``p =
  e^λ/(e^λ+d-1)``, ``q = 1/(e^λ+d-1)``, channel ε = ``λ``.
* ``"ordinal"``: ``u(x, y) = -|x - y|`` on the domain's order (indices).
* a ``d × d`` matrix: ``utility[i][j] = u(domain[i], domain[j])``, true value first.

**Calibration.** McSherry and Talwar's ``λ = ε/(2Δu)``, ``Δu = max_{y,x,x'} |u(x,y) -
u(x',y)|`` (``"textbook"``) charges ``λΔu`` for the score and as much again for the
normaliser ``Z(x) = Σ_y exp(λu(x,y))``. The channel's exact ε, ``ε(λ) = max_y
max_{x,x'} ln(M[y,x]/M[y,x'])``, is often smaller. For the ordinal utility it is
exactly ``λ(d-1)``: with ``ρ = e^-λ`` the ratio is ``ρ^{|x-y|-|x'-y|}·Z(x')/Z(x)``; for
``x < x'`` the triangle inequality gives ``Z(x') <= e^{λ(d-1-x')} Z(d-1)``, ``Z`` is
smallest at the ends and ``Z(0) = Z(d-1)`` by symmetry, so the ratio is at most
``e^{λ(x'-x)}·e^{λ(d-1-x')} <= e^{λ(d-1)}`` (``x > x'`` by reflection), attained at
``y = x = 0``, ``x' = d-1``: the normalisers cancel there. Likewise ``ε(λ) = λ`` for
equality. So ``"tight"`` (the default) uses ``λ = ε/Δu`` (``ε/(d-1)``, resp. ``ε``) and
``"textbook"`` spends exactly ``ε/2``. Exact ε of the channels as sent, at ε = 1
(``kernel.channel_epsilon``): ordinal d = 5 tight 0.9999999999999996, textbook 0.5;
ordinal d = 40 tight 1.0000000000000018, textbook 0.5000000000000022; equality d = 5
tight 1.0000000000000004, textbook 0.5000000000000004; the float channels for d = 2..80,
ε = 1e-4..30 are within 7e-12 of ε. A custom matrix is calibrated by bisection on
``ε(λ)`` from ``[ε/(2Δu), ε/Δu]`` (doubling the top until it spends ε), keeping the largest
``λ`` found with ``ε(λ) <= ε``; the textbook scale may spend well under ``ε/2`` there.

**Exact sampling** (:mod:`ldp_shared.mechanisms.integer_channel`). Each column of the
channel is quantised to int64 weights ``W[y, x] >= 1`` summing to ``2^53`` (largest
remainder), and a report is drawn with a uniform 53-bit integer ``U`` (the top bits of
one raw 64-bit word of the generator) as the first ``y`` whose cumulative weight exceeds
``U``: ``P(y|x) = W[y,x]/2^53`` exactly. The published ε is ``channel_epsilon(W/2^53)``
(the division is exact), i.e. the ε of what is
sent; a channel whose quantisation moves it above the allotted ε by more than
:data:`EPSILON_SLACK` is refused (GRR over 40 values at ε = 20: probabilities near 2e-9).
Far beyond, weights held at 1 cap the ε of a channel at ``ln(2^53 - d + 1) ≈ 36.7``.

**Estimation.** With ``M = W/2^53`` and ``π̂ = C/n`` the report frequencies, ``f̂ =
M^-1 π̂`` is unbiased, with covariance ``M^-1 Σ M^-T / n``, ``Σ = diag(π̂) - π̂π̂ᵀ``
(multinomial plug-in: users' values drawn i.i.d. from ``f``; for the frequencies of the
fixed population that reported, the covariance is smaller by ``(diag f - ffᵀ)/n``).
Channels with condition number above :data:`MAX_CONDITION` are refused. Consistent
estimates: :mod:`ldp_shared.analyses.ibu`.

Segment: ``index`` (one value index, 1 or 2 bytes). Statistics: int64 ``counts[d]``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from pydantic import model_validator

from ldp_shared.errors import ConfigurationError, InvalidQueryError
from ldp_shared.kernel import FloatArray, FrequencyEstimate, channel_epsilon, z_value
from ldp_shared.mechanisms._checks import check_epsilon, check_indices
from ldp_shared.mechanisms.base import EPSILON_SLACK as EPSILON_SLACK
from ldp_shared.mechanisms.base import AttributeSpec, Blocks, PlannedVariance, StatsBlock, register
from ldp_shared.mechanisms.categorical import (
    CategoricalSpec,
    ValueIndexAnswers,
)
from ldp_shared.mechanisms.integer_channel import (
    TOTAL as TOTAL,
)
from ldp_shared.mechanisms.integer_channel import (
    IntegerChannel,
    integer_channel,
)
from ldp_shared.mechanisms.integer_channel import (
    quantise as quantise,
)
from ldp_shared.mechanisms.likelihood import DenseChannel
from ldp_shared.rand import resolve_rng

Calibration = Literal["tight", "textbook"]
UTILITY_NAMES = ("equality", "ordinal")
MAX_DOMAIN = 512
"""Largest domain: the channel and its inverse are dense ``d × d`` matrices."""
MAX_CONDITION = 1e10
"""Largest 2-norm condition number of an invertible channel. Solving with ``M`` loses
about ``log10 κ`` digits: at ``κ = 1e10`` the inverse is still good to ``κ·2^-53 ≈ 1e-6``
relative, far below any standard error. Ordinal channels reach ``5e7`` at d = 512,
ε = 0.01 (``κ ≈ 2d²/ε``); GRR has ``κ = 1/(p-q)``."""


def _finite(value: float) -> bool:
    """Finite as a float (an integer too large for a float is not)."""
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def _utility_message(name: str, utility: Any, d: int | None) -> str | None:
    """What is wrong with a raw ``utility`` (``None`` when it is valid)."""
    where = f"attribute {name!r}: utility"
    if isinstance(utility, str):
        if utility in UTILITY_NAMES:
            return None
        return f"{where} {utility!r} is unknown; choose 'equality', 'ordinal' or a d×d matrix"
    if not isinstance(utility, list) or not all(isinstance(row, list) for row in utility):
        return f"{where} must be 'equality', 'ordinal' or a d×d matrix (a list of rows)"
    shape, size = [len(row) for row in utility], len(utility) if d is None else d
    if len(utility) != size or any(n != size for n in shape):
        return (
            f"{where} must be a {size}×{size} matrix (d = domain size); got rows of lengths {shape}"
        )
    cells = [v for row in utility for v in row]
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in cells):
        return f"{where} entries must be numbers"
    if not all(_finite(v) for v in cells):
        return f"{where} entries must be finite numbers"
    matrix = np.asarray(utility, dtype=np.float64)
    if len(utility) > 1 and np.all(matrix - matrix[:, :1] == matrix[:1] - matrix[0, 0]):
        return (
            f"{where} gives every value the same report distribution (u(x, y) = a(x) + b(y)):"
            " the answers would not depend on the value"
        )
    return None


@register
class ExponentialSpec(CategoricalSpec):
    """An attribute reported by the exponential mechanism with a utility over its domain."""

    mechanism: Literal["exponential"]
    utility: Literal["equality", "ordinal"] | list[list[float]]
    calibration: Calibration = "tight"

    @model_validator(mode="before")
    @classmethod
    def _check_utility(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        d = len(data["domain"]) if isinstance(data.get("domain"), list) else None
        if d is not None and d > MAX_DOMAIN:
            raise ValueError(
                f"attribute {data.get('name')!r}: the exponential mechanism takes at most"
                f" {MAX_DOMAIN} values (its channel is a dense d×d matrix), got {d}"
            )
        if "utility" not in data:
            return data  # the field is required: pydantic says so
        message = _utility_message(str(data.get("name")), data["utility"], d)
        if message is not None:
            raise ValueError(message)
        return data

    @property
    def is_ordered(self) -> bool:
        """The ordinal utility orders the domain (its CDF and median mean something)."""
        return self.utility == "ordinal"

    @classmethod
    def plan_specs(
        cls, domain_size: int | None, lo: float | None, hi: float | None
    ) -> list[AttributeSpec]:
        """Planned with the ordinal utility (equality is GRR, planned as ``grr``) over
        ``domain_size`` ordered values, at most :data:`MAX_DOMAIN`."""
        if domain_size is None or not 2 <= domain_size <= MAX_DOMAIN:
            return []
        domain = [str(i) for i in range(domain_size)]
        return [cls(name="planned", mechanism="exponential", domain=domain, utility="ordinal")]

    def utility_matrix(self) -> FloatArray:
        """``U[x, y] = u(domain[x], domain[y])``."""
        return utility_matrix(self.utility, len(self.domain))

    def randomizer(self, epsilon: float | None, classes: int = 1) -> ExponentialRandomizer:
        if epsilon is None:
            raise ConfigurationError(f"attribute {self.name!r}: the exponential mechanism needs ε")
        if classes != 1:
            raise ConfigurationError(f"attribute {self.name!r}: cannot join a label")
        u = self.utility
        key = u if isinstance(u, str) else tuple(tuple(float(v) for v in row) for row in u)
        return ExponentialRandomizer(len(self.domain), epsilon, key, self.calibration)


def utility_matrix(utility: str | Sequence[Sequence[float]], d: int) -> FloatArray:
    """The ``d × d`` utility matrix (true value × report) of a named or explicit utility."""
    if utility == "equality":
        return np.eye(d)
    if utility == "ordinal":
        x = np.arange(d, dtype=np.float64)
        return -np.abs(x[:, None] - x[None, :])
    if isinstance(utility, str):
        raise ConfigurationError(f"unknown utility {utility!r}")
    matrix = np.asarray(utility, dtype=np.float64)
    if matrix.shape != (d, d) or not np.all(np.isfinite(matrix)):
        raise ConfigurationError(f"a utility must be a finite {d}×{d} matrix")
    return matrix


def utility_sensitivity(matrix: FloatArray) -> float:
    """``Δu = max_y max_{x,x'} |u(x,y) - u(x',y)|`` (over true values, per report)."""
    return float(np.max(matrix.max(axis=0) - matrix.min(axis=0)))


def ideal_channel(matrix: FloatArray, scale: float) -> FloatArray:
    """``M[y, x] ∝ exp(scale·U[x, y])`` in floating point (each column sums to ~1)."""
    logits = scale * matrix
    weights = np.exp(logits - logits.max(axis=1, keepdims=True))
    channel: FloatArray = (weights / weights.sum(axis=1, keepdims=True)).T
    return channel


def calibrate(matrix: FloatArray, epsilon: float, calibration: Calibration) -> float:
    """The scale ``λ`` whose ideal channel spends ``epsilon`` (see the module docstring)."""
    delta_u = utility_sensitivity(matrix)
    if calibration == "textbook":
        return float(epsilon / (2.0 * delta_u))
    d = int(matrix.shape[0])
    if np.array_equal(matrix, utility_matrix("equality", d)):
        return epsilon
    if np.array_equal(matrix, utility_matrix("ordinal", d)):
        return epsilon / (d - 1)

    def spent(scale: float) -> float:
        return channel_epsilon(ideal_channel(matrix, scale))

    lo, hi = epsilon / (2.0 * delta_u), epsilon / delta_u
    for _ in range(64):
        if spent(hi) >= epsilon:
            break
        lo, hi = hi, 2.0 * hi
    else:  # pragma: no cover - ε(λ) grows without bound for a valid utility
        raise ConfigurationError(f"no scale of this utility reaches ε = {epsilon!r}")
    while lo < (mid := (lo + hi) / 2.0) < hi:
        lo, hi = (mid, hi) if spent(mid) <= epsilon else (lo, mid)
    return lo


@dataclass(frozen=True)
class ExponentialChannel(IntegerChannel):
    """The integer channel of a utility, with its scale and its inverse for estimation."""

    scale: float
    condition: float
    inverse: FloatArray


UtilityKey = str | tuple[tuple[float, ...], ...]


@lru_cache(maxsize=32)
def build_channel(
    d: int, utility: UtilityKey, epsilon: float, calibration: str
) -> ExponentialChannel:
    """The integer channel of a utility at ``epsilon`` (cached: configs rebuild it often)."""
    if not 2 <= d <= MAX_DOMAIN:
        raise ConfigurationError(f"the exponential mechanism takes 2 to {MAX_DOMAIN} values")
    if calibration not in ("tight", "textbook"):
        raise ConfigurationError(f"calibration must be 'tight' or 'textbook', got {calibration!r}")
    matrix = utility_matrix(utility, d)
    if utility_sensitivity(matrix) == 0.0:
        raise ConfigurationError("a constant utility gives answers that ignore the value")
    scale = calibrate(matrix, epsilon, "tight" if calibration == "tight" else "textbook")
    quantised = integer_channel(ideal_channel(matrix, scale), epsilon)
    m = quantised.matrix
    condition = float(np.linalg.cond(m))
    if not condition <= MAX_CONDITION:
        raise ConfigurationError(
            f"the channel is too ill-conditioned to invert (condition number {condition:.3g} >"
            f" {MAX_CONDITION:.0e}); use a larger ε or fewer values"
        )
    inverse: FloatArray = np.linalg.inv(m).astype(np.float64)
    inverse.setflags(write=False)
    return ExponentialChannel(
        quantised.weights, quantised.cumulative, quantised.epsilon, scale, condition, inverse
    )


@dataclass(frozen=True)
class ExponentialRandomizer(ValueIndexAnswers):
    """The exponential mechanism over ``d`` values with a named or explicit utility."""

    d: int
    epsilon: float
    utility: UtilityKey = "ordinal"
    calibration: Calibration = "tight"
    channel: ExponentialChannel = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        if math.isinf(self.epsilon):
            raise ConfigurationError("the exponential mechanism needs a finite ε")
        channel = build_channel(self.d, self.utility, self.epsilon, self.calibration)
        object.__setattr__(self, "channel", channel)

    @property
    def exact_epsilon(self) -> float:
        """ε of the integer channel the device samples from."""
        return self.channel.epsilon

    @property
    def stats_layout(self) -> tuple[StatsBlock, ...]:
        return (StatsBlock("counts", "int64", self.d),)

    def published(self) -> dict[str, Any]:
        return {"scale": self.channel.scale}

    def channel_matrix(self) -> FloatArray:
        """``M[y, x] = P(report y | value x)``, exactly as sampled."""
        return self.channel.matrix

    def perturb(
        self, values: ArrayLike, rng: np.random.Generator | None = None
    ) -> NDArray[np.int64]:
        """Reported value indices: ``y`` = the first row whose cumulative weight in the
        true value's column exceeds a uniform 53-bit integer."""
        return self.channel.sample(check_indices(values, self.d), resolve_rng(rng))

    def estimate_covariance(self, counts: ArrayLike, n: int) -> tuple[FloatArray, FloatArray]:
        """``f̂ = M^-1 C/n`` and its plug-in covariance ``(M^-1 diag(π̂) M^-T - f̂f̂ᵀ)/n``."""
        if n <= 0:
            raise InvalidQueryError("no reports to estimate from")
        pi = np.asarray(counts, dtype=np.float64) / n
        inverse = self.channel.inverse
        f_hat = inverse @ pi
        covariance = ((inverse * pi) @ inverse.T - np.outer(f_hat, f_hat)) / n
        return f_hat, covariance

    def report_channel(self, stats: Blocks, n: int) -> DenseChannel:
        return DenseChannel(self.channel.matrix, stats["counts"])

    def frequency_covariance(self, stats: Blocks, n: int) -> FloatArray:
        return self.estimate_covariance(stats["counts"], n)[1]

    def planned_variance(self) -> PlannedVariance:
        """The variance of the unbiased ``f̂_v = (M⁻¹ C/n)_v`` of a value nobody holds, at
        its worst: with every device holding ``x`` (``π = M e_x``) the plug-in covariance
        above gives ``Var f̂_v = Σ_y (M⁻¹)²_{vy} M_{yx} / n`` for ``v ≠ x``; the planner
        takes the largest over the pairs, and names it in ``case`` (``(x, v)``). The
        variance is linear in the distribution, so no distribution with ``f_v = 0`` does
        worse."""
        m = self.channel.matrix
        per_pair = (self.channel.inverse**2) @ m  # [v, x]
        np.fill_diagonal(per_pair, -np.inf)
        v, x = np.unravel_index(int(np.argmax(per_pair)), per_pair.shape)
        return PlannedVariance(per_report=float(per_pair[v, x]), case=(int(x), int(v)))

    def estimate_stats(self, stats: Any, n: int, confidence: float) -> FrequencyEstimate:
        z_value(confidence)  # refuse a bad level before any work
        f_hat, covariance = self.estimate_covariance(stats["counts"], n)
        se = np.sqrt(np.maximum(np.diag(covariance), 0.0))
        return FrequencyEstimate.normal(n, f_hat, se, confidence)
