"""Frequent itemsets and association rules from MASK-distorted baskets.

The method is MASK (S. Rizvi and J. Haritsa, "Maintaining Data Privacy in Association
Rule Mining", VLDB 2002): every bit of a basket's ``m``-bit vector is kept with
probability ``p`` and flipped with ``1-p``; the miner knows ``p`` and reconstructs the
supports of itemsets from the distorted bits, level by level, Apriori style.

The package, in the order the miner uses it:

* :mod:`.channel`: :class:`BitChannel`, the per-bit channel and its debiased bit.
* :mod:`.bits`: :class:`PackedSource` / :class:`PackedBits`, the packed baskets read in
  chunks, and :func:`column_sums` (level 1).
* :mod:`.apriori`: :class:`ItemsetLevel`, lookups, the Apriori join and prune.
* :mod:`.counting`: the all-ones counts of a level's candidates in one pass (Gram
  products for pairs, Gram products or bitsets for longer itemsets).
* :mod:`.estimator`: the paper's unbiased supports (§4) and their standard errors.
* :mod:`.mining`: :func:`mine_frequent_itemsets`, :func:`estimate_itemsets`,
  :func:`interval`.
* :mod:`.cells`: an itemset's ``2^k`` cell frequencies, projected onto the simplex
  (:func:`consistent_supports`), from which the rules take their supports.
* :mod:`.rules`: :func:`association_rules` (confidence in [0, 1], lift ≥ 0, clipped
  intervals, :func:`informative`), :func:`itemsets_table` (mlxtend's form).
* :mod:`.metrics`: the paper's ρ, σ+ and σ- (§5), :func:`evaluate`.

Every public name is importable from here (``from ldp_shared.analyses.itemsets import
mine_frequent_itemsets``).
"""

from ldp_shared.analyses.itemsets.apriori import ItemsetLevel
from ldp_shared.analyses.itemsets.bits import (
    DEFAULT_CHUNK_ROWS,
    ByteMatrix,
    FloatArray,
    IntArray,
    PackedBits,
    PackedSource,
    column_sums,
)
from ldp_shared.analyses.itemsets.cells import consistent_supports
from ldp_shared.analyses.itemsets.channel import BitChannel
from ldp_shared.analyses.itemsets.counting import CountingMethod, ProgressCallback
from ldp_shared.analyses.itemsets.metrics import (
    LengthAccuracy,
    accuracy_json,
    evaluate,
    evaluate_supports,
)
from ldp_shared.analyses.itemsets.mining import (
    DEFAULT_MAX_CANDIDATES,
    FrequentItemsets,
    ItemsetSupports,
    LevelStats,
    estimate_itemsets,
    interval,
    mine_frequent_itemsets,
)
from ldp_shared.analyses.itemsets.rules import (
    UNINFORMATIVE_WIDTH,
    AssociationRule,
    association_rules,
    informative,
    itemsets_table,
)
from ldp_shared.wire.itemsets import MAX_ITEMSET_SIZE, check_mining_query

__all__ = [
    "DEFAULT_CHUNK_ROWS",
    "DEFAULT_MAX_CANDIDATES",
    "MAX_ITEMSET_SIZE",
    "UNINFORMATIVE_WIDTH",
    "AssociationRule",
    "BitChannel",
    "ByteMatrix",
    "CountingMethod",
    "FloatArray",
    "FrequentItemsets",
    "IntArray",
    "ItemsetLevel",
    "ItemsetSupports",
    "LengthAccuracy",
    "LevelStats",
    "PackedBits",
    "PackedSource",
    "ProgressCallback",
    "accuracy_json",
    "association_rules",
    "check_mining_query",
    "column_sums",
    "consistent_supports",
    "estimate_itemsets",
    "evaluate",
    "evaluate_supports",
    "informative",
    "interval",
    "itemsets_table",
    "mine_frequent_itemsets",
]
