"""MASK bit flips for market baskets (Rizvi and Haritsa, VLDB 2002).

A basket over a catalogue of ``m`` items is the ``m``-bit vector of the items it holds;
each bit is kept with probability ``p`` and flipped with ``1-p`` (so ``q = 1-p`` in the
debiased-bit kernel, :mod:`ldp_shared.kernel`). Per item ε = ``ln(p/(1-p))``; two baskets
may differ in all ``m`` bits, so a basket is ``m·ln(p/(1-p))``-LDP, which is large for
realistic ``p`` (p = 0.9 over 100 items gives ε ≈ 220). MASK's own privacy measure is the
reconstruction probability, computed in :meth:`Mask.reconstruction_privacy`.

Support of an itemset I: ``ŝ(I) = mean(Π_{j∈I} z_j)`` with ``z = (y-q)/(p-q)``, which is
exactly the paper's ``C^T = M^{-1} C^D``.

Segment: ``bits``, ``ceil(m/8)`` bytes. Statistics: one int64 block ``counts`` of ``m``
per-item sums; itemsets beyond single items are mined from the stored reports
(:mod:`ldp_shared.analyses.itemsets`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np
from numpy.typing import NDArray
from pydantic import model_validator

from ldp_shared.errors import ConfigurationError, InvalidRecordError
from ldp_shared.kernel import (
    bernoulli_matrix,
    bit_epsilon,
)
from ldp_shared.mechanisms._checks import check_domain_size
from ldp_shared.mechanisms.base import register
from ldp_shared.mechanisms.categorical import BitVectorRandomizer, CategoricalSpec
from ldp_shared.rand import resolve_rng


@register
class MaskSpec(CategoricalSpec):
    """A basket attribute: the set of items held, out of the catalogue ``domain``.

    Its ε follows from ``keep_probability`` alone (``takes_budget`` is false), so it
    spends none of the record's budget and reports under every budget.
    """

    takes_budget: ClassVar[bool] = False
    is_basket: ClassVar[bool] = True
    is_distribution: ClassVar[bool] = False

    mechanism: Literal["mask"]

    @model_validator(mode="after")
    def _check_keep_probability(self) -> MaskSpec:
        kp = self.keep_probability
        if kp is None or not 0.5 < kp < 1.0:
            raise ValueError(
                f"attribute {self.name!r}: MASK needs keep_probability in (0.5, 1), got {kp!r}"
            )
        return self

    def encode(self, column: Sequence[Any] | NDArray[Any]) -> NDArray[np.bool_]:
        """The ``n × m`` matrix of the items each basket of ``column`` holds."""
        lookup = {v: i for i, v in enumerate(self.domain)}
        out = np.zeros((len(column), len(self.domain)), dtype=bool)
        for row, basket in enumerate(column):
            if isinstance(basket, str) or not isinstance(basket, Iterable):
                raise InvalidRecordError(
                    f"attribute {self.name!r}: a basket must be a set of items"
                )
            try:
                out[row, [lookup[item] for item in basket]] = True
            except (KeyError, TypeError):
                bad = next(i for i in basket if not isinstance(i, str) or i not in lookup)
                raise InvalidRecordError(
                    f"attribute {self.name!r}: item {bad!r} is not in the catalogue"
                ) from None
        return out

    def randomizer(self, epsilon: float | None, classes: int = 1) -> Mask:
        assert self.keep_probability is not None  # checked above
        return Mask(d=len(self.domain) * classes, keep_probability=self.keep_probability)


@dataclass(frozen=True)
class Mask(BitVectorRandomizer):
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

    def published(self) -> dict[str, Any]:
        return {
            **super().published(),
            "keep_probability": self.keep_probability,
            "item_epsilon": self.item_epsilon,
        }

    def reconstruction_privacy(
        self, average_support: float, weight: float = 1.0
    ) -> dict[str, float]:
        """MASK's privacy measure (Rizvi and Haritsa 2002, §3, eqs. (5)-(7)).

        With ``s0`` the average item support: the probability of reconstructing a 1,
        ``R1(p) = s0 p²/(s0 p + (1-s0)(1-p)) + s0 (1-p)²/(s0 (1-p) + (1-s0) p)``,
        of a 0 the same with ``s0`` replaced by ``1-s0``, ``R = a R1 + (1-a) R0`` and the
        privacy ``P = (1 - R)·100``. The weight ``a`` defaults to 1, as in the API: only
        reconstructing the 1s (the purchases) counts.
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
