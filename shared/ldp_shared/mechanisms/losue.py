"""Longitudinal OUE then SUE (L-OSUE), ``"mechanism": "l-osue"``.

For a categorical value of a large domain a device reports again and again (Arcolezi,
Couchot, Al Bouna and Xiao, "Improving the utility of locally differentially private
protocols for longitudinal and multidimensional frequency estimates", Digital
Communications and Networks, 2022, doi:10.1016/j.dcan.2022.07.003, arXiv:2111.04636: the
L-OSUE protocol; the memoisation framework of RAPPOR, Erlingsson, Pihur and Korolova,
CCS 2014). The value ``x`` becomes the one-hot vector
``e_x`` of ``d`` bits, randomized twice, bit by bit:

* **permanent**, OUE at ε∞ (``permanent_epsilon`` of the spec; Wang et al., USENIX
  Security 2017, §4.4): bit ``x`` is 1 with probability ``p₁ = 1/2``, every other bit with
  ``q₁ = 1/(e^ε∞ + 1)``. Drawn once per value and memoised: derived from the device's
  secret (:mod:`~ldp_shared.mechanisms.longitudinal`), so every report of ``x`` starts
  from the same vector ``B``;
* **instantaneous**, SUE (basic one-time RAPPOR), fresh per report: each bit of ``B`` is
  kept with probability ``p₂`` and flipped with ``q₂ = 1 − p₂``.

**One report.** Given ``x`` the bits stay independent, bit ``v`` is 1 with probability
``p = p₁p₂ + (1 − p₁)q₂ = 1/2`` if ``v = x`` and ``q = q₁p₂ + (1 − q₁)q₂`` otherwise: unary
encoding at ``(p, q)``, whose exact ε is ``ln(p(1 − q)/((1 − p)q)) = ln((1 − q)/q)``
(Wang et al. 2017, Theorem 1). Setting it to the ε the accountant allots, ε₁, gives
``q = 1/(e^ε₁ + 1)``, linear in ``p₂``, hence (the L-OSUE parameters of Arcolezi et
al. 2022, as their multi-freq-ldpy 0.2.5 computes them)

    p₂ = (e^(ε₁+ε∞) − 1) / ((e^ε₁ + 1)(e^ε∞ − 1)),
    q₂ = (e^ε∞ − e^ε₁) / ((e^ε₁ + 1)(e^ε∞ − 1)),

in ``(1/2, 1]`` exactly when ``0 < ε₁ ≤ ε∞`` (``ε₁ = ε∞``: no instantaneous noise).
Exact ε of one report: ``ln(p(1 − q)/((1 − p)q))``; of all reports of one value, ε∞ =
``ln(p₁(1 − q₁)/((1 − p₁)q₁))``, OUE's (they post-process ``B``). Both are computed from
the probabilities the sampler realises: ``q₁`` and ``q₂`` are rounded up to the grid of a
uniform double (``⌈q·2^53⌉/2^53``), where the test ``u < q`` and the packed Bernoulli
draws hold with exactly that probability; rounding up only adds noise.

**Estimate.** ``C_v``, the number of one period's ``n`` reports with bit ``v`` set, is
debiased by the unary kernel at ``(p, q)``::

    f̂_v = (C_v/n − q) / (p − q),   p − q = (p₁ − q₁)(p₂ − q₂)
    Var f̂_v = [f p(1 − p) + (1 − f) q(1 − q)] / (n (p − q)²)

for ``n`` reports of ``n`` distinct devices (their permanent steps are independent).
Count each device once per period: two reports of one device share ``B``. Segment
``bits``, statistics ``counts[d]``, IBU channel, covariance and intervals are unary
encoding's at ``(p, q)``: this class is UE with the chained channel. Against L-GRR its
variance does not grow with ``d`` (L-GRR's does, linearly): choose it for large domains.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ldp_shared.bulk_draws import BulkDraws
from ldp_shared.kernel import unary_epsilon
from ldp_shared.mechanisms._checks import check_domain_size, check_indices
from ldp_shared.mechanisms.base import PlannedVariance, register
from ldp_shared.mechanisms.grr import realised_keep
from ldp_shared.mechanisms.longitudinal import (
    LongitudinalCategoricalSpec,
    LongitudinalRandomizer,
    check_epsilons,
    one_index,
    prf_uniform_list,
    prf_uniforms,
    value_messages,
)
from ldp_shared.mechanisms.unary import UnaryEncoding, unary_probabilities
from ldp_shared.rand import resolve_rng

NAME = "l-osue"
PLAIN_PYTHON_UP_TO = 32
"""Domains up to this size derive a one-record call's permanent vector in plain Python
(faster than numpy's per-call overhead there; above it the PRF's HMAC blocks dominate
either way)."""


def instantaneous_flip(epsilon: float, epsilon_infinity: float) -> float:
    """``q₂ = (e^ε∞ − e^ε)/((e^ε + 1)(e^ε∞ − 1))`` of the module docstring, written as
    ``expm1(ε − ε∞)/expm1(−ε∞) · 1/(e^ε + 1)`` so that large budgets do not overflow."""
    at_one_report = unary_probabilities("oue", epsilon)[1]  # 1/(e^ε + 1)
    return math.expm1(epsilon - epsilon_infinity) / math.expm1(-epsilon_infinity) * at_one_report


def permanent_rows(
    idx: NDArray[np.int64], uniforms: NDArray[np.float64], p1: float, q1: float
) -> NDArray[np.uint8]:
    """The packed permanent vectors of values ``idx`` from one row of ``d`` uniforms each:
    bit ``v`` is ``u_v < q₁``, the true bit ``u_x < p₁``."""
    n = idx.size
    threshold = np.full(uniforms.shape, q1)
    threshold[np.arange(n), idx] = p1
    return np.packbits(uniforms < threshold, axis=1)


@register
class LongitudinalOSUESpec(LongitudinalCategoricalSpec):
    """A categorical attribute a device reports repeatedly, by L-OSUE."""

    mechanism: Literal["l-osue"]
    title: ClassVar[str] = "L-OSUE"

    def longitudinal(self, d: int, epsilon: float) -> LongitudinalOSUE:
        return LongitudinalOSUE(d=d, epsilon=epsilon, epsilon_infinity=self.permanent_epsilon)


@dataclass(frozen=True)
class LongitudinalOSUE(UnaryEncoding, LongitudinalRandomizer):
    """L-OSUE over ``d`` values: ``epsilon`` per report, ``epsilon_infinity`` per value.

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
        epsilon, infinity = check_epsilons("L-OSUE", self.epsilon, self.epsilon_infinity)
        p1, q1 = 0.5, realised_keep(unary_probabilities("oue", infinity)[1])
        q2 = realised_keep(instantaneous_flip(epsilon, infinity))
        p2 = 1.0 - q2  # exact: q₂ ≤ 1/2 lies on the 2^-53 grid
        chained = {"p": p1 * p2 + (1.0 - p1) * q2, "q": q1 * p2 + (1.0 - q1) * q2}
        values = {"d": d, "epsilon": epsilon, "epsilon_infinity": infinity, **chained}
        for name, value in {**values, "p1": p1, "q1": q1, "p2": p2, "q2": q2}.items():
            object.__setattr__(self, name, value)

    @property
    def permanent_epsilon(self) -> float:
        """ε∞ = ``ln(p₁(1 − q₁)/((1 − p₁)q₁))``: all reports of one value post-process
        its permanent OUE vector."""
        return unary_epsilon(self.p1, self.q1)

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

    # ``perturb``/``perturb_packed`` (each row a fresh device) are UnaryEncoding's at the
    # chained (p, q): given x the two steps leave the bits independent, bit x set with
    # probability p and every other with q, so one fresh device's report is exactly UE's.

    def permanent(self, values: ArrayLike, key: bytes) -> NDArray[np.uint8]:
        """The memoised permanent vector ``B`` of each value for the device's ``key``,
        packed (``n × ceil(d/8)``)."""
        idx = check_indices(values, self.d)
        distinct, inverse = np.unique(idx, return_inverse=True)
        u = prf_uniforms(key, value_messages(distinct, NAME.encode()), self.d)
        return permanent_rows(distinct, u, self.p1, self.q1)[inverse]

    def memo_keys(self, values: NDArray[Any], key: bytes) -> NDArray[np.int64]:
        """The value itself: its permanent vector is the memoised one."""
        return check_indices(values, self.d)

    def perturb_memoised(
        self, values: NDArray[Any], key: bytes, rng: np.random.Generator | None = None
    ) -> NDArray[np.bool_]:
        v = one_index(values, self.d)
        if v is not None:  # a device's one record (see the module)
            permanent = self._permanent_memo.get(key, v)
            if permanent is None:
                permanent = self.permanent_one(v, key)
            return np.not_equal(permanent, self._one_record_draws.take(resolve_rng(rng)))
        idx = check_indices(values, self.d)
        reported = self.instantaneous(self.permanent(idx, key), resolve_rng(rng))
        return np.unpackbits(reported, axis=1, count=self.d).view(np.bool_)

    def permanent_one(self, x: int, key: bytes) -> NDArray[np.bool_]:
        """:meth:`permanent` of one value, unpacked (``1 × d`` booleans; the same PRF
        draws and comparisons), memoised in memory. Read only."""
        memo = self._permanent_memo
        found: NDArray[np.bool_] | None = memo.get(key, x)
        if found is not None:
            return found
        if self.d <= PLAIN_PYTHON_UP_TO:
            u = prf_uniform_list(key, NAME.encode() + b"\n" + str(x).encode("ascii"), self.d)
            q1 = self.q1
            bits = [ui < q1 for ui in u]
            bits[x] = u[x] < self.p1
            row = np.array([bits], dtype=np.bool_)
        else:
            packed = self.permanent(np.array([x], dtype=np.int64), key)
            row = np.unpackbits(packed, axis=1, count=self.d).view(np.bool_)
        row.flags.writeable = False
        memo.put(key, x, row)
        return row

    @functools.cached_property
    def _one_record_draws(self) -> BulkDraws[NDArray[np.bool_]]:
        """The instantaneous step's flips, drawn ahead: ``1 × d`` booleans ``w_v < q₂``
        (:meth:`instantaneous`'s comparison), one row per record."""

        def draw(n: int, gen: np.random.Generator) -> list[NDArray[np.bool_]]:
            return list((gen.random((n, self.d)) < self.q2).reshape(n, 1, self.d))

        return BulkDraws(draw)

    def instantaneous(
        self, permanent: NDArray[np.uint8], gen: np.random.Generator
    ) -> NDArray[np.uint8]:
        """The fresh SUE step of one report from each packed permanent vector: bit ``v``
        flipped where a fresh uniform ``w_v < q₂`` (padding bits stay zero)."""
        flips = gen.random((permanent.shape[0], self.d)) < self.q2
        return np.bitwise_xor(permanent, np.packbits(flips, axis=1))
