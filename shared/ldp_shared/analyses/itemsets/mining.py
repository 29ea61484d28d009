"""Mining the frequent itemsets of distorted baskets, and estimating given itemsets.

MASK (S. Rizvi and J. Haritsa, "Maintaining Data Privacy in Association Rule Mining",
VLDB 2002): the miner knows the channel and reconstructs the supports of itemsets from
the distorted bits, level by level, Apriori style (:mod:`.apriori`), counting each
level in one pass over the packed bits (:mod:`.counting`) and estimating the supports
and their standard errors with the paper's inverse channel (:mod:`.estimator`).
``support_reduction = r`` mines at ``min_support·(1-r)`` (the paper's coverage mode).
With ``BitChannel.exact()`` this is plain Apriori on the given baskets.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np

from ldp_shared.analyses.itemsets.apriori import ItemsetLevel, _Candidates, _candidates, _lookup
from ldp_shared.analyses.itemsets.bits import FloatArray, IntArray, PackedSource, column_sums
from ldp_shared.analyses.itemsets.channel import BitChannel
from ldp_shared.analyses.itemsets.counting import CountingMethod, ProgressCallback
from ldp_shared.analyses.itemsets.estimator import _level_k, _level_one
from ldp_shared.errors import InvalidQueryError
from ldp_shared.kernel import z_value
from ldp_shared.wire.itemsets import MAX_ITEMSET_SIZE, check_mining_query

DEFAULT_MAX_CANDIDATES = 5_000_000
"""Candidates of one level beyond which mining stops with :class:`InvalidQueryError`."""


@dataclass(frozen=True)
class LevelStats:
    """What mining one length cost: candidates counted, frequent found, how."""

    k: int
    candidates: int
    frequent: int
    method: str
    seconds: float


@dataclass(frozen=True, eq=False)
class FrequentItemsets:
    """Every itemset whose estimated support reaches ``threshold``, by length.

    ``levels[k-1]`` holds the itemsets of length ``k`` (possibly none). Items are
    column indices of the catalogue; map them to names with :func:`itemsets_table`
    or :meth:`named`.
    """

    n: int
    n_items: int
    channel: BitChannel
    min_support: float
    support_reduction: float
    threshold: float
    max_size: int | None
    confidence: float
    levels: tuple[ItemsetLevel, ...]
    stats: tuple[LevelStats, ...] = field(default=())

    def __len__(self) -> int:
        return sum(len(level) for level in self.levels)

    @property
    def by_length(self) -> dict[int, int]:
        """How many itemsets of each length (lengths without any are left out)."""
        return {level.k: len(level) for level in self.levels if len(level)}

    def positions(self, rows: IntArray) -> IntArray:
        """Positions of itemsets (``c × j``, increasing item indices) in level ``j``, or -1."""
        return _lookup(self.levels, np.asarray(rows, dtype=np.int64))

    def support_of(self, items: Iterable[int]) -> float | None:
        """The estimated support of one itemset, or ``None`` if it is not frequent."""
        row = np.asarray(sorted(set(items)), dtype=np.int64)[None, :]
        if row.shape[1] == 0 or row.shape[1] > len(self.levels):
            return None
        where = int(self.positions(row)[0])
        return None if where < 0 else float(self.levels[row.shape[1] - 1].support[where])

    def records(self) -> Iterator[tuple[tuple[int, ...], float, float]]:
        """``(items, support, stderr)`` for every itemset, by length then lexicographically."""
        for level in self.levels:
            for row, support, stderr in zip(
                level.items.tolist(), level.support.tolist(), level.stderr.tolist(), strict=True
            ):
                yield tuple(row), support, stderr

    def as_dict(self) -> dict[frozenset[int], float]:
        """``{frozenset(items): support}``."""
        return {frozenset(items): support for items, support, _ in self.records()}

    def named(self, names: Sequence[str]) -> dict[frozenset[str], float]:
        """``{frozenset(item names): support}``."""
        return {frozenset(names[i] for i in items): support for items, support, _ in self.records()}


def mine_frequent_itemsets(
    source: PackedSource,
    n_items: int,
    channel: BitChannel,
    min_support: float,
    *,
    max_size: int | None = None,
    support_reduction: float = 0.0,
    statistics: tuple[int, IntArray] | None = None,
    confidence: float = 0.95,
    method: CountingMethod = "auto",
    max_candidates: int = DEFAULT_MAX_CANDIDATES,
    progress: ProgressCallback | None = None,
) -> FrequentItemsets:
    """All itemsets with estimated support ``≥ min_support·(1 - support_reduction)``.

    ``source`` holds the packed (distorted) baskets over ``n_items`` items and is read
    once per length from 2 on; ``statistics = (n, S)`` (the sufficient statistics)
    saves the first pass. ``channel`` is the perturbation (``BitChannel.mask(p)``, or
    ``BitChannel.exact()`` for exact Apriori). ``method`` forces a counting method
    (tests); ``progress`` receives a short message per chunk (and may raise to cancel).

    Raises :class:`InvalidQueryError` for parameters outside their ranges (see
    :func:`check_mining_query`), an empty source, or a level with more than
    ``max_candidates`` candidates.
    """
    check_mining_query(min_support, max_size, support_reduction, 0.0, confidence)
    if method not in ("auto", "gram", "bitset"):
        raise InvalidQueryError(f"unknown counting method {method!r}")
    threshold = float(min_support) * (1.0 - float(support_reduction))
    started = time.perf_counter()
    if statistics is None and progress is not None:
        progress("level 1: summing the columns")
    n, sums = _read_sums(source, n_items, statistics)

    # level 1: the sufficient statistics
    estimate1 = (channel.a * sums.astype(np.float64) + channel.b * n) / n
    level1 = _level_one(np.flatnonzero(estimate1 >= threshold), sums, n, channel)
    levels: list[ItemsetLevel] = [level1]
    stats = [LevelStats(1, n_items, len(level1), "column sums", time.perf_counter() - started)]
    limit = MAX_ITEMSET_SIZE if max_size is None else max_size
    while levels[-1].k < limit and len(levels[-1]) >= 2:
        started = time.perf_counter()
        candidates = _candidates(levels, max_candidates)
        k = candidates.k
        if candidates.items.shape[0] == 0:
            break
        level, used = _level_k(source, levels, candidates, n, channel, threshold, method, progress)
        levels.append(level)
        stats.append(
            LevelStats(
                k, int(candidates.items.shape[0]), len(level), used, time.perf_counter() - started
            )
        )
    while len(levels) > 1 and len(levels[-1]) == 0:
        levels.pop()
    return FrequentItemsets(
        n=n,
        n_items=n_items,
        channel=channel,
        min_support=float(min_support),
        support_reduction=float(support_reduction),
        threshold=threshold,
        max_size=max_size,
        confidence=float(confidence),
        levels=tuple(levels),
        stats=tuple(stats),
    )


@dataclass(frozen=True, eq=False)
class ItemsetSupports:
    """Estimates for a given list of itemsets, in the order they were asked for."""

    itemsets: list[tuple[int, ...]]
    support: FloatArray
    stderr: FloatArray
    n: int


def _read_sums(
    source: PackedSource, n_items: int, given: tuple[int, IntArray] | None
) -> tuple[int, IntArray]:
    if n_items < 1 or n_items > 8 * source.row_bytes:
        raise InvalidQueryError(f"{n_items} items do not fit in {source.row_bytes} bytes per row")
    if given is None:
        n, sums = column_sums(source, n_items)
    else:
        n, sums = given[0], np.asarray(given[1], dtype=np.int64)
        if sums.shape != (n_items,):
            raise InvalidQueryError(f"column sums must hold {n_items} counts, got {sums.shape}")
    if n != source.n_rows:
        raise InvalidQueryError(f"the column sums count {n} rows, the source holds {source.n_rows}")
    if n <= 0:
        raise InvalidQueryError("no baskets to mine")
    return n, sums


def estimate_itemsets(
    source: PackedSource,
    n_items: int,
    channel: BitChannel,
    itemsets: Sequence[Iterable[int]],
    *,
    statistics: tuple[int, IntArray] | None = None,
    method: CountingMethod = "auto",
) -> ItemsetSupports:
    """Unbiased supports and standard errors of the given itemsets, frequent or not.

    Counts every subset of the itemsets (their downward closure), one pass per length,
    with the same estimator as :func:`mine_frequent_itemsets`.
    """
    wanted: list[tuple[int, ...]] = []
    for itemset in itemsets:
        row = tuple(sorted({int(i) for i in itemset}))
        if not row or not 1 <= len(row) <= MAX_ITEMSET_SIZE:
            raise InvalidQueryError(
                f"an itemset needs 1 to {MAX_ITEMSET_SIZE} distinct items, got {row!r}"
            )
        if row[0] < 0 or row[-1] >= n_items:
            raise InvalidQueryError(f"itemset {row!r} names an item outside [0, {n_items})")
        wanted.append(row)
    n, sums = _read_sums(source, n_items, statistics)
    longest = max((len(row) for row in wanted), default=0)
    closure: list[set[tuple[int, ...]]] = [set() for _ in range(longest)]
    for row in set(wanted):
        for j in range(1, len(row) + 1):
            closure[j - 1].update(combinations(row, j))
    levels: list[ItemsetLevel] = []
    for j, members in enumerate(closure, start=1):
        rows = np.array(sorted(members), dtype=np.int64).reshape(-1, j)
        if j == 1:
            levels.append(_level_one(rows[:, 0], sums, n, channel))
            continue
        candidates = _Candidates(
            k=j, items=rows, prefix=_lookup(levels, rows[:, :-1]), last=rows[:, -1].copy()
        )
        level, _ = _level_k(source, levels, candidates, n, channel, None, method, None)
        levels.append(level)
    support = np.zeros(len(wanted), dtype=np.float64)
    stderr = np.zeros(len(wanted), dtype=np.float64)
    for j in range(1, longest + 1):
        picked = [i for i, row in enumerate(wanted) if len(row) == j]
        if picked:
            where = _lookup(levels, np.array([wanted[i] for i in picked], dtype=np.int64))
            support[picked] = levels[j - 1].support[where]
            stderr[picked] = levels[j - 1].stderr[where]
    return ItemsetSupports(itemsets=wanted, support=support, stderr=stderr, n=n)


def interval(result: FrequentItemsets, level: ItemsetLevel) -> tuple[FloatArray, FloatArray]:
    """Normal intervals ``ŝ ± z·se`` at the result's confidence level, clipped to [0, 1].

    A support lies in [0, 1], so the clipped interval covers it exactly when the
    unclipped one does: clipping costs no coverage.
    """
    z = z_value(result.confidence)
    low: FloatArray = np.clip(level.support - z * level.stderr, 0.0, 1.0)
    high: FloatArray = np.clip(level.support + z * level.stderr, 0.0, 1.0)
    return low, high
