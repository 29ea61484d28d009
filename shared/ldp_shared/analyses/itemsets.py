"""Frequent itemsets and association rules from MASK-distorted baskets.

The method is MASK (S. Rizvi and J. Haritsa, "Maintaining Data Privacy in Association
Rule Mining", VLDB 2002): every bit of a basket's ``m``-bit vector is kept with
probability ``p`` and flipped with ``1-p``; the miner knows ``p`` and reconstructs the
supports of itemsets from the distorted bits, level by level, Apriori style.

Estimator (DESIGN.md §3). A true bit ``x`` is reported as ``y`` with ``P(y=1|x=1) = p``
and ``P(y=1|x=0) = q`` (MASK: ``q = 1-p``). The debiased bit ``z = (y-q)/(p-q) = a·y + b``
with ``a = 1/(p-q)`` and ``b = -q/(p-q)`` has ``E[z] = x``, and the bits of a basket are
perturbed independently, so for an itemset ``C`` of ``k`` items

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

* Singletons come from the column sums ``N_j`` (the sufficient statistics).
* Pairs ``N_jk`` from one Gram product ``YᵀY`` of the distorted columns of the
  frequent items (BLAS, in float32 chunks, exact for counts below 2^24 per chunk).
* Longer itemsets from a vectorised pass over the packed bits in chunks: either a Gram
  product ``PᵀY`` of the prefixes' AND-columns with the last items' columns, or
  AND + popcount of column bitsets per candidate, whichever costs less.

Memory is bounded by the chunk size whatever the number of baskets: no dense matrix of
the whole data set is ever built.

Standard error. Given the true baskets, the products of different baskets are
independent, and within a basket ``E[z_j² | x_j] = e0 + d·x_j`` with
``e0 = q(1-q)/(p-q)²`` and ``e1 = [p(1-q)² + (1-p)q²]/(p-q)²``, ``d = e1 - e0`` (``d = 1``
for MASK). Hence

    Var ŝ(C) = (1/n) [ Σ_{U⊆C} e0^(k-|U|) d^|U| s(U) - s(C) ],

estimated by plugging in the (clipped) estimates of the subsets, all of which the
Apriori order has already estimated. For ``k = 1`` this is the frequency variance of
:mod:`ldp_shared.kernel`.

Evaluation (:func:`evaluate`) uses the paper's metrics (§5): the support error
``ρ = (1/|F∩R|) Σ |ŝ - s|/s · 100`` over the correctly identified itemsets, and the
identity errors ``σ+ = |R \\ F|/|F| · 100`` (false positives) and
``σ- = |F \\ R|/|F| · 100`` (false negatives), per itemset length, where ``F`` are the
true frequent itemsets (Apriori on the undistorted baskets) and ``R`` the reported ones.
``support_reduction = r`` mines at ``min_support·(1-r)`` (the paper's coverage mode).

With ``p = 1, q = 0`` (:meth:`BitChannel.exact`) the same code is plain Apriori on the
given baskets, which is how the tests and the benchmarks compute the truth.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Literal, Protocol

import numpy as np
from numpy.typing import NDArray

from ldp_shared.errors import ConfigurationError, InvalidQueryError
from ldp_shared.itemset_wire import MAX_ITEMSET_SIZE, check_mining_query
from ldp_shared.kernel import z_value

IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]
ByteMatrix = NDArray[np.uint8]

CountingMethod = Literal["auto", "gram", "bitset"]

DEFAULT_MAX_CANDIDATES = 5_000_000
"""Candidates of one level beyond which mining stops with :class:`InvalidQueryError`."""

DEFAULT_CHUNK_ROWS = 65_536
"""Rows of packed bits per chunk of :class:`PackedBits` (below 2^24: float32 counts stay exact)."""

_ELEMENT_BUDGET = 1 << 22
"""Bits unpacked per sub-chunk (about 4 Mi uint8, 16 MiB as float32)."""

_WORD_BUDGET = 1 << 21
"""uint64 words of candidate bitsets held at once (16 MiB)."""

_GRAM_FACTOR = 2.0
"""Gram counting when (#prefixes × #last items) ≤ this × #candidates, else bitsets."""

ProgressCallback = Callable[[str], None]


# ----------------------------------------------------------------------------- channel


@dataclass(frozen=True)
class BitChannel:
    """The per-bit channel ``P(y=1|x=1) = p``, ``P(y=1|x=0) = q``, ``0 ≤ q < p ≤ 1``.

    MASK with keep probability ``p`` is ``BitChannel.mask(p)`` (``q = 1-p``);
    ``BitChannel.exact()`` (``p = 1, q = 0``) is no noise at all, for exact tests and for
    the truth an evaluation compares with.
    """

    p: float
    q: float

    def __post_init__(self) -> None:
        p, q = float(self.p), float(self.q)
        if not (math.isfinite(p) and math.isfinite(q) and 0.0 <= q < p <= 1.0):
            raise ConfigurationError(f"a bit channel needs 0 <= q < p <= 1, got p={p!r}, q={q!r}")
        object.__setattr__(self, "p", p)
        object.__setattr__(self, "q", q)

    @classmethod
    def mask(cls, keep_probability: float) -> BitChannel:
        """MASK's channel: keep each bit with probability ``p`` in (0.5, 1), flip it otherwise."""
        kp = float(keep_probability)
        if not 0.5 < kp < 1.0:
            raise ConfigurationError(f"MASK keep probability p must lie in (0.5, 1), got {kp!r}")
        return cls(kp, 1.0 - kp)

    @classmethod
    def exact(cls) -> BitChannel:
        """No noise (``p = 1, q = 0``): the estimator becomes exact counting."""
        return cls(1.0, 0.0)

    @property
    def a(self) -> float:
        """Slope of the debiased bit ``z = a·y + b``: ``1/(p-q)``."""
        return 1.0 / (self.p - self.q)

    @property
    def b(self) -> float:
        """Offset of the debiased bit: ``-q/(p-q)``."""
        return -self.q / (self.p - self.q)

    @property
    def e0(self) -> float:
        """``E[z² | x=0] = q(1-q)/(p-q)²``."""
        return self.q * (1.0 - self.q) / (self.p - self.q) ** 2

    @property
    def e1(self) -> float:
        """``E[z² | x=1] = [p(1-q)² + (1-p)q²]/(p-q)²``."""
        return (self.p * (1.0 - self.q) ** 2 + (1.0 - self.p) * self.q**2) / (self.p - self.q) ** 2


# ----------------------------------------------------------------------------- sources


class PackedSource(Protocol):
    """Packed basket bits that can be read more than once, chunk by chunk.

    Each chunk is a ``rows × row_bytes`` uint8 matrix; bit ``j`` of a row (item ``j``)
    is bit ``7 - j mod 8`` of byte ``j // 8`` (numpy's ``packbits`` order, the wire
    format's). Every call of :meth:`chunks` must yield the same ``n_rows`` rows.
    """

    @property
    def n_rows(self) -> int: ...

    @property
    def row_bytes(self) -> int: ...

    def chunks(self) -> Iterable[ByteMatrix]: ...


@dataclass(frozen=True, eq=False)
class PackedBits:
    """An in-memory ``n × row_bytes`` matrix of packed bits, read in chunks."""

    data: ByteMatrix
    chunk_rows: int = DEFAULT_CHUNK_ROWS

    def __post_init__(self) -> None:
        data = np.asarray(self.data)
        if data.dtype != np.uint8 or data.ndim != 2:
            raise InvalidQueryError("packed bits must be a 2-d uint8 matrix")
        if self.chunk_rows < 1:
            raise InvalidQueryError("chunk_rows must be at least 1")
        object.__setattr__(self, "data", data)

    @classmethod
    def from_bool(cls, matrix: NDArray[Any], chunk_rows: int = DEFAULT_CHUNK_ROWS) -> PackedBits:
        """Pack an ``n × m`` 0/1 matrix (rows are baskets, columns items)."""
        m = np.asarray(matrix)
        if m.ndim != 2:
            raise InvalidQueryError("baskets must be an n x m matrix")
        return cls(np.packbits(m.astype(bool, copy=False), axis=1), chunk_rows)

    @property
    def n_rows(self) -> int:
        return int(self.data.shape[0])

    @property
    def row_bytes(self) -> int:
        return int(self.data.shape[1])

    def chunks(self) -> Iterator[ByteMatrix]:
        for start in range(0, self.n_rows, self.chunk_rows):
            yield self.data[start : start + self.chunk_rows]


_BIT_TABLE = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).astype(np.int64)
"""``_BIT_TABLE[v, i]``: bit ``i`` (most significant first) of the byte value ``v``."""


def column_sums(source: PackedSource, n_items: int) -> tuple[int, IntArray]:
    """``(n, S)``: the number of rows and the per-item number of set bits.

    Unpacks 255 rows at a time and adds them in uint8 (255 ones cannot overflow it),
    then into int64: one pass over the bits, no per-bit Python work.
    """
    width = source.row_bytes
    if n_items > 8 * width:
        raise InvalidQueryError(f"{n_items} items do not fit in {width} bytes per row")
    sums = np.zeros(8 * width, dtype=np.int64)
    n = 0
    for chunk in source.chunks():
        n += chunk.shape[0]
        for start in range(0, chunk.shape[0], 255):
            bits = np.unpackbits(chunk[start : start + 255], axis=1)
            sums += np.add.reduce(bits, axis=0, dtype=np.uint8)
    return n, sums[:n_items]


def _columns(chunk: ByteMatrix, items: IntArray) -> ByteMatrix:
    """The 0/1 columns ``items`` (sorted, distinct) of a packed chunk, ``rows × len(items)``."""
    byte_index = items >> 3
    unique_bytes, inverse = np.unique(byte_index, return_inverse=True)
    bits = np.unpackbits(np.ascontiguousarray(chunk[:, unique_bytes]), axis=1)
    selected: ByteMatrix = bits[:, inverse * 8 + (items & 7)]
    return selected


if hasattr(np, "bitwise_count"):

    def _popcount_rows(words: NDArray[np.uint64]) -> IntArray:
        counts: IntArray = np.bitwise_count(words).sum(axis=1, dtype=np.int64)
        return counts

else:  # pragma: no cover - numpy < 2.0
    _POP8 = _BIT_TABLE.sum(axis=1).astype(np.uint8)

    def _popcount_rows(words: NDArray[np.uint64]) -> IntArray:
        as_bytes = words.view(np.uint8).reshape(words.shape[0], -1)
        counts: IntArray = _POP8[as_bytes].sum(axis=1, dtype=np.int64)
        return counts


def _bitsets(columns: ByteMatrix) -> NDArray[np.uint64]:
    """Column bitsets: row ``i`` of the result packs column ``i`` of a 0/1 matrix."""
    packed = np.packbits(columns, axis=0)  # ceil(r/8) × c, rows packed per column
    pad = (-packed.shape[0]) % 8
    if pad:
        packed = np.concatenate([packed, np.zeros((pad, packed.shape[1]), np.uint8)], axis=0)
    words: NDArray[np.uint64] = np.ascontiguousarray(packed.T).view(np.uint64)
    return words


# ----------------------------------------------------------------------------- levels


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


# ----------------------------------------------------------------------------- counting


def _sub_chunks(source: PackedSource, rows: int) -> Iterator[ByteMatrix]:
    for chunk in source.chunks():
        for start in range(0, chunk.shape[0], rows):
            yield chunk[start : start + rows]


def _rows_for(columns: int) -> int:
    rows = _ELEMENT_BUDGET // max(columns, 1)
    return int(min(DEFAULT_CHUNK_ROWS, max(512, rows // 64 * 64)))


def _count_level(
    source: PackedSource,
    previous: ItemsetLevel,
    candidates: _Candidates,
    method: CountingMethod,
    progress: ProgressCallback | None,
) -> tuple[IntArray, int, str]:
    """``N_C`` (distorted counts) of every candidate, in one pass; and the rows read."""
    prefix_positions, prefix_of = np.unique(candidates.prefix, return_inverse=True)
    last_items, last_of = np.unique(candidates.last, return_inverse=True)
    prefix_items = previous.items[prefix_positions]  # u × (k-1)
    needed = np.unique(np.concatenate([prefix_items.ravel(), last_items]))
    prefix_cols = np.searchsorted(needed, prefix_items)
    last_cols = np.searchsorted(needed, last_items)
    n_candidates = candidates.items.shape[0]
    gram_cost = float(prefix_positions.size) * float(last_items.size)
    chosen = method
    if method == "auto":
        chosen = "gram" if gram_cost <= _GRAM_FACTOR * n_candidates else "bitset"
    k = candidates.k
    counts = np.zeros(n_candidates, dtype=np.int64)
    rows_read = 0
    if chosen == "gram" and k == 2:
        # pairs: one symmetric Gram product YᵀY of the frequent items' columns (the same
        # buffer on both sides lets BLAS use a rank-k update, half the work of a product)
        gram = np.zeros((needed.size, needed.size), dtype=np.int64)
        for chunk in _sub_chunks(source, _rows_for(2 * needed.size)):
            dense = _columns(chunk, needed).astype(np.float32)
            rows_read += dense.shape[0]
            gram += np.rint(dense.T @ dense).astype(np.int64)
            if progress is not None:
                progress(f"level {k}: counted {n_candidates:,} candidates over {rows_read:,} rows")
        counts = gram[prefix_cols[prefix_of, 0], last_cols[last_of]]
    elif chosen == "gram":
        gram = np.zeros((prefix_positions.size, last_items.size), dtype=np.int64)
        width = needed.size + prefix_positions.size + last_items.size
        for chunk in _sub_chunks(source, _rows_for(width)):
            y = _columns(chunk, needed)
            rows_read += y.shape[0]
            prefix_and = y[:, prefix_cols[:, 0]]
            for j in range(1, k - 1):
                prefix_and = prefix_and & y[:, prefix_cols[:, j]]
            product = prefix_and.astype(np.float32).T @ y[:, last_cols].astype(np.float32)
            gram += np.rint(product).astype(np.int64)
            if progress is not None:
                progress(f"level {k}: counted {n_candidates:,} candidates over {rows_read:,} rows")
        counts = gram[prefix_of, last_of]
    else:
        for chunk in _sub_chunks(source, _rows_for(needed.size)):
            y = _columns(chunk, needed)
            rows_read += y.shape[0]
            bits = _bitsets(y)  # needed × words
            prefix_bits = bits[prefix_cols[:, 0]]
            for j in range(1, k - 1):
                prefix_bits = prefix_bits & bits[prefix_cols[:, j]]
            block = max(1, _WORD_BUDGET // max(bits.shape[1], 1))
            for start in range(0, n_candidates, block):
                stop = min(start + block, n_candidates)
                joint = prefix_bits[prefix_of[start:stop]] & bits[last_cols[last_of[start:stop]]]
                counts[start:stop] += _popcount_rows(joint)
            if progress is not None:
                progress(f"level {k}: counted {n_candidates:,} candidates over {rows_read:,} rows")
    return counts, rows_read, chosen


def _subset_masks(k: int) -> list[tuple[int, ...]]:
    """Every subset of ``range(k)`` as a tuple of positions (the empty one first)."""
    return [tuple(i for i in range(k) if mask >> i & 1) for mask in range(1 << k)]


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


# ----------------------------------------------------------------------------- mining


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
    """Normal intervals ``ŝ ± z·se`` at the result's confidence level."""
    z = z_value(result.confidence)
    low: FloatArray = level.support - z * level.stderr
    high: FloatArray = level.support + z * level.stderr
    return low, high


# ----------------------------------------------------------------------------- rules


@dataclass(frozen=True)
class AssociationRule:
    """``antecedent → consequent`` with the estimated support of their union.

    ``confidence = ŝ(A ∪ C)/ŝ(A)`` and ``lift = confidence/ŝ(C)`` (as mlxtend's
    ``association_rules`` computes them from the same supports).
    """

    antecedent: tuple[int, ...]
    consequent: tuple[int, ...]
    support: float
    confidence: float
    lift: float
    antecedent_support: float
    consequent_support: float


def association_rules(
    result: FrequentItemsets, min_confidence: float = 0.0, max_rules: int | None = None
) -> list[AssociationRule]:
    """Every rule ``A → C`` (``A``, ``C`` non-empty, disjoint, ``A ∪ C`` frequent) with
    ``confidence ≥ min_confidence``, strongest first (confidence, then support).

    With ``max_rules`` only the first ``max_rules`` of that order are returned.
    """
    check_mining_query(result.min_support, None, 0.0, min_confidence, result.confidence)
    found: list[AssociationRule] = []
    for level in result.levels[1:]:
        if len(level) == 0:
            continue
        k = level.k
        masks = _subset_masks(k)[1:-1]
        for positions in masks:
            rest = [i for i in range(k) if i not in positions]
            antecedent = level.items[:, list(positions)]
            consequent = level.items[:, rest]
            a_support = result.levels[len(positions) - 1].support[result.positions(antecedent)]
            c_support = result.levels[len(rest) - 1].support[result.positions(consequent)]
            with np.errstate(divide="ignore", invalid="ignore"):
                conf = level.support / a_support
                lift = conf / c_support
            for i in np.flatnonzero(conf >= min_confidence).tolist():
                found.append(
                    AssociationRule(
                        antecedent=tuple(antecedent[i].tolist()),
                        consequent=tuple(consequent[i].tolist()),
                        support=float(level.support[i]),
                        confidence=float(conf[i]),
                        lift=float(lift[i]),
                        antecedent_support=float(a_support[i]),
                        consequent_support=float(c_support[i]),
                    )
                )
    found.sort(key=lambda r: (-r.confidence, -r.support, r.antecedent, r.consequent))
    return found if max_rules is None else found[:max_rules]


def itemsets_table(
    result: FrequentItemsets, names: Sequence[str] | None = None
) -> dict[str, list[Any]]:
    """The itemsets as the columns mlxtend's ``association_rules`` accepts.

    ``{"support": [...], "itemsets": [frozenset, ...]}``: ``pandas.DataFrame(table)`` is
    the data frame ``mlxtend.frequent_patterns.apriori`` returns (items as names when
    ``names`` is given, else as indices), so
    ``association_rules(DataFrame(table), num_itemsets=result.n)`` works on it. The
    supports are the raw unbiased estimates.
    """
    supports: list[float] = []
    itemsets: list[frozenset[Any]] = []
    for items, support, _ in result.records():
        supports.append(support)
        itemsets.append(frozenset(items if names is None else (names[i] for i in items)))
    return {"support": supports, "itemsets": itemsets}


# ----------------------------------------------------------------------------- evaluation


@dataclass(frozen=True)
class LengthAccuracy:
    """The paper's metrics for the itemsets of one length (percentages).

    ``rho`` is ``None`` when no itemset was identified correctly; ``sigma_plus`` and
    ``sigma_minus`` are ``None`` when there is no true frequent itemset of that length.
    """

    length: int
    true_frequent: int
    reported: int
    correct: int
    rho: float | None
    sigma_plus: float | None
    sigma_minus: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "rho": self.rho,
            "sigma_plus": self.sigma_plus,
            "sigma_minus": self.sigma_minus,
            "true_frequent": self.true_frequent,
            "reported": self.reported,
            "correct": self.correct,
        }


def evaluate(estimate: FrequentItemsets, truth: FrequentItemsets) -> list[LengthAccuracy]:
    """Support error ρ and identity errors σ+, σ- per length (Rizvi and Haritsa §5).

    ``truth`` is Apriori on the undistorted baskets (``BitChannel.exact()``) at the
    estimate's ``min_support`` without reduction; the estimate reports every itemset at
    or above its (possibly reduced) threshold. ``truth`` must not be limited to shorter
    itemsets than ``estimate``.
    """
    if truth.threshold != estimate.min_support:
        raise InvalidQueryError(
            f"the truth was mined at {truth.threshold}, the estimate's min_support is "
            f"{estimate.min_support}"
        )
    if truth.max_size is not None and (
        estimate.max_size is None or estimate.max_size > truth.max_size
    ):
        raise InvalidQueryError("the truth must be mined up to the estimate's max_size")
    return evaluate_supports(estimate.as_dict(), truth.as_dict())


def evaluate_supports(
    reported: Mapping[frozenset[Any], float], true: Mapping[frozenset[Any], float]
) -> list[LengthAccuracy]:
    """ρ, σ+ and σ- per length from ``{itemset: support}`` mappings (any item labels).

    ``true`` holds the true frequent itemsets with their true supports, ``reported``
    the reported ones with their estimates (see :func:`evaluate`).
    """
    true_sets: dict[int, dict[frozenset[Any], float]] = {}
    for itemset, support in true.items():
        true_sets.setdefault(len(itemset), {})[itemset] = support
    found: dict[int, dict[frozenset[Any], float]] = {}
    for itemset, support in reported.items():
        found.setdefault(len(itemset), {})[itemset] = support
    out: list[LengthAccuracy] = []
    for k in sorted(set(true_sets) | set(found)):
        f = true_sets.get(k, {})
        r = found.get(k, {})
        correct = [itemset for itemset in r if itemset in f]
        rho = (
            100.0 * float(np.mean([abs(r[i] - f[i]) / f[i] for i in correct])) if correct else None
        )
        plus = 100.0 * (len(r) - len(correct)) / len(f) if f else None
        minus = 100.0 * (len(f) - len(correct)) / len(f) if f else None
        out.append(LengthAccuracy(k, len(f), len(r), len(correct), rho, plus, minus))
    return out


def accuracy_json(metrics: Sequence[LengthAccuracy]) -> dict[str, dict[str, Any]]:
    """``{"1": {"rho": ..., "sigma_plus": ..., "sigma_minus": ..., ...}, ...}``."""
    return {str(m.length): m.to_json() for m in metrics}
