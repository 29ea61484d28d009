"""Longitudinal generalised randomized response (L-GRR), ``"mechanism": "l-grr"``.

For a categorical value a device reports again and again (Arcolezi, Couchot, Al Bouna
and Xiao, "Improving the utility of locally differentially private protocols for
longitudinal and multidimensional frequency estimates", Digital Communications and
Networks, 2022, §3; the memoisation framework of RAPPOR, Erlingsson, Pihur and
Korolova, CCS 2014). Two GRR steps over the ``d`` values, chained:

* **permanent**, at ε∞ (``permanent_epsilon`` of the spec): ``z = x`` with probability
  ``p₁ = e^ε∞/(e^ε∞ + d − 1)``, each other value with ``q₁ = (1 − p₁)/(d − 1)``. Drawn
  once per value and memoised: derived from the device's secret
  (:mod:`~ldp_shared.mechanisms.longitudinal`), so every report of ``x`` starts from the
  same ``z``;
* **instantaneous**, fresh per report: ``y = z`` with probability ``p₂``, each other value
  with ``q₂ = (1 − p₂)/(d − 1)``.

**One report.** ``P(y = x) = p = p₁p₂ + (1 − p₁)q₂`` and, for ``v ≠ x``,
``P(y = v) = q = q₁p₂ + (1 − q₁)q₂`` (``z = v`` then kept, or ``z ≠ v`` then moved to
``v``), so ``p − q = (p₁ − q₁)(p₂ − q₂)``. ``p₂`` is chosen so that one report is exactly
ε₁-LDP, ε₁ the ε the accountant allots: ``p/q = e^ε₁`` is linear in ``p₂``; with
``A = p₁ − e^ε₁ q₁`` and ``B = e^ε₁(1 − q₁) − (1 − p₁)``,

    p₂ = B / ((d − 1)A + B),

which lies in ``(1/d, 1]`` exactly when ``0 < ε₁ ≤ ε∞`` (``ε₁ = ε∞``: no instantaneous
noise). Exact ε of one report: ``ln(p/q)``; of all reports of one value, ε∞ =
``ln(p₁/q₁)`` (they are post-processing of ``z``). Both are computed from the
probabilities the sampler realises (``⌈p·2^53⌉/2^53`` for a uniform double below ``p``).
(multi-freq-ldpy 0.2.5 solves for ``p₂`` with the two-value chain, ``p = p₁p₂ + q₁q₂`` and
``q = p₁q₂ + q₁p₂``, exact only at ``d = 2``: at ``d = 10``, ε∞ = 4, ε₁ = 1 its reports
are 0.92-LDP, not 1.)

**Estimate.** A report equals ``v`` with probability ``q + (p − q)·1[x = v]``, GRR's
indicator with ``(p, q)``, so the count ``C_v`` of one period's reports is debiased by the
shared kernel::

    f̂_v = (C_v/n − q₁p₂ − (1 − q₁)q₂) / ((p₁ − q₁)(p₂ − q₂))
    Var f̂_v = [f p(1 − p) + (1 − f) q(1 − q)] / (n (p₁ − q₁)² (p₂ − q₂)²)

for ``n`` reports of ``n`` distinct devices (their permanent steps are independent) with
fixed values; when the values are drawn i.i.d. the variance is Arcolezi et al.'s
``π(1 − π)/(n (p₁ − q₁)²(p₂ − q₂)²)``, ``π = q + f(p − q)``. Two reports of one device in
one period share ``z``, so count each device once per period. Everything else (segment
``index``, statistics ``counts[d]``, the IBU channel, the covariance, score intervals) is
GRR's at ``(p, q)``: this class is GRR with the chained channel.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ldp_shared.bulk_draws import BulkDraws
from ldp_shared.mechanisms._checks import check_domain_size, check_indices
from ldp_shared.mechanisms.base import PlannedVariance, register
from ldp_shared.mechanisms.grr import (
    GeneralizedRandomizedResponse,
    grr_noise,
    grr_probabilities,
    realised_keep,
)
from ldp_shared.mechanisms.longitudinal import (
    LongitudinalCategoricalSpec,
    LongitudinalRandomizer,
    check_epsilons,
    one_index,
    prf_uniform_list,
    prf_uniforms,
    value_messages,
)
from ldp_shared.rand import resolve_rng

NAME = "l-grr"


def instantaneous_keep(d: int, p1: float, epsilon: float) -> float:
    """``p₂`` that makes the chain ε-LDP after a permanent keep probability ``p₁``.

    ``B/((d − 1)A + B)`` of the module docstring, with ``A`` and ``B`` divided by
    ``e^ε`` so that a large ε does not overflow."""
    q1 = (1.0 - p1) / (d - 1)
    shrink = math.exp(-epsilon)
    a = p1 * shrink - q1
    b = (1.0 - q1) - (1.0 - p1) * shrink
    return b / ((d - 1) * a + b)


def grr_step(
    idx: NDArray[np.int64], keep: NDArray[np.float64], other: NDArray[np.float64], p: float, d: int
) -> NDArray[np.int64]:
    """One GRR step from uniforms: ``idx`` where ``keep < p``, else the value
    ``⌊other·(d − 1)⌋`` among the ``d − 1`` others."""
    moved = np.floor(other * (d - 1)).astype(np.int64)
    moved += moved >= idx  # skip the kept value: uniform over the d − 1 others
    return np.where(keep < p, idx, moved)


def _grr_one(v: int, keep: float, other: float, p: float, d: int) -> int:
    """:func:`grr_step` of one value (the same arithmetic on Python floats)."""
    if keep < p:
        return v
    moved = math.floor(other * (d - 1))
    return moved + (moved >= v)


@register
class LongitudinalGRRSpec(LongitudinalCategoricalSpec):
    """A categorical attribute a device reports repeatedly, by L-GRR."""

    mechanism: Literal["l-grr"]
    title: ClassVar[str] = "L-GRR"

    def longitudinal(self, d: int, epsilon: float) -> LongitudinalGRR:
        return LongitudinalGRR(d=d, epsilon=epsilon, epsilon_infinity=self.permanent_epsilon)


@dataclass(frozen=True)
class LongitudinalGRR(GeneralizedRandomizedResponse, LongitudinalRandomizer):
    """L-GRR over ``d`` values: ``epsilon`` per report, ``epsilon_infinity`` per value.

    ``p`` and ``q`` are the chained channel's (one report), ``p1``/``q1`` the permanent
    step's and ``p2``/``q2`` the instantaneous step's, all as the sampler realises them.
    """

    epsilon_infinity: float = 0.0
    p1: float = field(init=False)
    q1: float = field(init=False)
    p2: float = field(init=False)
    q2: float = field(init=False)

    def __post_init__(self) -> None:
        d = check_domain_size(self.d)
        epsilon, infinity = check_epsilons("L-GRR", self.epsilon, self.epsilon_infinity)
        p1 = realised_keep(grr_probabilities(d, infinity)[0])
        q1 = (1.0 - p1) / (d - 1)
        p2 = realised_keep(min(1.0, instantaneous_keep(d, p1, epsilon)))
        q2 = (1.0 - p2) / (d - 1)
        chained = {"p": p1 * p2 + (1.0 - p1) * q2, "q": q1 * p2 + (1.0 - q1) * q2}
        values = {"d": d, "epsilon": epsilon, "epsilon_infinity": infinity, **chained}
        for name, value in {**values, "p1": p1, "q1": q1, "p2": p2, "q2": q2}.items():
            object.__setattr__(self, name, value)

    @property
    def permanent_epsilon(self) -> float:
        """ε∞ = ``ln(p₁/q₁)``: all reports of one value post-process its permanent step."""
        return math.inf if self.q1 == 0.0 else math.log(self.p1 / self.q1)

    def planned_variance(self) -> PlannedVariance:
        """One period's frequency of a value nobody holds, from each device's first report:
        Arcolezi et al. 2022's ``π(1 − π)/(n (p₁ − q₁)²(p₂ − q₂)²)`` at ``π = q``, the
        kernel's ``q(1 − q)/(n (p − q)²)`` of the chained channel, at this ε∞."""
        return replace(
            super().planned_variance(),
            parameters={"permanent_epsilon": self.epsilon_infinity},
        )

    def published(self) -> dict[str, Any]:
        return {
            **super().published(),
            "p1": self.p1,
            "q1": self.q1,
            "p2": self.p2,
            "q2": self.q2,
            "permanent_epsilon": self.permanent_epsilon,
        }

    def perturb(
        self, values: ArrayLike, rng: np.random.Generator | None = None
    ) -> NDArray[np.int64]:
        """Each row a fresh device: both steps drawn from ``rng``."""
        idx = check_indices(values, self.d)
        gen = resolve_rng(rng)
        n = idx.size
        permanent = grr_step(idx, gen.random(n), gen.random(n), self.p1, self.d)
        return self.instantaneous(permanent, gen)

    def permanent(self, values: ArrayLike, key: bytes) -> NDArray[np.int64]:
        """The memoised permanent response ``z`` of each value for the device's ``key``."""
        idx = check_indices(values, self.d)
        distinct, inverse = np.unique(idx, return_inverse=True)
        u = prf_uniforms(key, value_messages(distinct, NAME.encode()), 2)
        return grr_step(distinct, u[:, 0], u[:, 1], self.p1, self.d)[inverse]

    def memo_keys(self, values: NDArray[Any], key: bytes) -> NDArray[np.int64]:
        """The value itself: its permanent step is the memoised one."""
        return check_indices(values, self.d)

    def perturb_memoised(
        self, values: NDArray[Any], key: bytes, rng: np.random.Generator | None = None
    ) -> NDArray[np.int64]:
        v = one_index(values, self.d)
        if v is not None:  # a device's one record, on Python numbers (see the module)
            return np.array([self._one_record(v, key, resolve_rng(rng))], dtype=np.int64)
        idx = check_indices(values, self.d)
        return self.instantaneous(self.permanent(idx, key), resolve_rng(rng))

    def permanent_one(self, v: int, key: bytes) -> int:
        """:meth:`permanent` of one value (the same PRF draws and arithmetic), memoised
        in memory."""
        memo = self._permanent_memo
        z: int | None = memo.get(key, v)
        if z is None:
            u = prf_uniform_list(key, NAME.encode() + b"\n" + str(v).encode("ascii"), 2)
            z = _grr_one(v, u[0], u[1], self.p1, self.d)
            memo.put(key, v, z)
        return z

    def _one_record(self, v: int, key: bytes, gen: np.random.Generator) -> int:
        z = self.permanent_one(v, key)
        noise = self._one_record_draws.take(gen)
        return z if noise < 0 else noise + (noise >= z)

    @functools.cached_property
    def _one_record_draws(self) -> BulkDraws[int]:
        """The instantaneous step's randomness, drawn ahead: GRR's noise at ``p₂``
        (:func:`~ldp_shared.mechanisms.grr.grr_noise`, :func:`grr_step`'s arithmetic)."""
        return BulkDraws(lambda n, gen: grr_noise(n, self.p2, self.d, gen).tolist())

    def instantaneous(
        self, permanent: NDArray[np.int64], gen: np.random.Generator
    ) -> NDArray[np.int64]:
        """The fresh step of one report from each permanent response ``z``."""
        n = permanent.size
        return grr_step(permanent, gen.random(n), gen.random(n), self.p2, self.d)
