"""Privacy amplification by shuffling: the central (ε, δ) that n shuffled reports buy.

Each report is ε₀-LDP against everyone. When the reports reach the aggregator through an
honest shuffler (which forwards them in uniformly random order and keeps nothing that
identifies or orders a sender), the aggregator sees only the multiset of n reports, and
that multiset is (ε, δ)-DP for a much smaller ε. This module bounds ε two ways, both from
Feldman, McMillan and Talwar, "Hiding Among the Clones: A Simple and Nearly Optimal
Analysis of Privacy Amplification by Shuffling" (FOCS 2021):

* **closed form** (their Theorem 3.1), valid when ``ε₀ ≤ log(n / (16 log(4/δ)))``::

      ε₁ = log(1 + a + c),  a = 8 √(e^ε₀ log(4/δ)) / √n,  c = 8 e^ε₀ / n
      ε  = log(1 + (1 − e^−ε₀) / (1 + e^(−ε₀ − ε₁)) · (a + c))

  (the headline statement rounds the factor to ``(e^ε₀ − 1)/(e^ε₀ + 1)``, i.e. ε₁ = 0;
  the factor with ε₁ is the one the proof gives and the one Apple's reference
  implementation ``apple/ml-shuffling-amplification`` evaluates: 0.5378 at n = 10⁵,
  ε₀ = 4, δ = 10⁻⁶). Outside the condition the theorem says nothing and the bound is ε₀.
* **numerical** (their Section 4): the shuffled outputs on neighbouring datasets are a
  post-processing of the pair ``(P, Q)`` where ``C ~ Bin(n − 1, e^−ε₀)`` other
  reports are "clones" of the differing one, ``A ~ Bin(C, 1/2)`` of them copy its first
  value, ``Δ ~ Bern(e^ε₀/(e^ε₀ + 1))``, ``P = (A + Δ, C − A + 1 − Δ)`` and ``Q`` swaps Δ
  for ``1 − Δ``. Writing ``m = C + 1``, ``p = e^ε₀/(e^ε₀ + 1)`` and ``b_a = Bin(a; m, 1/2)``,
  the first count has ``P(a | C) = 2 b_a (p a + (1 − p)(m − a))/m`` and ``Q(a | C) =
  2 b_a ((1 − p) a + p (m − a))/m``; their ratio increases with ``a``, so the hockey-stick
  divergence ``δ(ε) = Σ max(0, P − e^ε Q)`` sums the upper tail from the first ``a`` with
  ratio ``≥ e^ε``. We compute it in log space (``math.lgamma``) over the windows of C and
  A that hold all but ``τ = 10⁻³ δ`` of their mass (Bernstein's and Hoeffding's
  inequalities), add those τ to δ so the result stays an upper bound, and take the
  smallest ε of a two-level grid on ``[0, ε₀]`` whose δ(ε) is within the target.

The numerical bound is the tighter; :func:`central_epsilon` reports both and the smaller.
Both need pure ε₀-LDP reports (δ₀ = 0) and that each person sends one report per shuffle.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ldp_shared.errors import ConfigurationError

TAIL_SHARE = 1e-3
"""Share of the target δ given to each truncated tail (of C, and of A given C)."""
GRID_POINTS = 160
"""ε values tried per level of the grid search (two levels: ε₀/160, then ε₀/160²)."""
ROUNDING_SLACK = 1e-6
"""Relative slack on the computed δ(ε) for the rounding of ``lgamma`` at large n."""
_CHUNK_CELLS = 2_000_000
"""How many (C, A) cells one vectorised step holds (bounds memory)."""
MAX_NUMERICAL_CELLS = 60_000_000
"""Largest (C, A) window the numerical bound sums (a few seconds); beyond it (n ≳ 10⁹ at
small ε₀) the numerical bound falls back to the closed form."""


@dataclass(frozen=True)
class CentralGuarantee:
    """The central (ε, δ) against the aggregator of n shuffled ε₀-LDP reports."""

    epsilon0: float
    n: int
    delta: float
    epsilon_closed_form: float
    """FMT Theorem 3.1; equal to ε₀ where the theorem's condition fails."""
    epsilon_numerical: float
    """FMT's numerical analysis of the clone reduction (an upper bound); the closed form
    where the window it sums would exceed :data:`MAX_NUMERICAL_CELLS`."""

    @property
    def epsilon(self) -> float:
        """The tighter of the two bounds, never above the local ε₀."""
        return min(self.epsilon_closed_form, self.epsilon_numerical, self.epsilon0)


def _check(epsilon0: float, n: int, delta: float) -> None:
    if not (math.isfinite(epsilon0) and epsilon0 > 0.0):
        raise ConfigurationError(f"local epsilon must be a positive number, got {epsilon0}")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ConfigurationError(f"n must be a positive whole number of reports, got {n!r}")
    if not (0.0 < delta < 1.0):
        raise ConfigurationError(f"delta must be in (0, 1), got {delta}")


def closed_form_applies(epsilon0: float, n: int, delta: float) -> bool:
    """Whether FMT Theorem 3.1's condition ``ε₀ ≤ log(n / (16 log(4/δ)))`` holds."""
    ratio = n / (16.0 * math.log(4.0 / delta))
    return ratio > 1.0 and epsilon0 <= math.log(ratio)


def closed_form_epsilon(epsilon0: float, n: int, delta: float) -> float:
    """FMT Theorem 3.1's central ε (the module docstring's formula), ε₀ where it fails."""
    _check(epsilon0, n, delta)
    if not closed_form_applies(epsilon0, n, delta):
        return epsilon0
    a = 8.0 * math.sqrt(math.exp(epsilon0) * math.log(4.0 / delta)) / math.sqrt(n)
    c = 8.0 * math.exp(epsilon0) / n
    coarse = math.log1p(a + c)
    factor = -math.expm1(-epsilon0) / (1.0 + math.exp(-epsilon0 - coarse))
    return min(epsilon0, math.log1p(factor * (a + c)))


def _log_binomial_pmf(
    k: NDArray[np.float64], trials: NDArray[np.float64], log_p: float, log_q: float
) -> NDArray[np.float64]:
    lgamma = np.vectorize(math.lgamma, otypes=[np.float64])
    out: NDArray[np.float64] = (
        lgamma(trials + 1.0)
        - lgamma(k + 1.0)
        - lgamma(trials - k + 1.0)
        + k * log_p
        + (trials - k) * log_q
    )
    return out


def _clone_window(n: int, q: float, tail: float) -> tuple[int, int]:
    """A window of C ~ Bin(n − 1, q) outside which lies at most ``tail`` (Bernstein)."""
    trials = n - 1
    mean, variance = trials * q, trials * q * (1.0 - q)
    log_term = math.log(2.0 / tail)
    width = log_term / 3.0 + math.sqrt(log_term**2 / 9.0 + 2.0 * log_term * variance)
    return max(0, math.floor(mean - width)), min(trials, math.ceil(mean + width))


def _span(rows_high: int, tail: float) -> int:
    # A ≥ ⌊m/2⌋ + T has mass ≤ exp(−2 (T − 2)² / C) (Hoeffding on A ~ Bin(C, 1/2))
    return math.ceil(math.sqrt(max(rows_high, 1) * math.log(1.0 / tail) / 2.0)) + 3


def numerical_cells(epsilon0: float, n: int, delta: float) -> int:
    """How many (C, A) cells :func:`numerical_epsilon` sums per grid level."""
    tail = TAIL_SHARE * delta
    lo, hi = _clone_window(n, math.exp(-epsilon0), tail)
    return (hi - lo + 1) * _span(hi, tail)


def _tail_deltas(
    epsilon0: float, n: int, epsilons: NDArray[np.float64], tail: float
) -> NDArray[np.float64]:
    """δ(ε) of the clone pair at each ε, truncated to the windows (tails not added)."""
    p = 1.0 / (1.0 + math.exp(-epsilon0))  # e^ε₀/(e^ε₀ + 1)
    q = math.exp(-epsilon0)
    lo, hi = _clone_window(n, q, tail)
    clones = np.arange(lo, hi + 1, dtype=np.float64)
    log_weight = _log_binomial_pmf(
        clones, np.full_like(clones, n - 1.0), math.log(q), math.log1p(-q)
    )
    span = _span(hi, tail)
    offsets = np.arange(span, dtype=np.float64)
    e_eps = np.exp(epsilons)
    total = np.zeros_like(epsilons)
    rows = max(1, _CHUNK_CELLS // span)
    for start in range(0, clones.size, rows):
        c = clones[start : start + rows, None]
        m = c + 1.0
        start_a = np.floor(m / 2.0)
        a = start_a + offsets[None, :]
        inside = a <= m
        a = np.where(inside, a, m)
        # log Bin(a; m, 1/2) from its value at ⌊m/2⌋ and the ratios (m − a)/(a + 1)
        log_first = _log_binomial_pmf(start_a, m, math.log(0.5), math.log(0.5))
        steps = np.log(np.maximum(m - a[:, :-1], 1e-300)) - np.log(a[:, :-1] + 1.0)
        log_b = log_first + np.concatenate(
            [np.zeros_like(log_first), np.cumsum(steps, axis=1)], axis=1
        )
        mass = np.where(inside, 2.0 * np.exp(log_b) / m, 0.0)
        mass_p = mass * (p * a + (1.0 - p) * (m - a))
        mass_q = mass * ((1.0 - p) * a + p * (m - a))
        # upper tails from each column: T[:, j] = Σ_{k ≥ j}
        tail_p = np.cumsum(mass_p[:, ::-1], axis=1)[:, ::-1]
        tail_q = np.cumsum(mass_q[:, ::-1], axis=1)[:, ::-1]
        tail_p = np.concatenate([tail_p, np.zeros((c.shape[0], 1))], axis=1)
        tail_q = np.concatenate([tail_q, np.zeros((c.shape[0], 1))], axis=1)
        # first a with ratio ≥ e^ε: a ≥ m (e^ε p − 1 + p) / ((2p − 1)(1 + e^ε))
        first = np.ceil(
            m * (e_eps[None, :] * p - 1.0 + p) / ((2.0 * p - 1.0) * (1.0 + e_eps[None, :]))
        )
        column = np.clip(first - np.floor(m / 2.0), 0, span).astype(np.int64)
        index = np.arange(c.shape[0])[:, None]
        per_clone = np.maximum(0.0, tail_p[index, column] - e_eps[None, :] * tail_q[index, column])
        weight = np.exp(log_weight[start : start + rows])
        total += weight @ per_clone
    return total


def numerical_epsilon(epsilon0: float, n: int, delta: float) -> float:
    """FMT's numerical bound (the module docstring): the smallest grid ε with δ(ε) ≤ δ."""
    _check(epsilon0, n, delta)
    if n == 1:
        return epsilon0
    tail = TAIL_SHARE * delta
    budget = delta - 2.0 * tail

    def first_within(grid: NDArray[np.float64]) -> int:
        deltas = _tail_deltas(epsilon0, n, grid, tail) * (1.0 + ROUNDING_SLACK)
        ok = np.flatnonzero(deltas <= budget)
        return int(ok[0]) if ok.size else grid.size

    coarse = np.linspace(0.0, epsilon0, GRID_POINTS + 1)
    i = first_within(coarse)
    if i >= coarse.size:
        return epsilon0
    if i == 0:
        return 0.0
    fine = np.linspace(coarse[i - 1], coarse[i], GRID_POINTS + 1)
    j = first_within(fine)
    return float(fine[min(j, fine.size - 1)])


def central_epsilon(
    epsilon0: float, n: int, delta: float = 1e-6, max_cells: int = MAX_NUMERICAL_CELLS
) -> CentralGuarantee:
    """Both bounds on the central ε of n shuffled ε₀-LDP reports at this δ; the numerical
    one only where its window has at most ``max_cells`` cells (else the closed form)."""
    _check(epsilon0, n, delta)
    closed = closed_form_epsilon(epsilon0, n, delta)
    if numerical_cells(epsilon0, n, delta) > max_cells:
        numerical = closed
    else:
        numerical = numerical_epsilon(epsilon0, n, delta)
    return CentralGuarantee(
        epsilon0=epsilon0,
        n=n,
        delta=delta,
        epsilon_closed_form=closed,
        epsilon_numerical=numerical,
    )
