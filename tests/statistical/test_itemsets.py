"""MASK itemset supports against their stated intervals and ρ against its prediction.

Fixed seed, fixed α (:data:`ALPHA`, Bonferroni inside a test), and a power check:
baskets distorted at the per-item ε·1.3 or ε/1.3 (keep probability p' ≠ p) but mined
with the RIGHT p must be rejected by the same test.

* Coverage: one fixed set of true baskets is distorted ``R`` times; for each of ``K``
  itemsets (lengths 1 to 3) the number of runs whose 95% interval holds the true
  support is Binomial(R, 0.95) for honest intervals (two-sided z-test per itemset).
  Before the runs, the design is checked: under p' the estimator's exact expectation
  (it is linear in the distorted counts) puts the coverage of some itemset so far below
  0.95 that ``R`` runs detect it (:func:`assert_z_power`).
* ρ (Rizvi and Haritsa's support error): on a seeded synthetic set of 50,000 baskets,
  mined once, ρ per length must lie within ``z_crit · SD`` of its prediction
  ``E ρ ≈ 100 · mean_i sqrt(2/π) se_i/s_i`` from the standard errors, where ``SD`` is
  the conservative (fully correlated) ``100 · mean_i sqrt(1 - 2/π) se_i/s_i``.
"""

from __future__ import annotations

import itertools
import math
from statistics import NormalDist

import numpy as np
import pytest
from numpy.typing import NDArray

from ldp_shared.analyses.itemsets import (
    BitChannel,
    PackedBits,
    estimate_itemsets,
    evaluate,
    mine_frequent_itemsets,
)
from ldp_shared.mechanisms import Mask
from ldp_shared.rand import seeded_rng
from ldp_simulation.baskets import QuestParameters, quest_baskets, unpack_baskets

from ._stats import ALPHA, assert_z_power, binomial_pvalue, wrong_epsilons, z_critical

pytestmark = pytest.mark.statistical

SEED = 20_240_604
P = 0.9
COVERAGE_LEVEL = 0.95
N_COVERAGE = 8_000
ITEMS = 24
RUNS = 250


def _keep_for_item_epsilon(item_epsilon: float) -> float:
    return 1.0 / (1.0 + math.exp(-item_epsilon))


WRONG_P = [_keep_for_item_epsilon(e) for e in wrong_epsilons(math.log(P / (1 - P)))]


def _true_baskets(n: int, items: int, seed: int) -> NDArray[np.bool_]:
    params = QuestParameters(
        n_baskets=n, n_items=items, avg_basket_size=5, avg_pattern_size=3, n_patterns=12
    )
    return unpack_baskets(quest_baskets(params, seed), items)


def _targets(x: NDArray[np.bool_]) -> list[tuple[int, ...]]:
    """Four itemsets of each length 1-3, spread over the range of true supports."""
    truth = mine_frequent_itemsets(
        PackedBits.from_bool(x), x.shape[1], BitChannel.exact(), 0.03, max_size=3
    )
    chosen: list[tuple[int, ...]] = []
    for level in truth.levels[:3]:
        order = np.argsort(level.support)
        picks = order[np.linspace(0, order.size - 1, 4).round().astype(int)]
        chosen += [tuple(level.items[i].tolist()) for i in picks]
    return chosen


def _support(x: NDArray[np.bool_], itemset: tuple[int, ...]) -> float:
    return float(x[:, list(itemset)].all(axis=1).mean())


def _expected_estimate(x: NDArray[np.bool_], itemset: tuple[int, ...], data_p: float) -> float:
    """E[ŝ] when the data were distorted with ``data_p`` but the estimator uses :data:`P`.

    ŝ = (1/n) Σ_T a^|T| b^(k-|T|) N_T is linear in the distorted counts, and
    E[N_T]/n = mean over baskets of Π_{j∈T} (p' x_j + (1-p')(1-x_j)).
    """
    channel = BitChannel.mask(P)
    k = len(itemset)
    cols = x[:, list(itemset)]
    rate = np.where(cols, data_p, 1.0 - data_p)
    total = 0.0
    for size in range(k + 1):
        for subset in itertools.combinations(range(k), size):
            expected = float(rate[:, list(subset)].prod(axis=1).mean()) if subset else 1.0
            total += channel.a**size * channel.b ** (k - size) * expected
    return total


def _stderr_at_truth(x: NDArray[np.bool_], itemset: tuple[int, ...]) -> float:
    """``sqrt((1/n)[Σ_U e0^(k-|U|) d^|U| s(U) - s(C)])`` at the true supports."""
    channel = BitChannel.mask(P)
    e0, d = channel.e0, channel.e1 - channel.e0
    k = len(itemset)
    total = -_support(x, itemset)
    for size in range(k + 1):
        for subset in itertools.combinations(itemset, size):
            total += e0 ** (k - size) * d**size * (_support(x, subset) if subset else 1.0)
    return math.sqrt(total / x.shape[0])


def _coverage_counts(
    x: NDArray[np.bool_], targets: list[tuple[int, ...]], data_p: float, seed: int
) -> NDArray[np.int64]:
    z = NormalDist().inv_cdf(0.5 + COVERAGE_LEVEL / 2)
    true = np.array([_support(x, t) for t in targets])
    mask = Mask(d=x.shape[1], keep_probability=data_p)
    rng = seeded_rng(seed)
    hits = np.zeros(len(targets), dtype=np.int64)
    for _ in range(RUNS):
        distorted = PackedBits(np.packbits(mask.perturb(x, rng), axis=1))
        got = estimate_itemsets(distorted, x.shape[1], BitChannel.mask(P), targets)
        hits += np.abs(got.support - true) <= z * got.stderr
    return hits


def test_intervals_cover_at_the_stated_rate_and_a_wrong_p_is_caught() -> None:
    x = _true_baskets(N_COVERAGE, ITEMS, SEED)
    targets = _targets(x)
    assert [len(t) for t in targets] == [1] * 4 + [2] * 4 + [3] * 4
    alpha = ALPHA / len(targets)
    z = NormalDist().inv_cdf(0.5 + COVERAGE_LEVEL / 2)
    # design: under each wrong p, the worst itemset's coverage is detectable in RUNS runs
    for wrong in WRONG_P:
        coverages = []
        for t in targets:
            delta = (_expected_estimate(x, t, wrong) - _support(x, t)) / _stderr_at_truth(x, t)
            coverages.append(NormalDist().cdf(z - delta) - NormalDist().cdf(-z - delta))
        assert_z_power(RUNS, COVERAGE_LEVEL, min(coverages), alpha)
    # the right p: every itemset's coverage is consistent with 95%
    hits = _coverage_counts(x, targets, P, SEED + 1)
    pvalues = [binomial_pvalue(int(h), RUNS, COVERAGE_LEVEL) for h in hits]
    assert min(pvalues) >= alpha, (hits.tolist(), pvalues)
    # power: data distorted with a wrong p, estimated with the right one, is rejected
    for offset, wrong in enumerate(WRONG_P, start=2):
        hits = _coverage_counts(x, targets, wrong, SEED + offset)
        pvalues = [binomial_pvalue(int(h), RUNS, COVERAGE_LEVEL) for h in hits]
        assert min(pvalues) < alpha, (wrong, hits.tolist())


def _rho_check(
    x: NDArray[np.bool_], data_p: float, min_support: float
) -> dict[int, tuple[float, float, float]]:
    """Per length: (measured ρ, predicted ρ, conservative SD of ρ), all in percent."""
    packed = PackedBits.from_bool(x)
    truth = mine_frequent_itemsets(packed, x.shape[1], BitChannel.exact(), min_support)
    distorted = np.packbits(
        Mask(d=x.shape[1], keep_probability=data_p).perturb(x, seeded_rng(SEED + 7)), axis=1
    )
    found = mine_frequent_itemsets(
        PackedBits(distorted), x.shape[1], BitChannel.mask(P), min_support
    )
    true = truth.as_dict()
    errors = {items: se for items, _, se in found.records()}
    out: dict[int, tuple[float, float, float]] = {}
    for metrics in evaluate(found, truth):
        if metrics.rho is None or metrics.correct < 5:
            continue
        ratios = np.array(
            [
                errors[tuple(sorted(s))] / v
                for s, v in true.items()
                if len(s) == metrics.length and found.support_of(s) is not None
            ]
        )
        predicted = 100 * math.sqrt(2 / math.pi) * float(ratios.mean())
        sd = 100 * math.sqrt(1 - 2 / math.pi) * float(ratios.mean())
        out[metrics.length] = (metrics.rho, predicted, sd)
    return out


def test_rho_is_what_the_standard_errors_predict() -> None:
    x = _true_baskets(50_000, 60, SEED + 100)
    checks = _rho_check(x, P, 0.02)
    assert 1 in checks and 2 in checks  # the data set has singletons and pairs to judge
    crit = z_critical(ALPHA / len(checks))
    for length, (rho, predicted, sd) in checks.items():
        assert abs(rho - predicted) <= crit * sd, (length, rho, predicted, sd)
    # power: with data distorted at a wrong p (estimated with the right one) ρ is off
    for wrong in WRONG_P:
        bad = _rho_check(x, wrong, 0.02)
        assert any(abs(rho - predicted) > crit * sd for rho, predicted, sd in bad.values()), (
            wrong,
            bad,
        )
