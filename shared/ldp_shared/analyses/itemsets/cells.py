"""The joint cells of an itemset, and supports made consistent by projecting them.

For an itemset ``U`` of ``k`` items, a basket falls in one of ``2^k`` cells: the subset
``S ⊆ U`` of its items that it holds. With ``f(S)`` the share of baskets in cell ``S``,
the supports are the superset sums ``s(T) = Σ_{S⊇T} f(S)`` (``s(∅) = 1``) and, by Möbius
inversion, ``f(S) = Σ_{T⊇S} (−1)^{|T∖S|} s(T)``. Plugging in the unbiased supports
``ŝ(T)`` of every subset (all estimated by Apriori's order) gives unbiased cell estimates
``f̂`` that sum to 1: MASK's reconstruction of the ``2^k`` pattern counts,
``C^T = M^{-1} C^D`` over the itemset's patterns (Rizvi and Haritsa, VLDB 2002, §4). They
can be negative, and then the supports they imply break their order: ``ŝ(A∪C) > ŝ(A)``
gives a rule confidence above 1.

The consistent estimate is the Euclidean projection ``f̃`` of ``f̂`` onto the probability
simplex (the post-processing of Wang, Lopuhaä-Zwakenberg, Li, Škorić and Li, NDSS 2020,
for frequency estimates; sort-based, Duchi et al., ICML 2008), and ``s̃(T) = Σ_{S⊇T} f̃(S)``.
Every ``s̃`` lies in ``[0, 1]`` and ``s̃(A∪C) ≤ min(s̃(A), s̃(C))``, so a confidence
``s̃(A∪C)/s̃(A)`` lies in ``[0, 1]`` and a lift is ``≥ 0``. The simplex is convex and
holds the true ``f``, so the projection never moves the estimate farther from it
(``‖f̃ − f‖ ≤ ‖f̂ − f‖``): it stays consistent, and it is the identity whenever ``f̂`` is
already a distribution. Its price is a bias near the boundary (a cell of true frequency
0 is estimated ``≥ 0``); ``bench/itemset_rules.py`` measures it.

Cells are indexed by bit masks over the itemset's positions: column ``m`` of a matrix is
the subset holding the items at the positions of the set bits of ``m``.
"""

from __future__ import annotations

import numpy as np

from ldp_shared.analyses.itemsets.apriori import ItemsetLevel, _subset_masks
from ldp_shared.analyses.itemsets.bits import FloatArray, IntArray
from ldp_shared.analyses.itemsets.mining import FrequentItemsets
from ldp_shared.analyses.postprocess import project_rows_to_simplex


def subset_supports(result: FrequentItemsets, items: IntArray) -> FloatArray:
    """``ŝ(T)`` for every subset ``T`` of each row of ``items`` (``r × 2^k``, ``ŝ(∅) = 1``).

    Every subset of a frequent itemset is frequent (Apriori), so all of them are found.
    """
    k = items.shape[1]
    supports = np.ones((items.shape[0], 1 << k), dtype=np.float64)
    for mask, positions in enumerate(_subset_masks(k)):
        if positions:
            level = result.levels[len(positions) - 1]
            supports[:, mask] = level.support[result.positions(items[:, list(positions)])]
    return supports


def _superset_sums(values: FloatArray, sign: float) -> FloatArray:
    """``g(T) = Σ_{S⊇T} sign^{|S∖T|} values(S)`` per row: the zeta transform over
    supersets (``sign = 1``, cells to supports) or its Möbius inverse (``sign = −1``)."""
    rows, width = values.shape
    k = width.bit_length() - 1
    cube = values.reshape((rows,) + (2,) * k).copy()  # one axis per bit of the mask
    for axis in range(1, k + 1):
        bit = np.moveaxis(cube, axis, 0)  # a view: [0] lacks the bit, [1] holds it
        bit[0] += sign * bit[1]
    summed: FloatArray = cube.reshape(rows, width)
    return summed


def cells_from_supports(supports: FloatArray) -> FloatArray:
    """The cell frequencies ``f(S) = Σ_{T⊇S} (−1)^{|T∖S|} s(T)`` of subset supports."""
    return _superset_sums(supports, -1.0)


def supports_from_cells(cells: FloatArray) -> FloatArray:
    """The subset supports ``s(T) = Σ_{S⊇T} f(S)`` of cell frequencies."""
    return _superset_sums(cells, 1.0)


def consistent_supports(result: FrequentItemsets, level: ItemsetLevel) -> FloatArray:
    """``s̃(T)`` for every subset of every itemset of ``level`` (``r × 2^k``): the supports
    of the itemset's cells projected onto the simplex (see the module docstring)."""
    cells = cells_from_supports(subset_supports(result, level.items))
    return supports_from_cells(project_rows_to_simplex(cells))
