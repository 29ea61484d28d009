"""The final test of a heavy-hitter search: is a candidate string held by anyone?

The normal approximation of a support count fails in the far tail the search tests at
(about ``Φ⁻¹(1 − α/C)`` with ``C`` in the hundreds of thousands), in two ways:

* with few reports, the support count of a key nobody holds is a binomial with a small
  mean ``n·(1/g)``, whose tail is much heavier than the normal's;
* with ``k`` not much larger than ``g``, a key that collides with a frequent key ``u``
  under a few more of the ``k`` functions than the expected ``k/g`` gains ``f_u/k`` per
  collision: a lump, not small normal noise.

So a candidate that passes the screen is tested again, exactly:

1. its support count ``C_v = Σ_j N[j, h_j(v)]`` in the pooled table is corrected for the
   collisions it has with the **known frequent keys** ``u`` of that table (kept prefixes
   and screened strings, at their estimated shares ``w_u``), which are computed, not
   averaged: ``C'_v = C_v − n (p − q) Σ_u w_u (c(u, v) − 1/g)`` with ``c(u, v)`` the share
   of functions under which ``u`` and ``v`` collide;
2. ``C'_v`` must reach ``c* + z·s``, where ``c*`` is the exact upper ``α/C`` quantile of
   ``Binomial(n, 1/g)`` (the count of a key nobody holds, every report supporting it with
   probability ``q + (p − q)/g = 1/g`` on average) and ``s`` the normal collision noise
   left by the keys not known (``F₂`` minus the known keys' ``Σ w_u²``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ldp_shared.mechanisms.hashing import buckets
from ldp_shared.mechanisms.local_hashing import LocalHashing

KNOWN_KEYS = 256
"""Most frequent known keys a candidate's collisions are computed with."""


def binomial_upper(n: int, rate: float, tail: float) -> int:
    """The least ``c`` with ``P(Binomial(n, rate) ≥ c) ≤ tail``, summed exactly from the
    far end in log space (``n + 1`` when even ``P(X = n)`` exceeds ``tail``)."""
    if n <= 0 or rate <= 0.0:
        return 1
    if rate >= 1.0:
        return n + 1
    mean = n * rate
    sd = math.sqrt(mean * (1.0 - rate))
    start = min(n, math.ceil(mean + 40.0 * sd + 50.0))
    step = math.log((1.0 - rate) / rate)
    log_pmf = (
        math.lgamma(n + 1)
        - math.lgamma(start + 1)
        - math.lgamma(n - start + 1)
        + start * math.log(rate)
        + (n - start) * math.log1p(-rate)
    )
    total = 0.0
    c = start
    while c >= 0:
        total += math.exp(log_pmf)
        if total > tail:
            return c + 1
        if c == 0:
            break
        log_pmf += math.log(c) - math.log(n - c + 1) + step
        c -= 1
    return 0


@dataclass(frozen=True)
class KnownKeys:
    """Frequent keys of one pooled table: their buckets under every function (``m × k``)
    and their shares ``w`` of the table's reports."""

    buckets: NDArray[np.int64]
    shares: NDArray[np.float64]
    keys: NDArray[np.uint64]

    @classmethod
    def of(
        cls, oracle: LocalHashing, keys: NDArray[np.uint64], shares: NDArray[np.float64]
    ) -> KnownKeys:
        """The :data:`KNOWN_KEYS` largest ``shares`` and their keys' buckets."""
        order = np.argsort(shares)[::-1][:KNOWN_KEYS]
        chosen = keys[order]
        table = buckets(chosen[:, None], np.arange(oracle.k), oracle.g)
        return cls(buckets=table, shares=np.clip(shares[order], 0.0, 1.0), keys=chosen)


def confirmed(
    oracle: LocalHashing,
    table: NDArray[np.int64],
    candidates: NDArray[np.uint64],
    known: KnownKeys,
    tail: float,
    z: float,
) -> tuple[NDArray[np.bool_], float]:
    """Which ``candidates`` pass the exact test in ``table`` (one pooled table), and the
    frequency a key must show to pass it (its detection level)."""
    n = int(table.sum())
    g, k = oracle.g, oracle.k
    rows = np.arange(k)
    counts = oracle.supports(table, candidates)
    own = buckets(candidates[:, None], rows, g)
    excess = np.zeros(candidates.size)
    for i in range(candidates.size):
        same = known.keys != candidates[i]
        collide = (known.buckets[same] == own[i]).mean(axis=1)
        excess[i] = n * (oracle.p - oracle.q) * float(known.shares[same] @ (collide - 1.0 / g))
    f2_rest = max(oracle.second_moment(table, n) - float(known.shares @ known.shares), 0.0)
    spread = n * (oracle.p - oracle.q) * math.sqrt(f2_rest * (1.0 / g) * (1.0 - 1.0 / g) / k)
    needed = binomial_upper(n, oracle.q_star, tail) + z * spread
    level = (needed / n - oracle.q_star) / (oracle.p - oracle.q_star) if n else 1.0
    return counts - excess >= needed, level
