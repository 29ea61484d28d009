"""MASK bit flips for market baskets (Rizvi and Haritsa, VLDB 2002).

A basket over a catalogue of ``m`` items is the ``m``-bit vector of the items it holds;
each bit is kept with probability ``p`` and flipped with ``1-p`` (so ``q = 1-p`` in the
kernel of DESIGN.md §3). Per item ε = ``ln(p/(1-p))``; two baskets may differ in all
``m`` bits, so a basket is ``m·ln(p/(1-p))``-LDP, which is large for realistic ``p``
(p = 0.9 over 100 items gives ε ≈ 220). MASK's own privacy measure is the
reconstruction probability, computed in :meth:`Mask.reconstruction_privacy`.

Support of an itemset I: ``ŝ(I) = mean(Π_{j∈I} z_j)`` with ``z = (y-q)/(p-q)``, which is
exactly the paper's ``C^T = M^{-1} C^D``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from ldp_shared.errors import ConfigurationError, InvalidRecordError
from ldp_shared.kernel import (
    FloatArray,
    FrequencyEstimate,
    bernoulli_matrix,
    bit_epsilon,
    estimate_frequencies,
    frequency_variance,
)
from ldp_shared.mechanisms._checks import check_domain_size
from ldp_shared.rand import resolve_rng


@dataclass(frozen=True)
class Mask:
    """MASK over a catalogue of ``d`` items with keep-probability ``p`` in (0.5, 1)."""

    d: int
    keep_probability: float
    p: float = field(init=False)
    q: float = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "d", check_domain_size(self.d))
        kp = float(self.keep_probability)
        if not 0.5 < kp < 1.0:
            raise ConfigurationError(f"MASK keep probability p must lie in (0.5, 1), got {kp!r}")
        object.__setattr__(self, "keep_probability", kp)
        object.__setattr__(self, "p", kp)
        object.__setattr__(self, "q", 1.0 - kp)

    @property
    def item_epsilon(self) -> float:
        """ε of one item bit: ``ln(p/(1-p))``."""
        return bit_epsilon(self.p, self.q)

    @property
    def epsilon(self) -> float:
        """ε of a whole basket: ``m·ln(p/(1-p))``."""
        return self.d * self.item_epsilon

    exact_epsilon = epsilon

    def perturb(
        self, baskets: NDArray[np.bool_], rng: np.random.Generator | None = None
    ) -> NDArray[np.bool_]:
        """Flip each bit of the ``n × m`` basket matrix with probability ``1-p``."""
        x = np.asarray(baskets)
        if x.ndim != 2 or x.shape[1] != self.d:
            raise InvalidRecordError(f"baskets must be an n x {self.d} boolean matrix")
        flips = bernoulli_matrix(self.q, x.shape[0], self.d, resolve_rng(rng))
        perturbed: NDArray[np.bool_] = np.logical_xor(x.astype(bool, copy=False), flips)
        return perturbed

    def estimate(
        self, sums: NDArray[np.integer] | FloatArray, n: int, confidence: float = 0.95
    ) -> FrequencyEstimate:
        """Item supports from the per-item sums of ``n`` distorted baskets."""
        return estimate_frequencies(sums, n, self.p, self.q, confidence)

    def variance(self, f: FloatArray, n: int) -> FloatArray:
        return frequency_variance(f, n, self.p, self.q)

    def reconstruction_privacy(
        self, average_support: float, weight: float = 0.5
    ) -> dict[str, float]:
        """MASK's privacy measure (Rizvi and Haritsa 2002, §3, eqs. (5)-(7)).

        With ``s0`` the average item support: the probability of reconstructing a 1,
        ``R1(p) = s0 p²/(s0 p + (1-s0)(1-p)) + s0 (1-p)²/(s0 (1-p) + (1-s0) p)``,
        of a 0 the same with ``s0`` replaced by ``1-s0``, ``R = a R1 + (1-a) R0`` and the
        privacy ``P = (1 - R)·100``.
        """
        s0 = float(average_support)
        a = float(weight)
        if not 0.0 < s0 < 1.0 or not 0.0 <= a <= 1.0:
            raise ConfigurationError("average support must lie in (0,1) and weight in [0,1]")
        p = self.p

        def reconstruct(s: float) -> float:
            return s * p * p / (s * p + (1 - s) * (1 - p)) + s * (1 - p) ** 2 / (
                s * (1 - p) + (1 - s) * p
            )

        r1 = reconstruct(s0)
        r0 = reconstruct(1.0 - s0)
        r = a * r1 + (1.0 - a) * r0
        return {"R1": r1, "R0": r0, "R": r, "privacy": (1.0 - r) * 100.0}
