"""The paper's metrics ρ, σ+ and σ- (ldp_shared.analyses.itemsets.metrics) by hand."""

from __future__ import annotations

import numpy as np
import pytest

from ldp_shared.analyses.itemsets import (
    PackedBits,
    accuracy_json,
    evaluate,
    mine_frequent_itemsets,
)
from ldp_shared.errors import InvalidQueryError

from ._baskets import EXACT, quest


def test_evaluate_by_hand() -> None:
    # truth: {0}: .5, {1}: .4, {2}: .3, {0,1}: .3 at min_support .3
    truth_baskets = np.array(
        [[1, 1, 0], [1, 1, 0], [1, 1, 0], [1, 0, 1], [1, 0, 0], [0, 1, 1], [0, 0, 1]]
        + [[0, 0, 0]] * 3,
        dtype=bool,
    )
    truth = mine_frequent_itemsets(PackedBits.from_bool(truth_baskets), 3, EXACT, 0.3)
    assert truth.as_dict() == {
        frozenset({0}): 0.5,
        frozenset({1}): 0.4,
        frozenset({2}): 0.3,
        frozenset({0, 1}): 0.3,
    }
    # an "estimate": {0}: .55 (right), {1}: .25 (missed), {2}: .33 (right),
    # {0,2}: .3 (false positive); {0,1} missed
    estimate_baskets = np.zeros((100, 3), dtype=bool)
    estimate_baskets[:55, 0] = True
    estimate_baskets[55:80, 1] = True
    estimate_baskets[:33, 2] = True
    estimate = mine_frequent_itemsets(PackedBits.from_bool(estimate_baskets), 3, EXACT, 0.3)
    metrics = {m.length: m for m in evaluate(estimate, truth)}
    one = metrics[1]
    assert (one.true_frequent, one.reported, one.correct) == (3, 2, 2)
    assert one.rho == pytest.approx(100 * (0.05 / 0.5 + 0.03 / 0.3) / 2)
    assert one.sigma_plus == 0.0
    assert one.sigma_minus == pytest.approx(100 / 3)
    two = metrics[2]
    assert (two.true_frequent, two.reported, two.correct) == (1, 1, 0)
    assert two.rho is None and two.sigma_plus == 100.0 and two.sigma_minus == 100.0
    block = accuracy_json(evaluate(estimate, truth))
    assert set(block) == {"1", "2"} and set(block["1"]) >= {"rho", "sigma_plus", "sigma_minus"}


def test_evaluate_refuses_a_truth_at_another_support() -> None:
    packed = quest(n=500)
    truth = mine_frequent_itemsets(PackedBits(packed), 40, EXACT, 0.1)
    estimate = mine_frequent_itemsets(PackedBits(packed), 40, EXACT, 0.2)
    with pytest.raises(InvalidQueryError, match="min_support"):
        evaluate(estimate, truth)
    short = mine_frequent_itemsets(PackedBits(packed), 40, EXACT, 0.2, max_size=1)
    with pytest.raises(InvalidQueryError, match="max_size"):
        evaluate(mine_frequent_itemsets(PackedBits(packed), 40, EXACT, 0.2, max_size=2), short)
