"""The central guarantee a shuffled collection states next to its local ε.

A collection created with ``"shuffled": true`` gets its reports through a shuffler
(docs/shuffler.md), so two guarantees hold (docs/shuffling.md):

* **against everyone**: the local (ε₀, δ₀) of one record's report;
* **against the aggregator, given an honest shuffler**: the central (ε, δ) of n shuffled
  reports of local ε₀ (:func:`ldp_shared.shuffling.central_epsilon`; Feldman, McMillan and
  Talwar, FOCS 2021). Both bounds need pure ε₀-LDP reports: a record with δ₀ > 0 states
  none.

Where they are shown:

* the published config (:class:`ShuffledConfig`): the closed form (their Theorem 3.1) at
  the release minimum and at 10³ … 10⁶ reports, cheap and the same on every machine, so a
  client that rebuilds the config gets the same numbers;
* every released estimate (:class:`CentralRelease`, :func:`released_central`): the tighter
  of the closed form at the estimate's n and the numerical bound (their Section 4).

The numerical bound at n = 10⁶ can take a second; an estimate takes milliseconds. So
:func:`released_central` computes it at the largest point ``n'`` of a fixed geometric grid
(``⌊2^(k/4)⌋``, steps of 19 %) with ``n' ≤ n`` whose sum has at most
:data:`ESTIMATE_CELLS` cells, and caches it. A bound at ``n' ≤ n`` holds at n: the
shuffled output of n reports is a post-processing of that of any ``n'`` of them (add the
other reports, shuffle again), so privacy only grows with n.
"""

from __future__ import annotations

import functools
import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ldp_shared.shuffling import closed_form_epsilon, numerical_cells, numerical_epsilon

CENTRAL_DELTA = 1e-6
"""δ of every central guarantee this service states (the issue's and Apple's setting)."""
ESTIMATE_CELLS = 300_000
"""Largest window of the numerical bound an estimate sums (under 0.1 s, once per grid
point and ε₀: cached); beyond it the bound is taken at a smaller grid point."""
CONFIG_REPORTS = (1_000, 10_000, 100_000, 1_000_000)
"""The report counts of the config's table (besides the release minimum)."""
GRID_STEPS_PER_DOUBLING = 4

Bound = Literal["numerical", "closed-form", "local"]


class _Wire(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CentralRelease(_Wire):
    """The central (ε, δ) of a release of a shuffled collection, against the aggregator
    given an honest shuffler (the local ε holds against everyone)."""

    epsilon: float = Field(description="central ε: the tighter bound, never above ε₀")
    delta: float = Field(description="central δ")
    n: int = Field(description="the reports the estimate is made from")
    bound: Bound = Field(
        description=(
            "which bound gave ε: 'numerical' (Feldman, McMillan and Talwar 2021, §4),"
            " 'closed-form' (their Thm 3.1) or 'local' (neither amplifies: ε = ε₀)"
        )
    )
    bound_n: int = Field(
        description=(
            "the reports the bound was computed at (≤ n; a bound at fewer shuffled"
            " reports holds at more)"
        )
    )
    local_epsilon: float = Field(description="ε₀ of one record's report (against everyone)")


class CentralAt(_Wire):
    """The closed-form central ε at one number of shuffled reports."""

    n: int
    epsilon: float


class ShuffledConfig(_Wire):
    """What a shuffled collection's config says of its two guarantees."""

    local_epsilon: float = Field(description="ε₀ of one record's report, against everyone")
    local_delta: float = Field(default=0.0, description="δ₀ of one record's report")
    delta: float = Field(description="δ of the central guarantees")
    central: list[CentralAt] = Field(
        description=(
            "central ε against the aggregator (honest shuffler) by the closed form of"
            " Feldman, McMillan and Talwar 2021 (Thm 3.1) at the release minimum and at"
            " 10³ … 10⁶ reports; each estimate states the tighter bound at its own n."
            " Empty when δ₀ > 0 (the bounds need pure ε₀-LDP reports)"
        )
    )


def _pure(epsilon0: float, delta0: float) -> bool:
    return delta0 == 0.0 and math.isfinite(epsilon0) and epsilon0 > 0.0


def shuffled_config(
    epsilon0: float, delta0: float, min_reports: int, delta: float = CENTRAL_DELTA
) -> ShuffledConfig:
    """The config's :class:`ShuffledConfig` for a record of (ε₀, δ₀)."""
    counts = sorted({min_reports, *(n for n in CONFIG_REPORTS if n > min_reports)})
    central = (
        [CentralAt(n=n, epsilon=closed_form_epsilon(epsilon0, n, delta)) for n in counts]
        if _pure(epsilon0, delta0)
        else []
    )
    return ShuffledConfig(local_epsilon=epsilon0, local_delta=delta0, delta=delta, central=central)


def grid_point(n: int, steps: int = 0) -> int:
    """The largest ``⌊2^(k/4)⌋ ≤ n``, then ``steps`` grid points further down (≥ 1)."""

    def point(k: int) -> int:
        return math.floor(math.pow(2.0, k / GRID_STEPS_PER_DOUBLING))

    k = math.floor(GRID_STEPS_PER_DOUBLING * math.log2(n)) - steps
    while k > 0 and point(k) > n:
        k -= 1
    return max(1, point(max(k, 0)))


def budget_point(epsilon0: float, n: int, delta: float, max_cells: int = ESTIMATE_CELLS) -> int:
    """The largest grid point ``≤ n`` whose numerical sum has at most ``max_cells`` cells."""
    steps = 0
    point = grid_point(n)
    while point > 1 and numerical_cells(epsilon0, point, delta) > max_cells:
        steps += 1
        point = grid_point(n, steps)
    return point


@functools.lru_cache(maxsize=1024)
def _numerical(epsilon0: float, n: int, delta: float) -> float:
    return numerical_epsilon(epsilon0, n, delta)


def released_central(
    epsilon0: float, delta0: float, n: int, delta: float = CENTRAL_DELTA
) -> CentralRelease | None:
    """The central guarantee of a release made from ``n`` shuffled reports of (ε₀, δ₀);
    ``None`` for δ₀ > 0 or no report (the module docstring says how it is computed)."""
    if n < 1 or not _pure(epsilon0, delta0):
        return None
    closed = closed_form_epsilon(epsilon0, n, delta)
    point = budget_point(epsilon0, n, delta)
    numerical = _numerical(epsilon0, point, delta)
    if numerical < closed and numerical < epsilon0:
        epsilon, bound, bound_n = numerical, "numerical", point
    elif closed < epsilon0:
        epsilon, bound, bound_n = closed, "closed-form", n
    else:
        epsilon, bound, bound_n = epsilon0, "local", n
    return CentralRelease(
        epsilon=epsilon,
        delta=delta,
        n=n,
        bound=bound,
        bound_n=bound_n,
        local_epsilon=epsilon0,
    )
