"""Exact Apriori (ldp_shared.analyses.itemsets with ``p = 1, q = 0``, no noise).

The itemsets and supports equal mlxtend's ``apriori`` and ``fpgrowth`` on the same
baskets, whichever counting method; the level-wise join and prune miss nothing.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from mlxtend.frequent_patterns import apriori

from ldp_shared.analyses.itemsets import PackedBits, mine_frequent_itemsets
from ldp_simulation.baskets import unpack_baskets

from ._baskets import EXACT, mlxtend_supports, quest


@pytest.mark.parametrize("method", ["auto", "gram", "bitset"])
@pytest.mark.parametrize("min_support", [0.03, 0.07, 0.2])
def test_exact_mining_equals_mlxtend(method: str, min_support: float) -> None:
    packed = quest()
    ours = mine_frequent_itemsets(PackedBits(packed), 40, EXACT, min_support, method=method)
    for how in ("apriori", "fpgrowth"):
        theirs = mlxtend_supports(packed, 40, min_support, how)
        assert ours.as_dict().keys() == theirs.keys(), how
        for itemset, support in ours.as_dict().items():
            assert support == pytest.approx(theirs[itemset], rel=1e-12, abs=0.0)
    if min_support < 0.1:
        assert max(ours.by_length) >= 3  # the data set does exercise longer itemsets
    assert all(float(level.stderr.max(initial=0.0)) == 0.0 for level in ours.levels)


def test_exact_mining_chunked_and_limited_in_size() -> None:
    packed = quest(n=2000, items=30, seed=11)
    whole = mine_frequent_itemsets(PackedBits(packed), 30, EXACT, 0.05)
    chunked = mine_frequent_itemsets(PackedBits(packed, chunk_rows=77), 30, EXACT, 0.05)
    assert chunked.as_dict() == whole.as_dict()
    short = mine_frequent_itemsets(PackedBits(packed), 30, EXACT, 0.05, max_size=2)
    assert max(short.by_length) == 2
    assert short.as_dict() == {s: v for s, v in whole.as_dict().items() if len(s) <= 2}
    frame = pd.DataFrame(unpack_baskets(packed, 30))
    theirs = apriori(frame, min_support=0.05, max_len=2)
    assert len(theirs) == len(short)


def test_a_hand_made_example() -> None:
    baskets = np.array(
        [
            [1, 1, 0, 1],
            [1, 1, 0, 0],
            [1, 0, 1, 0],
            [1, 1, 1, 0],
            [0, 1, 0, 1],
        ],
        dtype=bool,
    )
    found = mine_frequent_itemsets(PackedBits.from_bool(baskets), 4, EXACT, 0.4)
    assert found.as_dict() == {
        frozenset({0}): 0.8,
        frozenset({1}): 0.8,
        frozenset({2}): 0.4,
        frozenset({3}): 0.4,
        frozenset({0, 1}): 0.6,
        frozenset({0, 2}): 0.4,
        frozenset({1, 3}): 0.4,
    }
    assert found.support_of([1, 0]) == 0.6
    assert found.support_of([0, 3]) is None
    assert found.support_of([]) is None
    assert found.by_length == {1: 4, 2: 3}
    assert found.n == 5 and found.threshold == 0.4


def test_support_reduction_mines_at_the_lower_threshold() -> None:
    packed = quest()
    reduced = mine_frequent_itemsets(PackedBits(packed), 40, EXACT, 0.1, support_reduction=0.3)
    plain = mine_frequent_itemsets(PackedBits(packed), 40, EXACT, 0.07)
    assert reduced.threshold == pytest.approx(0.07)
    assert reduced.as_dict() == plain.as_dict()
    assert reduced.min_support == 0.1


def test_join_and_prune_match_brute_force() -> None:
    # every frequent itemset's subsets are frequent, and nothing frequent is missed: the
    # level-wise result equals brute-force counting of all itemsets up to size 4
    packed = quest(n=800, items=12, seed=3)
    matrix = unpack_baskets(packed, 12)
    found = mine_frequent_itemsets(PackedBits(packed), 12, EXACT, 0.06, max_size=4)
    brute = {}
    for k in range(1, 5):
        for combo in itertools.combinations(range(12), k):
            support = float(matrix[:, list(combo)].all(axis=1).mean())
            if support >= 0.06:
                brute[frozenset(combo)] = support
    assert found.as_dict().keys() == brute.keys()
