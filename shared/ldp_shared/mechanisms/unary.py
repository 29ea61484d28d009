"""Unary encoding (UE): symmetric (SUE, basic one-time RAPPOR) and optimised (OUE).

A value ``v`` of a domain of size ``d`` becomes the one-hot vector ``e_v``; every bit is
reported as 1 with probability ``p`` if it is the true bit and ``q`` otherwise.

* SUE (Erlingsson et al., RAPPOR, CCS 2014; Wang et al. USENIX Security 2017 §4.3):
  ``p = e^(ε/2)/(e^(ε/2)+1)``, ``q = 1-p``.
* OUE (Wang et al. 2017 §4.4, minimising the variance): ``p = 1/2``, ``q = 1/(e^ε+1)``;
  ``Var* = 4e^ε / (n (e^ε-1)^2)``.

Exact ε of a report: ``ln(p(1-q)/((1-p)q))`` (:func:`ldp_shared.kernel.unary_epsilon`).
Estimator: ``f̂_v = (S_v/n - q)/(p - q)`` with ``S_v`` the number of reports whose bit
``v`` is set (the debiased-bit kernel, :mod:`ldp_shared.kernel`).

Segment: ``bits``, ``ceil(d/8)`` bytes. Statistics: one int64 block ``counts`` of ``d``
counters, ``S_v``. Reported jointly with a label of ``k`` classes, the mechanism runs
over the ``d·k`` cells ``x·k + c``.

For functionals of ``f̂`` (a CDF), its covariance when the values are drawn i.i.d.:
given the values the bits are independent, so ``Cov(f̂) = diag(Var f̂_v) + (diag f −
ffᵀ)/n``. For IBU, the per-bit channel of
:class:`~ldp_shared.mechanisms.likelihood.UnaryBitChannel` (a composite likelihood).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ldp_shared.errors import ConfigurationError
from ldp_shared.kernel import (
    FloatArray,
    debias,
    frequency_variance,
    unary_epsilon,
)
from ldp_shared.mechanisms._checks import check_domain_size, check_epsilon, check_indices
from ldp_shared.mechanisms.base import AttributeSpec, Blocks, register
from ldp_shared.mechanisms.categorical import BitVectorRandomizer, CategoricalSpec
from ldp_shared.mechanisms.likelihood import UnaryBitChannel
from ldp_shared.mechanisms.packed_bits import bernoulli_rows, set_bits
from ldp_shared.rand import resolve_rng

UnaryVariant = Literal["sue", "oue"]


def unary_probabilities(variant: UnaryVariant, epsilon: float) -> tuple[float, float]:
    """``(p, q)`` of SUE or OUE at ``epsilon`` (``math.inf`` gives the noiseless limit)."""
    if variant == "sue":
        # p = e^(ε/2)/(e^(ε/2)+1) written as a logistic to stay exact for large ε
        q = _inverse_exp_plus_one(epsilon / 2.0)
        return 1.0 - q, q
    return 0.5, _inverse_exp_plus_one(epsilon)


def _inverse_exp_plus_one(x: float) -> float:
    """``1/(e^x + 1)`` as ``e^-x/(1 + e^-x)``: no overflow for large ``x``, 0 at infinity."""
    tail = math.exp(-x)
    return tail / (1.0 + tail)


@register
class UnaryEncodingSpec(CategoricalSpec):
    """An attribute reported by unary encoding: ``oue`` (the default) or ``sue``."""

    joins_label: ClassVar[bool] = True

    mechanism: UnaryVariant = "oue"

    @classmethod
    def plan_specs(
        cls, domain_size: int | None, lo: float | None, hi: float | None
    ) -> list[AttributeSpec]:
        return cls.planned_domain(domain_size)

    def randomizer(self, epsilon: float | None, classes: int = 1) -> UnaryEncoding:
        if epsilon is None:
            raise ConfigurationError(f"attribute {self.name!r}: unary encoding needs an ε")
        return UnaryEncoding(d=len(self.domain) * classes, epsilon=epsilon, variant=self.mechanism)


@dataclass(frozen=True)
class UnaryEncoding(BitVectorRandomizer):
    """Unary encoding of a ``d``-valued attribute at privacy ``epsilon`` (SUE or OUE)."""

    d: int
    epsilon: float
    variant: UnaryVariant = "oue"
    p: float = field(init=False)
    q: float = field(init=False)

    def __post_init__(self) -> None:
        if self.variant not in ("sue", "oue"):
            raise ConfigurationError(
                f"unary encoding variant must be 'sue' or 'oue', got {self.variant!r}"
            )
        object.__setattr__(self, "d", check_domain_size(self.d))
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        p, q = unary_probabilities(self.variant, self.epsilon)
        object.__setattr__(self, "p", p)
        object.__setattr__(self, "q", q)

    @property
    def exact_epsilon(self) -> float:
        """ε computed back from ``p`` and ``q`` (equals ``epsilon`` up to rounding)."""
        return unary_epsilon(self.p, self.q)

    def perturb(
        self, values: ArrayLike, rng: np.random.Generator | None = None
    ) -> NDArray[np.bool_]:
        """Perturbed one-hot rows (``n × d`` booleans) for the value indices ``values``:
        :meth:`perturb_packed`, unpacked."""
        packed = self.perturb_packed(values, rng)
        return np.unpackbits(packed, axis=1, count=self.d).view(np.bool_)

    def perturb_packed(
        self, values: ArrayLike, rng: np.random.Generator | None = None
    ) -> NDArray[np.uint8]:
        """Perturbed one-hot rows, packed as the ``bits`` segment sends them.

        The ``d`` bits of a row are drawn Bernoulli(q) already packed
        (:func:`~ldp_shared.mechanisms.packed_bits.bernoulli_rows`); the true bit is then
        redrawn as Bernoulli(p).
        """
        idx = check_indices(values, self.d)
        rows, true_bits = self.draw_noise(idx.size, resolve_rng(rng))
        set_bits(rows, idx, true_bits)
        return rows

    def draw_noise(
        self, n: int, rng: np.random.Generator
    ) -> tuple[NDArray[np.uint8], NDArray[np.bool_]]:
        """The randomness of ``n`` answers, drawn before the values are known: packed
        rows of Bernoulli(q) bits and the Bernoulli(p) bits that replace the true ones."""
        return bernoulli_rows(self.q, n, self.d, rng), rng.random(n) < self.p

    def report_channel(self, stats: Blocks, n: int) -> UnaryBitChannel:
        """The per-bit channel (composite likelihood, see
        :mod:`~ldp_shared.mechanisms.likelihood`) and the counts of ones and zeros."""
        return UnaryBitChannel.of(self.d, self.p, self.q, stats["counts"], n)

    def frequency_covariance(self, stats: Blocks, n: int) -> FloatArray:
        """``diag(Var f̂_v) + (diag f − ffᵀ)/n`` at ``f = f̂`` clipped to ``[0, 1]``.

        Given the values, the bits are independent (the kernel's per-cell variances);
        drawing the values i.i.d. adds the multinomial covariance of their indicators.
        """
        f_hat = debias(stats["counts"], n, self.p, self.q)
        f = np.clip(f_hat, 0.0, 1.0)
        within = np.diag(frequency_variance(f_hat, n, self.p, self.q))
        out: FloatArray = within + (np.diag(f) - np.outer(f, f)) / n
        return out

    def channel_matrix(self) -> FloatArray:
        """``M[y, x]`` over all ``2^d`` outputs (small ``d`` only; for exact ε tests)."""
        if self.d > 12:
            raise ValueError("the full UE channel is only built for d <= 12")
        outputs = ((np.arange(2**self.d)[:, None] >> np.arange(self.d)[None, :]) & 1).astype(bool)
        m = np.empty((2**self.d, self.d))
        for x in range(self.d):
            prob_one = np.full(self.d, self.q)
            prob_one[x] = self.p
            m[:, x] = np.prod(np.where(outputs, prob_one, 1.0 - prob_one), axis=1)
        return m


def SymmetricUnaryEncoding(d: int, epsilon: float) -> UnaryEncoding:  # noqa: N802
    """SUE (basic one-time RAPPOR) at ``epsilon``."""
    return UnaryEncoding(d=d, epsilon=epsilon, variant="sue")


def OptimizedUnaryEncoding(d: int, epsilon: float) -> UnaryEncoding:  # noqa: N802
    """OUE (Wang et al. 2017) at ``epsilon``."""
    return UnaryEncoding(d=d, epsilon=epsilon, variant="oue")
