"""Counting (ldp_shared.analyses.itemsets.bits and .counting): column sums, and the
Gram and bitset methods agree on distorted baskets.
"""

from __future__ import annotations

from ldp_shared.analyses.itemsets import BitChannel, PackedBits, column_sums, mine_frequent_itemsets
from ldp_simulation.baskets import unpack_baskets

from ._baskets import distort, quest


def test_column_sums_count_the_set_bits() -> None:
    packed = quest(n=1234, items=37)
    n, sums = column_sums(PackedBits(packed, chunk_rows=100), 37)
    assert n == 1234
    assert sums.tolist() == unpack_baskets(packed, 37).sum(axis=0).tolist()


def test_counting_methods_agree_under_noise() -> None:
    packed = quest()
    distorted = distort(packed, 0.9, 2)
    channel = BitChannel.mask(0.9)
    gram = mine_frequent_itemsets(PackedBits(distorted), 40, channel, 0.04, method="gram")
    bitset = mine_frequent_itemsets(PackedBits(distorted), 40, channel, 0.04, method="bitset")
    assert gram.as_dict() == bitset.as_dict()
    assert max(gram.by_length) >= 3
