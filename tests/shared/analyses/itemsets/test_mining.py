"""Mining (ldp_shared.analyses.itemsets.mining): bad parameters, sources and limits
raise :class:`InvalidQueryError`.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldp_shared.analyses.itemsets import (
    MAX_ITEMSET_SIZE,
    PackedBits,
    check_mining_query,
    mine_frequent_itemsets,
)
from ldp_shared.errors import InvalidQueryError

from ._baskets import EXACT, quest


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"min_support": 0.0}, "min_support"),
        ({"min_support": -0.1}, "min_support"),
        ({"min_support": 1.5}, "min_support"),
        ({"min_support": math.nan}, "min_support"),
        ({"min_support": True}, "min_support"),
        ({"min_support": 0.1, "max_size": 0}, "max_size"),
        ({"min_support": 0.1, "max_size": MAX_ITEMSET_SIZE + 1}, "max_size"),
        ({"min_support": 0.1, "max_size": 2.5}, "max_size"),
        ({"min_support": 0.1, "support_reduction": 1.0}, "support_reduction"),
        ({"min_support": 0.1, "support_reduction": -0.1}, "support_reduction"),
        ({"min_support": 0.1, "min_confidence": 1.01}, "min_confidence"),
        ({"min_support": 0.1, "min_confidence": -0.01}, "min_confidence"),
        ({"min_support": 0.1, "confidence": 1.0}, "confidence"),
    ],
)
def test_bad_parameters_are_refused(kwargs: dict, match: str) -> None:
    with pytest.raises(InvalidQueryError, match=match):
        check_mining_query(**kwargs)


def test_min_support_of_one_is_allowed() -> None:
    check_mining_query(1.0, max_size=1, min_confidence=1.0, support_reduction=0.0)
    everything = np.ones((10, 3), dtype=bool)
    found = mine_frequent_itemsets(PackedBits.from_bool(everything), 3, EXACT, 1.0)
    assert found.by_length == {1: 3, 2: 3, 3: 1}


def test_mining_refuses_bad_sources_and_limits() -> None:
    packed = quest(n=300)
    with pytest.raises(InvalidQueryError, match="do not fit"):
        mine_frequent_itemsets(PackedBits(packed), 41, EXACT, 0.1)
    with pytest.raises(InvalidQueryError, match="no baskets"):
        mine_frequent_itemsets(PackedBits(packed[:0]), 40, EXACT, 0.1)
    with pytest.raises(InvalidQueryError, match="column sums"):
        mine_frequent_itemsets(PackedBits(packed), 40, EXACT, 0.1, statistics=(299, np.zeros(40)))
    with pytest.raises(InvalidQueryError, match="candidate"):
        mine_frequent_itemsets(PackedBits(packed), 40, EXACT, 0.001, max_candidates=10)
    with pytest.raises(InvalidQueryError, match="method"):
        mine_frequent_itemsets(PackedBits(packed), 40, EXACT, 0.1, method="magic")  # type: ignore[arg-type]
    with pytest.raises(InvalidQueryError):
        PackedBits(np.zeros((3, 2), dtype=np.int64))  # type: ignore[arg-type]


def test_a_source_that_changes_between_passes_is_refused() -> None:
    packed = quest(n=400)

    class Growing:
        row_bytes = packed.shape[1]
        n_rows = 400
        passes = 0

        def chunks(self):
            self.passes += 1
            yield packed if self.passes == 1 else np.concatenate([packed, packed[:5]])

    with pytest.raises(InvalidQueryError, match="must not change"):
        mine_frequent_itemsets(Growing(), 40, EXACT, 0.05)
