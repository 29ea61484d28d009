"""Unbiased supports of itemsets and their standard errors (MASK's reconstruction).

After S. Rizvi and J. Haritsa, "Maintaining Data Privacy in Association Rule Mining"
(VLDB 2002). With the debiased bit ``z = a·y + b`` of
:class:`~ldp_shared.analyses.itemsets.channel.BitChannel` (``E[z] = x``) and the bits of
a basket perturbed independently, for an itemset ``C`` of ``k`` items

    ŝ(C) = (1/n) Σ_baskets Π_{j∈C} z_j = (1/n) Σ_{T⊆C} a^|T| b^(k-|T|) N_T

is unbiased, where ``N_T`` is the number of distorted baskets holding every item of
``T`` (``N_∅ = n``). This is exactly the paper's ``C^T = M^{-1} C^D`` (§4): ``M`` is the
``k``-fold Kronecker power of the one-bit channel ``[[p, q], [1-p, 1-q]]`` (rows: the
distorted bit 1, 0; columns: the true bit), so the row of ``M^{-1}`` that yields the
count of true all-ones patterns weighs a distorted pattern by
``Π_j ((1-q)/(p-q) if y_j = 1 else -q/(p-q)) = Π_j (a·y_j + b)``; summed over the
``2^k`` pattern counts this is ``Σ_baskets Π_j z_j``. With ``q = 1-p`` a weight depends
on a pattern only through its number of ones: the paper's ``k+1`` distinct weights.
Expanding the product over the subsets ``T`` needs only the all-ones counts ``N_T`` of
itemsets whose subsets were counted at earlier levels (the paper's linear number of
counters).

Standard error. Given the true baskets, the products of different baskets are
independent, and within a basket ``E[z_j² | x_j] = e0 + d·x_j`` with
``e0 = q(1-q)/(p-q)²`` and ``e1 = [p(1-q)² + (1-p)q²]/(p-q)²``, ``d = e1 - e0`` (``d = 1``
for MASK). Hence

    Var ŝ(C) = (1/n) [ Σ_{U⊆C} e0^(k-|U|) d^|U| s(U) - s(C) ],

estimated by plugging in the (clipped) estimates of the subsets, all of which the
Apriori order has already estimated. For ``k = 1`` this is the frequency variance of
:mod:`ldp_shared.kernel`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ldp_shared.analyses.itemsets.apriori import ItemsetLevel, _Candidates, _lookup, _subset_masks
from ldp_shared.analyses.itemsets.bits import FloatArray, IntArray, PackedSource
from ldp_shared.analyses.itemsets.channel import BitChannel
from ldp_shared.analyses.itemsets.counting import CountingMethod, ProgressCallback, _count_level
from ldp_shared.errors import InvalidQueryError


def _estimate(
    levels: Sequence[ItemsetLevel],
    items: IntArray,
    counts: IntArray,
    n: int,
    channel: BitChannel,
) -> tuple[FloatArray, list[tuple[tuple[int, ...], IntArray]]]:
    """``ŝ(C) = (1/n) Σ_{T⊆C} a^|T| b^(k-|T|) N_T`` for every row of ``items``.

    Also returns, per proper non-empty subset (as positions), the rows' positions in
    the lower level, for the standard errors.
    """
    k = items.shape[1]
    a, b = channel.a, channel.b
    total = (a**k) * counts.astype(np.float64)
    lookups: list[tuple[tuple[int, ...], IntArray]] = []
    for positions in _subset_masks(k)[:-1]:
        t = len(positions)
        coefficient = (a**t) * (b ** (k - t))
        if t == 0:
            total += coefficient * n
            continue
        where = _lookup(levels, items[:, list(positions)])
        if np.any(where < 0):  # pragma: no cover - Apriori guarantees every subset
            raise RuntimeError("a subset of a candidate itemset was not estimated")
        lookups.append((positions, where))
        if coefficient != 0.0:
            total += coefficient * levels[t - 1].counts[where].astype(np.float64)
    estimate: FloatArray = total / n
    return estimate, lookups


def _stderr(
    levels: Sequence[ItemsetLevel],
    support: FloatArray,
    lookups: list[tuple[tuple[int, ...], IntArray]],
    k: int,
    n: int,
    channel: BitChannel,
) -> FloatArray:
    """``sqrt((1/n)[Σ_{U⊆C} e0^(k-|U|) d^|U| s(U) - s(C)])`` with clipped plug-in supports."""
    e0 = channel.e0
    d = channel.e1 - e0
    own = np.clip(support, 0.0, 1.0)
    total = (e0**k) * np.ones_like(own) + (d**k) * own - own
    for positions, where in lookups:
        t = len(positions)
        total += (e0 ** (k - t)) * (d**t) * np.clip(levels[t - 1].support[where], 0.0, 1.0)
    stderr: FloatArray = np.sqrt(np.maximum(total, 0.0) / n)
    return stderr


def _level_one(items: IntArray, sums: IntArray, n: int, channel: BitChannel) -> ItemsetLevel:
    """Level 1 for the given (sorted) items, from the column sums."""
    support = (channel.a * sums[items].astype(np.float64) + channel.b * n) / n
    return ItemsetLevel(
        k=1,
        items=items.astype(np.int64)[:, None],
        keys=np.arange(items.size, dtype=np.int64),
        counts=sums[items].astype(np.int64),
        support=support,
        stderr=_stderr([], support, [], 1, n, channel),
    )


def _level_k(
    source: PackedSource,
    levels: Sequence[ItemsetLevel],
    candidates: _Candidates,
    n: int,
    channel: BitChannel,
    threshold: float | None,
    method: CountingMethod,
    progress: ProgressCallback | None,
) -> tuple[ItemsetLevel, str]:
    """Count, estimate and keep (``ŝ ≥ threshold``, or all when ``None``) one level."""
    k = candidates.k
    counts, rows_read, used = _count_level(source, levels[-1], candidates, method, progress)
    if rows_read != n:
        raise InvalidQueryError(
            f"the source yielded {rows_read} rows at level {k}, expected {n} "
            "(it must not change while it is mined)"
        )
    estimate, lookups = _estimate(levels, candidates.items, counts, n, channel)
    keep = np.ones(estimate.size, dtype=bool) if threshold is None else estimate >= threshold
    support = estimate[keep]
    kept_lookups = [(positions, where[keep]) for positions, where in lookups]
    singles = levels[0].items[:, 0]
    keys = candidates.prefix[keep] * singles.size + np.searchsorted(singles, candidates.last[keep])
    level = ItemsetLevel(
        k=k,
        items=candidates.items[keep],
        keys=keys.astype(np.int64),
        counts=counts[keep],
        support=support,
        stderr=_stderr(levels, support, kept_lookups, k, n, channel),
    )
    return level, used
