"""Rules and the itemsets table (ldp_shared.analyses.itemsets.rules) equal mlxtend's."""

from __future__ import annotations

import pandas as pd
import pytest
from mlxtend.frequent_patterns import apriori, association_rules

from ldp_shared.analyses.itemsets import (
    BitChannel,
    FrequentItemsets,
    PackedBits,
    itemsets_table,
    mine_frequent_itemsets,
)
from ldp_shared.analyses.itemsets import (
    association_rules as our_rules,
)
from ldp_simulation.baskets import unpack_baskets

from ._baskets import EXACT, distort, quest


def _table_frame(found: FrequentItemsets) -> pd.DataFrame:
    return pd.DataFrame(itemsets_table(found))


@pytest.mark.parametrize("channel", [EXACT, BitChannel.mask(0.9)])
def test_rules_equal_mlxtend_association_rules_on_our_table(channel: BitChannel) -> None:
    packed = quest()
    data = packed
    if channel.p < 1.0:
        data = distort(packed, channel.p, 3)
    found = mine_frequent_itemsets(PackedBits(data), 40, channel, 0.05)
    # exact counting has consistent supports (the projection changes nothing); with
    # noise the ratio estimator (projected=False) is mlxtend's on the same supports
    ours = our_rules(found, min_confidence=0.6, projected=channel.p == 1.0)
    assert ours, "the data set should have rules"
    theirs = association_rules(
        _table_frame(found), num_itemsets=found.n, metric="confidence", min_threshold=0.6
    )
    mine = {
        (frozenset(r.antecedent), frozenset(r.consequent)): (r.support, r.confidence, r.lift)
        for r in ours
    }
    other = {
        (row.antecedents, row.consequents): (row.support, row.confidence, row.lift)
        for row in theirs.itertuples()
    }
    assert mine.keys() == other.keys()
    for key, values in mine.items():
        assert values == pytest.approx(other[key], rel=1e-12)
    # informative rules first, each group strongest first; max_rules cuts that order
    order = [(not r.informative, -r.confidence) for r in ours]
    assert order == sorted(order)
    assert our_rules(found, 0.6, max_rules=3, projected=channel.p == 1.0) == ours[:3]


def test_table_with_names_is_the_apriori_frame_of_mlxtend() -> None:
    packed = quest()
    names = [f"it{i}" for i in range(40)]
    found = mine_frequent_itemsets(PackedBits(packed), 40, EXACT, 0.05)
    table = pd.DataFrame(itemsets_table(found, names))
    frame = pd.DataFrame(unpack_baskets(packed, 40), columns=names)
    theirs = apriori(frame, min_support=0.05, use_colnames=True)
    ours = dict(zip(table["itemsets"], table["support"], strict=True))
    assert ours == pytest.approx(dict(zip(theirs["itemsets"], theirs["support"], strict=True)))
    assert list(table.columns) == ["support", "itemsets"]


def test_rule_standard_errors_vanish_without_noise_and_are_positive_with_it() -> None:
    """Exact counting has no distortion variance; MASK's rules all carry a positive one."""
    packed = quest()
    exact = our_rules(mine_frequent_itemsets(PackedBits(packed), 40, EXACT, 0.05), 0.6)
    assert exact and all(r.confidence_stderr == 0.0 == r.lift_stderr for r in exact)
    channel = BitChannel.mask(0.9)
    found = mine_frequent_itemsets(PackedBits(distort(packed, channel.p, 3)), 40, channel, 0.05)
    noisy = our_rules(found, 0.6)
    assert noisy
    for r in noisy:
        assert 0.0 < r.confidence_stderr < 1.0 and 0.0 < r.lift_stderr < r.lift
