"""The debiased-bit kernel shared by every bitwise randomized-response mechanism.

A true bit ``x`` is reported as ``y`` with ``P(y=1|x=1) = p`` and ``P(y=1|x=0) = q``,
``p > q``. The debiased bit ``z = (y - q) / (p - q)`` has ``E[z] = x``,
so over ``n`` reports with ``S`` ones the frequency estimate is

    f̂ = (S/n - q) / (p - q)

with variance ``[f p(1-p) + (1-f) q(1-q)] / (n (p-q)^2)`` (Wang et al., "Locally
Differentially Private Protocols for Frequency Estimation", USENIX Security 2017,
eq. (2) and its derivation). The same algebra serves GRR, where "the report equals
value v" is the indicator bit with ``p = P(y=v|x=v)`` and ``q = P(y=v|x≠v)``.

This module also draws Bernoulli bits for long, mostly-zero vectors by sampling the
positions of the ones (geometric gaps) instead of one uniform per bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any, Literal, Self

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ldp_shared.errors import ConfigurationError, InvalidQueryError
from ldp_shared.intervals import VarianceCurve, score_bounds

FloatArray = NDArray[np.float64]

IntervalMethod = Literal["normal", "score"]
"""How an estimate's interval was formed: ``estimate ± z·stderr`` with the plug-in
variance, or the score interval of :mod:`ldp_shared.intervals`."""


def _check_pq(p: float, q: float) -> None:
    if p == q:
        raise ConfigurationError(
            f"ε rounds to 0 (p = q = {p!r}): answers would not depend on the value"
        )
    if not 0.0 <= q < p <= 1.0:
        raise ConfigurationError(f"need 0 <= q < p <= 1, got p={p!r}, q={q!r}")


def _log_ratio(a: float, b: float) -> float:
    return math.inf if b == 0.0 else math.log(a / b)


def bit_epsilon(p: float, q: float) -> float:
    """Exact ε of a single bit reported with ``P(1|1)=p``, ``P(1|0)=q``.

    ``max(ln(p/q), ln((1-q)/(1-p)))``: the worst output's likelihood ratio. For MASK
    (``q = 1-p``) this is ``ln(p/(1-p))``, the per-item ε (Rizvi and Haritsa, VLDB 2002).
    """
    _check_pq(p, q)
    return max(_log_ratio(p, q), _log_ratio(1.0 - q, 1.0 - p))


def unary_epsilon(p: float, q: float) -> float:
    """Exact ε of a unary-encoded (one-hot) report: ``ln(p(1-q)/((1-p)q))``.

    Two records differ in exactly two bits of their one-hot vectors, one moving from
    0 to 1 and one from 1 to 0, so the worst ratio is ``(p/q)·((1-q)/(1-p))``
    (Wang et al. 2017, Theorem 1). Infinite when ``q = 0`` or ``p = 1``.
    """
    _check_pq(p, q)
    return _log_ratio(p, q) + _log_ratio(1.0 - q, 1.0 - p)


def channel_epsilon(channel: FloatArray) -> float:
    """Exact ε of any finite channel ``M[y, x] = P(report y | value x)``.

    ``max_y max_{x,x'} ln(M[y,x]/M[y,x'])`` (the definition of ε-LDP, e.g. Kairouz,
    Oh and Viswanath, NeurIPS 2014); infinite when some output
    is possible under one value and impossible under another.
    """
    m = np.asarray(channel, dtype=np.float64)
    hi = m.max(axis=1)
    lo = m.min(axis=1)
    if np.any((lo == 0.0) & (hi > 0.0)):
        return math.inf
    live = hi > 0.0
    return float(np.max(np.log(hi[live]) - np.log(lo[live])))


def bounds_problem(lo: float, hi: float) -> str | None:
    """What is wrong with the bounds ``[lo, hi]`` of a number (``None``: nothing): both
    finite, ``lo < hi``, and a width ``hi − lo`` that is finite too (bounds such as
    ±1.7e308 would scale every value to NaN)."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "lo and hi must be finite numbers"
    if not lo < hi:
        return f"lo must be below hi, got lo={lo!r}, hi={hi!r}"
    if not math.isfinite(hi - lo):
        return f"hi − lo must be a finite number, got lo={lo!r}, hi={hi!r}"
    return None


def debias(sums: NDArray[np.integer] | FloatArray, n: int, p: float, q: float) -> FloatArray:
    """Unbiased frequencies ``(S/n - q)/(p - q)`` from per-bit counts ``S`` over ``n`` reports."""
    if n <= 0:
        raise InvalidQueryError("no reports to estimate from")
    return (np.asarray(sums, dtype=np.float64) / n - q) / (p - q)


def report_step(n: int, p: float, q: float) -> float:
    """How far one report moves a debiased frequency: ``1/(n (p − q))``."""
    return 1.0 / (n * (p - q))


def frequency_variance(f: FloatArray, n: int, p: float, q: float) -> FloatArray:
    """``Var(f̂) = [f p(1-p) + (1-f) q(1-q)] / (n (p-q)^2)``, with ``f`` clipped to [0, 1]."""
    fc = np.clip(np.asarray(f, dtype=np.float64), 0.0, 1.0)
    return (fc * p * (1.0 - p) + (1.0 - fc) * q * (1.0 - q)) / (n * (p - q) ** 2)


def z_value(confidence: float) -> float:
    """The two-sided standard normal quantile for a confidence level in (0, 1).

    ``Φ⁻¹(1/2 + c/2)``; for ``c`` so close to 1 that ``1/2 + c/2`` rounds to 1 (e.g.
    ``0.9999999999999999``), the same quantile as ``−Φ⁻¹((1 − c)/2)``, which stays finite.
    """
    if not 0.0 < confidence < 1.0 or not math.isfinite(confidence):
        raise InvalidQueryError(f"confidence must lie in (0, 1), got {confidence!r}")
    upper = 0.5 + confidence / 2.0
    if upper < 1.0:
        return NormalDist().inv_cdf(upper)
    return -NormalDist().inv_cdf((1.0 - confidence) / 2.0)


@dataclass(frozen=True)
class FrequencyEstimate:
    """Unbiased frequencies of one attribute with their standard errors and intervals."""

    n: int
    estimate: FloatArray
    stderr: FloatArray
    ci_low: FloatArray
    ci_high: FloatArray
    confidence: float
    interval: IntervalMethod = "normal"

    @property
    def counts(self) -> FloatArray:
        """Estimated number of reporters per value (``n · f̂``)."""
        return self.estimate * self.n

    def take(self, index: NDArray[np.integer]) -> FrequencyEstimate:
        """The estimates of the values at ``index`` only."""
        return FrequencyEstimate(
            self.n,
            self.estimate[index],
            self.stderr[index],
            self.ci_low[index],
            self.ci_high[index],
            self.confidence,
            self.interval,
        )

    @classmethod
    def normal(
        cls, n: int, estimate: FloatArray, stderr: FloatArray, confidence: float, **extra: Any
    ) -> Self:
        """The estimate with normal intervals ``estimate ± z·stderr`` at ``confidence``."""
        z = z_value(confidence)
        return cls(
            n=n,
            estimate=estimate,
            stderr=stderr,
            ci_low=estimate - z * stderr,
            ci_high=estimate + z * stderr,
            confidence=confidence,
            **extra,
        )

    @classmethod
    def score(
        cls,
        n: int,
        estimate: FloatArray,
        curve: VarianceCurve,
        confidence: float,
        step: ArrayLike,
    ) -> FrequencyEstimate:
        """The estimate with plug-in standard errors ``√V(f̂)`` and continuity-corrected
        score intervals at ``confidence``, where one report moves the estimate by ``step``
        (:func:`ldp_shared.intervals.score_bounds`)."""
        half = np.asarray(step, dtype=np.float64) / 2.0
        low, high = score_bounds(estimate, curve, z_value(confidence), half)
        stderr: FloatArray = np.sqrt(curve(estimate))
        return FrequencyEstimate(n, estimate, stderr, low, high, confidence, "score")


def estimate_frequencies(
    sums: NDArray[np.integer] | FloatArray, n: int, p: float, q: float, confidence: float = 0.95
) -> FrequencyEstimate:
    """Debias per-value counts and attach plug-in standard errors and score intervals.

    The score interval is the default at every ``n``: it needs no threshold, costs O(d)
    like the normal one, and the two agree once the expected counts are large
    (coverage measured in ``bench/intervals.py``)."""
    z_value(confidence)  # refuse a bad level before any work
    f_hat = debias(sums, n, p, q)
    curve = VarianceCurve.bit_sum(n, p, q)
    return FrequencyEstimate.score(n, f_hat, curve, confidence, report_step(n, p, q))


def bernoulli_flat_positions(rate: float, size: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """Sorted positions of the ones in ``size`` i.i.d. Bernoulli(``rate``) bits.

    Draws geometric gaps between consecutive ones, ``G = floor(ln U / ln(1-rate))``,
    so the cost is proportional to the number of ones (``rate·size``), not to ``size``.
    """
    if size <= 0 or rate <= 0.0:
        return np.empty(0, dtype=np.int64)
    if rate >= 1.0:
        return np.arange(size, dtype=np.int64)
    log_keep = math.log1p(-rate)
    expected = rate * size
    chunks: list[NDArray[np.int64]] = []
    start = -1  # position of the last one drawn so far
    while True:
        m = int(expected + 6.0 * math.sqrt(expected) + 64)
        u = 1.0 - rng.random(m)  # in (0, 1]
        # A gap of ``size`` or more lands past the end wherever it starts, so cap it there
        # before the cast: for tiny rates the raw gap exceeds int64 (and the cumsum would
        # overflow), which used to yield negative positions.
        gaps = np.minimum(np.floor(np.log(u) / log_keep), float(size)).astype(np.int64) + 1
        positions = start + np.cumsum(gaps)
        inside = positions[positions < size]
        chunks.append(inside)
        if inside.size < positions.size:
            break
        start = int(positions[-1])
        expected = rate * (size - start)
    return np.concatenate(chunks)


GAP_SAMPLING_BELOW = 1.0 / 32.0
"""Below this rate, drawing the ones' positions beats one random byte per bit."""


def random_bytes(size: int, rng: np.random.Generator) -> NDArray[np.uint8]:
    """``size`` uniform random bytes, cut from the bit generator's raw 64-bit words.

    About 2.5 times faster than ``rng.integers(0, 256, dtype=uint8)``; each byte of a raw
    word of PCG64 or AES-CTR is uniform on 0..255.
    """
    words = rng.bit_generator.random_raw((size + 7) // 8)
    return np.asarray(words, dtype=np.uint64).view(np.uint8)[:size]


def bernoulli_from_bytes(
    rate: float, draws: NDArray[np.uint8], rng: np.random.Generator
) -> NDArray[np.bool_]:
    """Bernoulli(``rate``) bits from uniform random bytes ``draws``, one bit per byte, exactly.

    With ``256·rate = t + f`` (``t`` whole, ``0 <= f < 1``), a byte ``B`` gives 1 when
    ``B < t`` and 0 when ``B > t``; the ties ``B = t`` (1 in 256) draw a uniform and give
    1 with probability ``f``. So ``P(1) = t/256 + f/256 = rate`` with no rounding of the
    rate to 8 bits, and the mechanism's stated ε stays exact.
    """
    scaled = rate * 256.0  # exact: a power-of-two scaling
    threshold = int(scaled)
    fraction = scaled - threshold
    out = draws < threshold
    ties = np.flatnonzero(draws == threshold)
    out[ties] = rng.random(ties.size) < fraction
    return out


def _bernoulli_by_bytes(rate: float, size: int, rng: np.random.Generator) -> NDArray[np.bool_]:
    """``size`` Bernoulli(``rate``) bits, one fresh random byte each."""
    return bernoulli_from_bytes(rate, random_bytes(size, rng), rng)


def bernoulli_matrix(
    rate: float, rows: int, cols: int, rng: np.random.Generator
) -> NDArray[np.bool_]:
    """A ``rows × cols`` matrix of i.i.d. Bernoulli(``rate``) bits.

    Sparse rates draw only the positions of the ones (or of the zeros, for rates near
    one); the rest draw one random byte per bit (:func:`_bernoulli_by_bytes`).
    """
    size = rows * cols
    if GAP_SAMPLING_BELOW <= rate <= 1.0 - GAP_SAMPLING_BELOW:
        return _bernoulli_by_bytes(rate, size, rng).reshape(rows, cols)
    if rate < 0.5:
        out = np.zeros(size, dtype=np.bool_)
        out[bernoulli_flat_positions(rate, size, rng)] = True
    else:
        out = np.ones(size, dtype=np.bool_)
        out[bernoulli_flat_positions(1.0 - rate, size, rng)] = False
    return out.reshape(rows, cols)
