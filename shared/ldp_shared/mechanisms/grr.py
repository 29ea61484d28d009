"""Generalised randomized response (GRR, also k-RR or direct encoding).

The exponential mechanism (McSherry and Talwar, FOCS 2007) with the equality utility
``u(x, y) = [x = y]``, calibrated tightly: the true value is reported with probability
``p = e^ε/(e^ε+d-1)`` and each other value with ``q = 1/(e^ε+d-1)``
(Kairouz et al. 2014; Wang et al. USENIX Security 2017 §4.1). Exact ε: ``ln(p/q) = ε``.

The indicator "report equals v" is a bit with ``P(1|x=v) = p`` and ``P(1|x≠v) = q``, so
the count ``C_v`` of reports equal to ``v`` is debiased by the shared kernel:
``f̂_v = (C_v/n - q)/(p - q)``, ``Var* = (e^ε+d-2) / (n (e^ε-1)^2)``. The counts are
multinomial when the values are drawn i.i.d., so ``Cov(f̂) = (diag π − ππᵀ)/(n (p-q)²)``
with ``π = q + (p-q) f`` (for functionals such as a CDF); for IBU the channel is ``p`` on
the diagonal and ``q`` elsewhere.

Segment: ``index``, the reported value's index in 1 byte (``d <= 256``) or 2. Statistics:
one int64 block ``counts`` of ``d`` counters, ``C_v``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ldp_shared.errors import ConfigurationError
from ldp_shared.kernel import (
    FloatArray,
    channel_epsilon,
)
from ldp_shared.mechanisms._checks import check_domain_size, check_epsilon, check_indices
from ldp_shared.mechanisms.base import AttributeSpec, Blocks, register
from ldp_shared.mechanisms.categorical import (
    BitwiseRandomizer,
    CategoricalSpec,
    ValueIndexAnswers,
)
from ldp_shared.mechanisms.likelihood import RandomizedResponseChannel
from ldp_shared.rand import resolve_rng

UNIT = 2.0**53
"""The grid of a uniform double: ``Generator.random`` draws ``m/2^53``, so a test
``u < p`` holds with probability ``⌈p·2^53⌉/2^53`` exactly."""


def realised_keep(p: float) -> float:
    """The probability with which ``u < p`` holds for a uniform double ``u``."""
    return math.ceil(p * UNIT) / UNIT


def grr_probabilities(d: int, epsilon: float) -> tuple[float, float]:
    """``(p, q)`` of GRR over ``d`` values at ``epsilon``."""
    if math.isinf(epsilon):
        return 1.0, 0.0
    # divide through by e^ε to stay finite for large ε
    denom = 1.0 + (d - 1) * math.exp(-epsilon)
    return 1.0 / denom, math.exp(-epsilon) / denom


def apply_grr_noise(idx: NDArray[np.int64], noise: NDArray[np.int64]) -> NDArray[np.int64]:
    """The answers for true indices ``idx`` under :meth:`GeneralizedRandomizedResponse.
    draw_noise`'s ``noise``: the true index, or the ``r``-th of the others (skipping it)."""
    return np.where(noise < 0, idx, noise + (noise >= idx))


@register
class GeneralizedRandomizedResponseSpec(CategoricalSpec):
    """An attribute reported by generalised randomized response."""

    mechanism: Literal["grr"]

    @classmethod
    def plan_specs(
        cls, domain_size: int | None, lo: float | None, hi: float | None
    ) -> list[AttributeSpec]:
        return cls.planned_domain(domain_size)

    def randomizer(self, epsilon: float | None, classes: int = 1) -> GeneralizedRandomizedResponse:
        if epsilon is None:
            raise ConfigurationError(f"attribute {self.name!r}: GRR needs an ε")
        return GeneralizedRandomizedResponse(d=len(self.domain) * classes, epsilon=epsilon)


@dataclass(frozen=True)
class GeneralizedRandomizedResponse(ValueIndexAnswers, BitwiseRandomizer):
    """GRR of a ``d``-valued attribute at privacy ``epsilon``."""

    d: int
    epsilon: float
    p: float = field(init=False)
    q: float = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "d", check_domain_size(self.d))
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        p, q = grr_probabilities(self.d, self.epsilon)
        object.__setattr__(self, "p", p)
        object.__setattr__(self, "q", q)

    @property
    def exact_epsilon(self) -> float:
        """ε computed back from the channel: ``ln(p/q)``."""
        return math.inf if self.q == 0.0 else math.log(self.p / self.q)

    def perturb(
        self, values: ArrayLike, rng: np.random.Generator | None = None
    ) -> NDArray[np.int64]:
        """Reported value indices: the true one with probability ``p``, else a uniform other."""
        idx = check_indices(values, self.d)
        return apply_grr_noise(idx, self.draw_noise(idx.size, resolve_rng(rng)))

    def draw_noise(self, n: int, rng: np.random.Generator) -> NDArray[np.int64]:
        """The randomness of ``n`` answers, drawn before the values are known: ``-1`` to
        keep the true value (probability ``p``), else the rank ``r ∈ [0, d − 2]`` of the
        reported value among the ``d − 1`` others (uniform). See :func:`apply_grr_noise`."""
        return grr_noise(n, self.p, self.d, rng)

    def counts(self, reported: ArrayLike) -> NDArray[np.int64]:
        """``C_v``: how many reports equal each value (the sufficient statistic)."""
        return np.bincount(check_indices(reported, self.d), minlength=self.d).astype(np.int64)

    def channel_matrix(self) -> FloatArray:
        """``M[y, x] = P(report y | value x)``: ``p`` on the diagonal, ``q`` elsewhere."""
        m = np.full((self.d, self.d), self.q)
        np.fill_diagonal(m, self.p)
        return m

    def channel_epsilon(self) -> float:
        return channel_epsilon(self.channel_matrix())

    def report_channel(self, stats: Blocks, n: int) -> RandomizedResponseChannel:
        return RandomizedResponseChannel(self.d, self.p, self.q, stats["counts"])

    def frequency_covariance(self, stats: Blocks, n: int) -> FloatArray:
        """``(diag π̂ − π̂π̂ᵀ)/(n (p − q)²)`` with ``π̂ = C/n``: the multinomial covariance
        of the report frequencies, through ``f̂ = (π̂ − q)/(p − q)``."""
        pi = np.asarray(stats["counts"], dtype=np.float64) / n
        out: FloatArray = (np.diag(pi) - np.outer(pi, pi)) / (n * (self.p - self.q) ** 2)
        return out


def grr_noise(n: int, keep: float, d: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """``n`` draws of GRR's noise over ``d`` values: ``-1`` (keep the true value) where a
    uniform is below ``keep``, else ``⌊u·(d − 1)⌋``, the rank of the reported value among
    the ``d − 1`` others (:func:`apply_grr_noise` applies them)."""
    kept = rng.random(n) < keep
    other = np.floor(rng.random(n) * (d - 1)).astype(np.int64)
    return np.where(kept, -1, other)
