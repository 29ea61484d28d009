"""Apriori's levels: the frequent itemsets of one length, lookups, join and prune.

The miner (MASK, Rizvi and Haritsa, VLDB 2002, §4) goes level by level, as Apriori
does: the candidates of length ``k`` are the joins of two frequent itemsets of length
``k-1`` sharing their first ``k-2`` items, kept only if every subset of length ``k-1``
is frequent. A level stores its itemsets sorted lexicographically with integer keys
(``prefix position · f + rank of the last item``), so that looking an itemset up is a
binary search per length.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ldp_shared.analyses.itemsets.bits import FloatArray, IntArray
from ldp_shared.errors import InvalidQueryError


@dataclass(frozen=True, eq=False)
class ItemsetLevel:
    """The frequent itemsets of one length ``k``, sorted lexicographically.

    ``items[i]`` are the (increasing) item indices of itemset ``i``; ``counts[i]`` the
    number of *distorted* baskets holding all of them (``N_T``); ``support[i]`` the
    unbiased estimate ``ŝ`` and ``stderr[i]`` its standard error. ``keys`` index the
    level for lookups (``prefix position · f + rank of the last item``).
    """

    k: int
    items: IntArray
    keys: IntArray
    counts: IntArray
    support: FloatArray
    stderr: FloatArray

    def __len__(self) -> int:
        return int(self.items.shape[0])


def _lookup(levels: Sequence[ItemsetLevel], rows: IntArray) -> IntArray:
    """Positions of the itemsets ``rows`` (``c × j``, increasing items) in level ``j``.

    -1 where an itemset is not in the level.
    """
    j = rows.shape[1]
    if j == 0 or j > len(levels) or len(levels[j - 1]) == 0 or len(levels[0]) == 0:
        return np.full(rows.shape[0], -1, dtype=np.int64)
    singles = levels[0].items[:, 0]
    last = rows[:, -1]
    rank = np.searchsorted(singles, last)
    rank_ok = rank < singles.size
    rank_ok[rank_ok] = singles[rank[rank_ok]] == last[rank_ok]
    if j == 1:
        return np.where(rank_ok, rank, -1).astype(np.int64)
    prefix = _lookup(levels, rows[:, :-1])
    ok = rank_ok & (prefix >= 0)
    keys = prefix * singles.size + rank
    level = levels[j - 1]
    position = np.searchsorted(level.keys, keys)
    inside = ok & (position < level.keys.size)
    found = np.zeros(rows.shape[0], dtype=bool)
    found[inside] = level.keys[position[inside]] == keys[inside]
    return np.where(found, position, -1).astype(np.int64)


def _join(previous: ItemsetLevel) -> tuple[IntArray, IntArray]:
    """Apriori join: pairs ``(left, right)`` of level rows sharing their first ``k-2`` items.

    The candidate is ``items[left] + items[right][-1]``; the rows are sorted, so the
    candidates come out sorted lexicographically.
    """
    f = len(previous)
    if f < 2:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    if previous.k == 1:
        left, right = np.triu_indices(f, 1)
        return left.astype(np.int64), right.astype(np.int64)
    prefix = previous.items[:, :-1]
    change = np.any(prefix[1:] != prefix[:-1], axis=1)
    starts = np.flatnonzero(np.concatenate([[True], change]))
    ends = np.concatenate([starts[1:], [f]])
    group = np.cumsum(np.concatenate([[0], change.astype(np.int64)]))
    partners = ends[group] - np.arange(f) - 1
    total = int(partners.sum())
    left = np.repeat(np.arange(f, dtype=np.int64), partners)
    before = np.cumsum(partners) - partners
    right = left + 1 + (np.arange(total, dtype=np.int64) - np.repeat(before, partners))
    return left, right


@dataclass(frozen=True, eq=False)
class _Candidates:
    """The candidates of one level: prefix position in level ``k-1`` and last item."""

    k: int
    items: IntArray
    prefix: IntArray
    last: IntArray


def _candidates(levels: Sequence[ItemsetLevel], max_candidates: int) -> _Candidates:
    previous = levels[-1]
    k = previous.k + 1
    left, right = _join(previous)
    if left.size > max_candidates:
        raise InvalidQueryError(
            f"level {k} would count {left.size:,} candidate itemsets (more than "
            f"{max_candidates:,}); raise min_support or lower max_size"
        )
    items = np.concatenate([previous.items[left], previous.items[right][:, -1:]], axis=1)
    keep = np.ones(left.size, dtype=bool)
    for drop in range(k - 2):  # dropping position k-2 or k-1 gives the joined rows
        subset = np.delete(items[keep], drop, axis=1)
        keep[np.flatnonzero(keep)] = _lookup(levels, subset) >= 0
    return _Candidates(k=k, items=items[keep], prefix=left[keep], last=items[keep][:, -1].copy())


def _subset_masks(k: int) -> list[tuple[int, ...]]:
    """Every subset of ``range(k)`` as a tuple of positions (the empty one first)."""
    return [tuple(i for i in range(k) if mask >> i & 1) for mask in range(1 << k)]
