"""Counting the distorted baskets that hold every item of each candidate itemset.

The estimator (:mod:`.estimator`, after Rizvi and Haritsa, VLDB 2002, §4) needs the
all-ones counts ``N_T`` of the candidates, read from the packed (distorted) bits:

* Singletons come from the column sums ``N_j`` (the sufficient statistics,
  :func:`~ldp_shared.analyses.itemsets.bits.column_sums`).
* Pairs ``N_jk`` from one Gram product ``YᵀY`` of the distorted columns of the
  frequent items (BLAS, in float32 chunks, exact for counts below 2^24 per chunk).
* Longer itemsets from a vectorised pass over the packed bits in chunks: either a Gram
  product ``PᵀY`` of the prefixes' AND-columns with the last items' columns, or
  AND + popcount of column bitsets per candidate, whichever costs less.

Memory is bounded by the chunk size whatever the number of baskets: no dense matrix of
the whole data set is ever built.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Literal

import numpy as np

from ldp_shared.analyses.itemsets.apriori import ItemsetLevel, _Candidates
from ldp_shared.analyses.itemsets.bits import (
    DEFAULT_CHUNK_ROWS,
    ByteMatrix,
    IntArray,
    PackedSource,
    _bitsets,
    _columns,
    _popcount_rows,
)

CountingMethod = Literal["auto", "gram", "bitset"]

_ELEMENT_BUDGET = 1 << 22
"""Bits unpacked per sub-chunk (about 4 Mi uint8, 16 MiB as float32)."""

_WORD_BUDGET = 1 << 21
"""uint64 words of candidate bitsets held at once (16 MiB)."""

_GRAM_FACTOR = 2.0
"""Gram counting when (#prefixes × #last items) ≤ this × #candidates, else bitsets."""

ProgressCallback = Callable[[str], None]


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
