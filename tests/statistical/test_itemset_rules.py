"""Association rules' confidence and lift against their stated (delta-method) intervals.

Fixed seed, fixed α (:data:`ALPHA`, Bonferroni over the rules and the two measures), and
power checks. One fixed set of true baskets is distorted ``RUNS`` times with MASK and
mined each time; for each of eight rules chosen from the truth, the number of runs
whose 95% interval holds the true confidence (lift) is Binomial(RUNS, 0.95) for honest
intervals. The same test must reject (a) baskets distorted at the per-item ε·1.3 or
ε/1.3 but mined with the right p, and (b) the intervals built without the covariance
terms (as if the three supports were independent), so it can tell a wrong formula.
"""

from __future__ import annotations

from statistics import NormalDist

import numpy as np
import pytest
from numpy.typing import NDArray

from ldp_shared.analyses.itemsets import (
    BitChannel,
    PackedBits,
    association_rules,
    mine_frequent_itemsets,
)
from ldp_shared.analyses.itemsets import rules as rules_module
from ldp_shared.mechanisms import Mask
from ldp_shared.rand import seeded_rng

from ._stats import ALPHA, binomial_pvalue, variance_ratio_pvalue
from .test_itemsets import ITEMS, SEED, WRONG_P, P, _true_baskets

pytestmark = pytest.mark.statistical

N_BASKETS = 8_000
RUNS = 250
MIN_SUPPORT = 0.05
LEVEL = 0.95
Rule = tuple[tuple[int, ...], tuple[int, ...]]


def _targets(x: NDArray[np.bool_]) -> dict[Rule, tuple[float, float]]:
    """Four rules of each union length 2 and 3, spread over confidence, whose supports are
    far above the mining threshold (so every run finds them): rule → (conf, lift)."""
    truth = mine_frequent_itemsets(
        PackedBits.from_bool(x), ITEMS, BitChannel.exact(), MIN_SUPPORT, max_size=3
    )
    chosen: dict[Rule, tuple[float, float]] = {}
    for length in (2, 3):
        pool = [
            r
            for r in association_rules(truth)
            if len(r.antecedent) + len(r.consequent) == length and r.support >= 0.12
        ]
        pool.sort(key=lambda r: r.confidence)
        for i in np.linspace(0, len(pool) - 1, 4).round().astype(int):
            r = pool[i]
            chosen[(r.antecedent, r.consequent)] = (r.confidence, r.lift)
    return chosen


def _runs(
    x: NDArray[np.bool_], targets: dict[Rule, tuple[float, float]], data_p: float, seed: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per run, rule and measure (confidence, lift): the estimate and its stated stderr."""
    mask = Mask(d=ITEMS, keep_probability=data_p)
    rng = seeded_rng(seed)
    estimates = np.zeros((RUNS, len(targets), 2))
    stderrs = np.zeros((RUNS, len(targets), 2))
    for run in range(RUNS):
        distorted = PackedBits(np.packbits(mask.perturb(x, rng), axis=1))
        mined = mine_frequent_itemsets(
            distorted, ITEMS, BitChannel.mask(P), MIN_SUPPORT, max_size=3
        )
        found = {(r.antecedent, r.consequent): r for r in association_rules(mined)}
        for i, rule in enumerate(targets):
            r = found[rule]
            estimates[run, i] = r.confidence, r.lift
            stderrs[run, i] = r.confidence_stderr, r.lift_stderr
    return estimates, stderrs


def _coverage_pvalue(
    targets: dict[Rule, tuple[float, float]],
    estimates: NDArray[np.float64],
    stderrs: NDArray[np.float64],
) -> float:
    """The smallest two-sided p-value of the interval hit counts against Binomial(R, 0.95)."""
    z = NormalDist().inv_cdf(0.5 + LEVEL / 2)
    truth = np.array(list(targets.values()))
    hits = (np.abs(estimates - truth[None]) <= z * stderrs).sum(axis=0)
    return min(binomial_pvalue(int(h), RUNS, LEVEL) for h in hits.ravel())


def _variance_pvalue(estimates: NDArray[np.float64], stderrs: NDArray[np.float64]) -> float:
    """The smallest p-value of the spread of the estimates against the stated variance."""
    stated = np.mean(stderrs**2, axis=0)
    spread = np.var(estimates, axis=0, ddof=1)
    return min(
        variance_ratio_pvalue(float(s), float(v), RUNS)
        for s, v in zip(spread.ravel(), stated.ravel(), strict=True)
    )


def test_rule_intervals_cover_and_wrong_channels_or_formulas_are_caught(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    x = _true_baskets(N_BASKETS, ITEMS, SEED)
    targets = _targets(x)
    assert len(targets) == 8
    alpha = ALPHA / (2 * len(targets))
    estimates, stderrs = _runs(x, targets, P, SEED + 1)
    assert _coverage_pvalue(targets, estimates, stderrs) >= alpha
    assert _variance_pvalue(estimates, stderrs) >= alpha
    # power: baskets distorted at a wrong per-item ε, mined with the right p
    for offset, wrong in enumerate(WRONG_P, start=2):
        assert _coverage_pvalue(targets, *_runs(x, targets, wrong, SEED + offset)) < alpha, wrong

    # power: the covariance-free formula (E[Π_A z² Π_C z] replaced by s(U), so zero
    # covariances) on the same draws as the honest run states the wrong variance
    def no_covariance(
        result: object, squared: NDArray[np.int64], plain: NDArray[np.int64]
    ) -> object:
        union = np.sort(np.concatenate([squared, plain], axis=1), axis=1)
        return np.clip(rules_module._supports(result, union)[0], 0.0, 1.0)  # type: ignore[arg-type]

    monkeypatch.setattr(rules_module, "_squared_moment", no_covariance)
    assert _variance_pvalue(*_runs(x, targets, P, SEED + 1)) < alpha
