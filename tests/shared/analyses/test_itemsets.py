"""Frequent itemsets (ldp_shared.analyses.itemsets): exact properties.

* With ``p = 1, q = 0`` (no noise) mining is Apriori: the itemsets and supports equal
  mlxtend's ``apriori`` and ``fpgrowth`` on the same baskets, whichever counting method.
* The estimator is unbiased and its variance formula exact: both checked by enumerating
  every distortion of a tiny data set (no sampling).
* Rules equal mlxtend's ``association_rules`` on our table; bad parameters raise
  :class:`InvalidQueryError` / :class:`ConfigurationError`.

Statistical properties (coverage, ρ against its prediction) are in
``tests/statistical/test_itemsets.py``.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from mlxtend.frequent_patterns import apriori, association_rules, fpgrowth

from ldp_shared.analyses.itemsets import (
    MAX_ITEMSET_SIZE,
    BitChannel,
    FrequentItemsets,
    PackedBits,
    accuracy_json,
    check_mining_query,
    column_sums,
    estimate_itemsets,
    evaluate,
    itemsets_table,
    mine_frequent_itemsets,
)
from ldp_shared.analyses.itemsets import (
    association_rules as our_rules,
)
from ldp_shared.errors import ConfigurationError, InvalidQueryError
from ldp_shared.kernel import frequency_variance
from ldp_shared.mechanisms import Mask
from ldp_shared.rand import seeded_rng
from ldp_simulation.baskets import QuestParameters, quest_baskets, unpack_baskets

EXACT = BitChannel.exact()


def _quest(n: int = 3000, items: int = 40, seed: int = 7) -> np.ndarray:
    params = QuestParameters(
        n_baskets=n, n_items=items, avg_basket_size=6, avg_pattern_size=3, n_patterns=30
    )
    return quest_baskets(params, seed)


def _mlxtend(packed: np.ndarray, n_items: int, min_support: float, how: str) -> dict:
    frame = pd.DataFrame(unpack_baskets(packed, n_items))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        found = (apriori if how == "apriori" else fpgrowth)(frame, min_support=min_support)
    return {
        frozenset(s): float(v) for s, v in zip(found["itemsets"], found["support"], strict=True)
    }


# ----------------------------------------------------------------------------- channel


def test_channel_parameters() -> None:
    mask = BitChannel.mask(0.9)
    assert (mask.p, mask.q) == (0.9, pytest.approx(0.1))
    assert mask.a == pytest.approx(1.25) and mask.b == pytest.approx(-0.125)
    # E[z²|x=1] - E[z²|x=0] = 1 for MASK (so the standard error formula has d = 1)
    assert mask.e1 - mask.e0 == pytest.approx(1.0)
    assert mask.e0 == pytest.approx(0.9 * 0.1 / 0.8**2)
    assert (EXACT.a, EXACT.b, EXACT.e0, EXACT.e1) == (1.0, 0.0, 0.0, 1.0)


@pytest.mark.parametrize("p", [0.5, 1.0, 0.4, 1.2, math.nan])
def test_mask_channel_needs_p_in_the_open_interval(p: float) -> None:
    with pytest.raises(ConfigurationError, match=r"\(0.5, 1\)"):
        BitChannel.mask(p)


@pytest.mark.parametrize(("p", "q"), [(0.5, 0.5), (0.3, 0.6), (1.1, 0.0), (0.9, -0.1)])
def test_channel_needs_q_below_p(p: float, q: float) -> None:
    with pytest.raises(ConfigurationError):
        BitChannel(p, q)


# ----------------------------------------------------------------------------- exact Apriori


@pytest.mark.parametrize("method", ["auto", "gram", "bitset"])
@pytest.mark.parametrize("min_support", [0.03, 0.07, 0.2])
def test_exact_mining_equals_mlxtend(method: str, min_support: float) -> None:
    packed = _quest()
    ours = mine_frequent_itemsets(PackedBits(packed), 40, EXACT, min_support, method=method)
    for how in ("apriori", "fpgrowth"):
        theirs = _mlxtend(packed, 40, min_support, how)
        assert ours.as_dict().keys() == theirs.keys(), how
        for itemset, support in ours.as_dict().items():
            assert support == pytest.approx(theirs[itemset], rel=1e-12, abs=0.0)
    if min_support < 0.1:
        assert max(ours.by_length) >= 3  # the data set does exercise longer itemsets
    assert all(float(level.stderr.max(initial=0.0)) == 0.0 for level in ours.levels)


def test_exact_mining_chunked_and_limited_in_size() -> None:
    packed = _quest(n=2000, items=30, seed=11)
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
    packed = _quest()
    reduced = mine_frequent_itemsets(PackedBits(packed), 40, EXACT, 0.1, support_reduction=0.3)
    plain = mine_frequent_itemsets(PackedBits(packed), 40, EXACT, 0.07)
    assert reduced.threshold == pytest.approx(0.07)
    assert reduced.as_dict() == plain.as_dict()
    assert reduced.min_support == 0.1


def test_column_sums_count_the_set_bits() -> None:
    packed = _quest(n=1234, items=37)
    n, sums = column_sums(PackedBits(packed, chunk_rows=100), 37)
    assert n == 1234
    assert sums.tolist() == unpack_baskets(packed, 37).sum(axis=0).tolist()


def test_join_and_prune_match_brute_force() -> None:
    # every frequent itemset's subsets are frequent, and nothing frequent is missed: the
    # level-wise result equals brute-force counting of all itemsets up to size 4
    packed = _quest(n=800, items=12, seed=3)
    matrix = unpack_baskets(packed, 12)
    found = mine_frequent_itemsets(PackedBits(packed), 12, EXACT, 0.06, max_size=4)
    brute = {}
    for k in range(1, 5):
        for combo in itertools.combinations(range(12), k):
            support = float(matrix[:, list(combo)].all(axis=1).mean())
            if support >= 0.06:
                brute[frozenset(combo)] = support
    assert found.as_dict().keys() == brute.keys()


# ----------------------------------------------------------------------------- estimator


def _all_distortions(x: np.ndarray, p: float, q: float):
    """Every distorted version of the n × k true matrix with its probability."""
    n, k = x.shape
    for bits in itertools.product([0, 1], repeat=n * k):
        y = np.array(bits, dtype=bool).reshape(n, k)
        probability = np.where(x, np.where(y, p, 1 - p), np.where(y, q, 1 - q)).prod()
        yield y, float(probability)


@pytest.mark.parametrize(("p", "q"), [(0.8, 0.2), (0.7, 0.1)])
def test_estimator_is_unbiased_and_its_variance_exact(p: float, q: float) -> None:
    # three baskets over three items: enumerate all 2^9 distortions
    x = np.array([[1, 1, 0], [1, 1, 1], [0, 1, 1]], dtype=bool)
    channel = BitChannel(p, q)
    targets = [(0,), (1,), (0, 1), (1, 2), (0, 1, 2)]
    true_support = np.array([x[:, list(t)].all(axis=1).mean() for t in targets])
    mean = np.zeros(len(targets))
    second = np.zeros(len(targets))
    for y, probability in _all_distortions(x, p, q):
        got = estimate_itemsets(PackedBits.from_bool(y), 3, channel, targets)
        mean += probability * got.support
        second += probability * got.support**2
    np.testing.assert_allclose(mean, true_support, rtol=0, atol=1e-12)
    variance = second - mean**2
    # the standard error formula evaluated at the true supports
    exact = estimate_itemsets(PackedBits.from_bool(x), 3, EXACT, targets)
    np.testing.assert_allclose(exact.support, true_support, atol=0)
    e0, d = channel.e0, channel.e1 - channel.e0
    predicted = []
    for t in targets:
        k = len(t)
        total = -x[:, list(t)].all(axis=1).mean()
        for size in range(k + 1):
            for u in itertools.combinations(t, size):
                s_u = x[:, list(u)].all(axis=1).mean() if u else 1.0
                total += e0 ** (k - size) * d**size * s_u
        predicted.append(total / 3)
    np.testing.assert_allclose(variance, predicted, rtol=1e-10)


def test_singleton_standard_error_is_the_kernel_variance() -> None:
    packed = _quest()
    distorted = np.packbits(
        Mask(d=40, keep_probability=0.85).perturb(unpack_baskets(packed, 40), seeded_rng(1)),
        axis=1,
    )
    found = mine_frequent_itemsets(PackedBits(distorted), 40, BitChannel.mask(0.85), 0.05)
    level = found.levels[0]
    expected = np.sqrt(frequency_variance(level.support, found.n, 0.85, 0.15))
    np.testing.assert_allclose(level.stderr, expected, rtol=1e-12)


def test_estimate_itemsets_agrees_with_mining() -> None:
    packed = _quest()
    distorted = np.packbits(
        Mask(d=40, keep_probability=0.9).perturb(unpack_baskets(packed, 40), seeded_rng(5)),
        axis=1,
    )
    channel = BitChannel.mask(0.9)
    found = mine_frequent_itemsets(PackedBits(distorted), 40, channel, 0.05)
    rows = [items for items, _, _ in found.records()]
    got = estimate_itemsets(PackedBits(distorted), 40, channel, rows)
    mined = np.array([s for _, s, _ in found.records()])
    errors = np.array([e for _, _, e in found.records()])
    np.testing.assert_allclose(got.support, mined, rtol=1e-12)
    np.testing.assert_allclose(got.stderr, errors, rtol=1e-12)
    with pytest.raises(InvalidQueryError):
        estimate_itemsets(PackedBits(distorted), 40, channel, [(3, 40)])
    with pytest.raises(InvalidQueryError):
        estimate_itemsets(PackedBits(distorted), 40, channel, [()])


def test_counting_methods_agree_under_noise() -> None:
    packed = _quest()
    distorted = np.packbits(
        Mask(d=40, keep_probability=0.9).perturb(unpack_baskets(packed, 40), seeded_rng(2)),
        axis=1,
    )
    channel = BitChannel.mask(0.9)
    gram = mine_frequent_itemsets(PackedBits(distorted), 40, channel, 0.04, method="gram")
    bitset = mine_frequent_itemsets(PackedBits(distorted), 40, channel, 0.04, method="bitset")
    assert gram.as_dict() == bitset.as_dict()
    assert max(gram.by_length) >= 3


# ----------------------------------------------------------------------------- rules, table


def _table_frame(found: FrequentItemsets) -> pd.DataFrame:
    return pd.DataFrame(itemsets_table(found))


@pytest.mark.parametrize("channel", [EXACT, BitChannel.mask(0.9)])
def test_rules_equal_mlxtend_association_rules_on_our_table(channel: BitChannel) -> None:
    packed = _quest()
    data = packed
    if channel.p < 1.0:
        data = np.packbits(
            Mask(d=40, keep_probability=channel.p).perturb(
                unpack_baskets(packed, 40), seeded_rng(3)
            ),
            axis=1,
        )
    found = mine_frequent_itemsets(PackedBits(data), 40, channel, 0.05)
    ours = our_rules(found, min_confidence=0.6)
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
    # strongest first, and max_rules cuts that order
    confidences = [r.confidence for r in ours]
    assert confidences == sorted(confidences, reverse=True)
    assert our_rules(found, 0.6, max_rules=3) == ours[:3]


def test_table_with_names_is_the_apriori_frame_of_mlxtend() -> None:
    packed = _quest()
    names = [f"it{i}" for i in range(40)]
    found = mine_frequent_itemsets(PackedBits(packed), 40, EXACT, 0.05)
    table = pd.DataFrame(itemsets_table(found, names))
    frame = pd.DataFrame(unpack_baskets(packed, 40), columns=names)
    theirs = apriori(frame, min_support=0.05, use_colnames=True)
    ours = dict(zip(table["itemsets"], table["support"], strict=True))
    assert ours == pytest.approx(dict(zip(theirs["itemsets"], theirs["support"], strict=True)))
    assert list(table.columns) == ["support", "itemsets"]


# ----------------------------------------------------------------------------- evaluation


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
    packed = _quest(n=500)
    truth = mine_frequent_itemsets(PackedBits(packed), 40, EXACT, 0.1)
    estimate = mine_frequent_itemsets(PackedBits(packed), 40, EXACT, 0.2)
    with pytest.raises(InvalidQueryError, match="min_support"):
        evaluate(estimate, truth)
    short = mine_frequent_itemsets(PackedBits(packed), 40, EXACT, 0.2, max_size=1)
    with pytest.raises(InvalidQueryError, match="max_size"):
        evaluate(mine_frequent_itemsets(PackedBits(packed), 40, EXACT, 0.2, max_size=2), short)


# ----------------------------------------------------------------------------- bad input


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
    packed = _quest(n=300)
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
    packed = _quest(n=400)

    class Growing:
        row_bytes = packed.shape[1]
        n_rows = 400
        passes = 0

        def chunks(self):
            self.passes += 1
            yield packed if self.passes == 1 else np.concatenate([packed, packed[:5]])

    with pytest.raises(InvalidQueryError, match="must not change"):
        mine_frequent_itemsets(Growing(), 40, EXACT, 0.05)
