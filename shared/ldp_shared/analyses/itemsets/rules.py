"""Association rules from mined itemsets, with standard errors and intervals that respect
the ranges of confidence and lift, and the itemsets as mlxtend's table.

The rules of Rizvi and Haritsa (VLDB 2002) are those of Apriori, ``confidence =
s(A ∪ C)/s(A)`` and ``lift = confidence/s(C)``, here computed from **consistent**
supports: the ``2^k`` cell frequencies of the itemset ``U = A ∪ C`` reconstructed from
the unbiased supports and projected onto the probability simplex (:mod:`.cells`). So
``0 ≤ s̃(U) ≤ s̃(A) ≤ 1``: every confidence lies in ``[0, 1]``, every lift is ``≥ 0``,
and a rule's support, confidence and antecedent support agree with each other. Where
the reconstructed cells are already a distribution (always without noise) this is the
ratio of the unbiased supports, as mlxtend's ``association_rules`` computes it from
the same supports (tested); ``projected=False`` gives that ratio estimator everywhere
(for comparison: it can exceed 1).

**Standard errors** (delta method). Each support estimate is a mean over baskets of
products of debiased bits, ``ŝ(S) = (1/n) Σ_i Π_{j∈S} z_ij`` (:mod:`.estimator`), so the
three estimates a rule uses have exact covariances given the baskets (the randomness
is the distortion's, as in the itemsets' own standard errors). For disjoint ``A``,
``C`` and ``U = A ∪ C``, with ``E[z_j² | x_j] = e0 + d·x_j``, distinct bits independent
and ``x`` binary:

* ``n·Cov(ŝ(U), ŝ(A)) = Σ_{V⊆A} e0^{|A|−|V|} d^{|V|} s(V ∪ C) − s(U)``
  (``Π_U z · Π_A z = Π_A z² · Π_C z``, and ``Π_U x · Π_A x = Π_U x``), and
  symmetrically for ``C``;
* ``Cov(ŝ(A), ŝ(C)) = 0``: disjoint bits are distorted independently;
* the variances are the itemsets' own (their ``stderr``).

Every support on the right is of a subset of ``U``, which Apriori has estimated; they
are plugged in clipped to ``[0, 1]``. Then ``Var(conf) = g Σ gᵀ`` with the gradient
``g = (1/s_A, −s_U/s_A²)`` over ``(U, A)``, and ``Var(lift)`` with
``g = (1/(s_A s_C), −s_U/(s_A² s_C), −s_U/(s_A s_C²))`` over ``(U, A, C)``, evaluated
at the released (consistent) supports. The projection is Lipschitz and the identity
near an interior truth, so the first-order variance is the ratio's.

**Intervals, clipped on principle.** ``estimate ± z·stderr`` is intersected with the
parameter's range (``[0, 1]`` for confidence, ``[0, ∞)`` for lift): the truth lies in
it, so an interval covers exactly when its clipped part does, and the coverage is
unchanged. A confidence's standard error is at most 1/2 (Popoviciu's inequality: a
quantity in ``[0, 1]`` has a standard deviation of at most 1/2); a larger delta-method
value says only that the linearisation failed, and is stated as 1/2. A rule whose
clipped confidence interval is :data:`UNINFORMATIVE_WIDTH` wide or wider is flagged
``informative = False`` and sorted after every informative rule: its interval cannot
tell a strong rule from a coin flip. The intervals are first-order: they need ``s(A)``
and ``s(C)`` many standard errors away from 0 (``tests/statistical/test_itemset_rules.py``
and ``bench/itemset_rules.py`` measure their coverage). A rule whose antecedent or
consequent has a consistent support of 0 has no confidence and is left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ldp_shared.analyses.itemsets.apriori import ItemsetLevel, _subset_masks
from ldp_shared.analyses.itemsets.bits import FloatArray, IntArray
from ldp_shared.analyses.itemsets.cells import consistent_supports, subset_supports
from ldp_shared.analyses.itemsets.mining import FrequentItemsets
from ldp_shared.kernel import z_value
from ldp_shared.wire.itemsets import check_mining_query

UNINFORMATIVE_WIDTH = 0.5
"""A confidence interval (clipped to [0, 1]) this wide or wider flags its rule uninformative."""

CONFIDENCE_STDERR_BOUND = 0.5
"""The largest standard deviation of a quantity in [0, 1] (Popoviciu's inequality)."""


def informative(confidence_ci_low: float, confidence_ci_high: float) -> bool:
    """Whether a rule's confidence interval (clipped to [0, 1]) says something: narrower
    than :data:`UNINFORMATIVE_WIDTH`. Works on the rules of the API's results too."""
    return confidence_ci_high - confidence_ci_low < UNINFORMATIVE_WIDTH


@dataclass(frozen=True)
class AssociationRule:
    """``antecedent → consequent`` with the consistent support of their union.

    ``confidence = s̃(A ∪ C)/s̃(A)`` in ``[0, 1]`` and ``lift = confidence/s̃(C) ≥ 0``,
    with delta-method standard errors and intervals clipped to those ranges;
    ``informative`` is ``False`` when the confidence interval is too wide to say
    anything (see the module docstring).
    """

    antecedent: tuple[int, ...]
    consequent: tuple[int, ...]
    support: float
    confidence: float
    lift: float
    antecedent_support: float
    consequent_support: float
    confidence_stderr: float
    lift_stderr: float
    confidence_ci_low: float
    confidence_ci_high: float
    lift_ci_low: float
    lift_ci_high: float
    informative: bool


def _supports(result: FrequentItemsets, rows: IntArray) -> tuple[FloatArray, FloatArray]:
    """The estimated supports of itemsets (rows of increasing items) and their stderr."""
    level = result.levels[rows.shape[1] - 1]
    where = result.positions(rows)
    return level.support[where], level.stderr[where]


def _squared_moment(result: FrequentItemsets, squared: IntArray, plain: IntArray) -> FloatArray:
    """``E[Π_{squared} z² · Π_{plain} z] = Σ_{V⊆squared} e0^{|sq|−|V|} d^{|V|} s(V ∪ plain)``
    per row, with clipped plug-in supports (``plain`` non-empty)."""
    e0 = result.channel.e0
    d = result.channel.e1 - e0
    k = squared.shape[1]
    total = np.zeros(squared.shape[0], dtype=np.float64)
    for positions in _subset_masks(k):
        rows = np.sort(np.concatenate([squared[:, list(positions)], plain], axis=1), axis=1)
        support = np.clip(_supports(result, rows)[0], 0.0, 1.0)
        total += (e0 ** (k - len(positions))) * (d ** len(positions)) * support
    return total


@dataclass(frozen=True)
class _Split:
    """One split ``A → C`` of every itemset of a level: items and supports, per row."""

    antecedent: IntArray
    consequent: IntArray
    union: IntArray
    su: FloatArray
    sa: FloatArray
    sc: FloatArray


def _rule_stderrs(result: FrequentItemsets, split: _Split) -> tuple[FloatArray, FloatArray]:
    """Delta-method standard errors of confidence and lift for each rule row, with the
    gradient at the split's supports."""
    n = result.n
    raw_u, vu = _supports(result, split.union)
    va = _supports(result, split.antecedent)[1]
    vc = _supports(result, split.consequent)[1]
    u = np.clip(raw_u, 0.0, 1.0)
    cov_ua = (_squared_moment(result, split.antecedent, split.consequent) - u) / n
    cov_uc = (_squared_moment(result, split.consequent, split.antecedent) - u) / n
    var_u, var_a, var_c = vu**2, va**2, vc**2
    su, sa, sc = split.su, split.sa, split.sc
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        gu, ga = 1.0 / sa, -su / sa**2
        var_conf = gu * gu * var_u + ga * ga * var_a + 2.0 * gu * ga * cov_ua
        lu, la, lc = 1.0 / (sa * sc), -su / (sa**2 * sc), -su / (sa * sc**2)
        var_lift = (
            lu * lu * var_u
            + la * la * var_a
            + lc * lc * var_c
            + 2.0 * (lu * la * cov_ua + lu * lc * cov_uc)
        )
    return np.sqrt(np.maximum(var_conf, 0.0)), np.sqrt(np.maximum(var_lift, 0.0))


def _split_rules(
    result: FrequentItemsets, split: _Split, min_confidence: float, projected: bool
) -> list[AssociationRule]:
    """The rules of one split with ``confidence ≥ min_confidence`` (see the docstring)."""
    z = z_value(result.confidence)
    keep = (split.sa > 0.0) & (split.sc > 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        conf = np.where(keep, split.su / split.sa, 0.0)
        lift = np.where(keep, conf / split.sc, 0.0)
    conf_se, lift_se = _rule_stderrs(result, split)
    conf_low, conf_high = conf - z * conf_se, conf + z * conf_se
    lift_low = lift - z * lift_se
    if projected:
        conf = np.clip(conf, 0.0, 1.0)  # a no-op but for rounding: s̃(U) ≤ s̃(A)
        conf_se = np.minimum(conf_se, CONFIDENCE_STDERR_BOUND)
        conf_low = np.clip(conf - z * conf_se, 0.0, 1.0)
        conf_high = np.clip(conf + z * conf_se, 0.0, 1.0)
        lift_low = np.maximum(lift_low, 0.0)
    rules: list[AssociationRule] = []
    for i in np.flatnonzero(keep & (conf >= min_confidence)).tolist():
        low, high = float(conf_low[i]), float(conf_high[i])
        rules.append(
            AssociationRule(
                antecedent=tuple(split.antecedent[i].tolist()),
                consequent=tuple(split.consequent[i].tolist()),
                support=float(split.su[i]),
                confidence=float(conf[i]),
                lift=float(lift[i]),
                antecedent_support=float(split.sa[i]),
                consequent_support=float(split.sc[i]),
                confidence_stderr=float(conf_se[i]),
                lift_stderr=float(lift_se[i]),
                confidence_ci_low=low,
                confidence_ci_high=high,
                lift_ci_low=float(lift_low[i]),
                lift_ci_high=float(lift[i] + z * lift_se[i]),
                informative=informative(max(low, 0.0), min(high, 1.0)),
            )
        )
    return rules


def _level_rules(
    result: FrequentItemsets, level: ItemsetLevel, min_confidence: float, projected: bool
) -> list[AssociationRule]:
    """Every rule ``A → C`` with ``A ∪ C`` an itemset of ``level`` (length ≥ 2)."""
    k = level.k
    supports = (
        consistent_supports(result, level) if projected else subset_supports(result, level.items)
    )
    full = (1 << k) - 1
    found: list[AssociationRule] = []
    for mask, positions in enumerate(_subset_masks(k)):
        if mask in (0, full):
            continue
        rest = [i for i in range(k) if i not in positions]
        split = _Split(
            antecedent=level.items[:, list(positions)],
            consequent=level.items[:, rest],
            union=level.items,
            su=supports[:, full],
            sa=supports[:, mask],
            sc=supports[:, full ^ mask],
        )
        found += _split_rules(result, split, min_confidence, projected)
    return found


def association_rules(
    result: FrequentItemsets,
    min_confidence: float = 0.0,
    max_rules: int | None = None,
    *,
    projected: bool = True,
) -> list[AssociationRule]:
    """Every rule ``A → C`` (``A``, ``C`` non-empty, disjoint, ``A ∪ C`` frequent) with
    ``confidence ≥ min_confidence``: the informative rules first, each group strongest
    first (confidence, then support).

    With ``max_rules`` only the first ``max_rules`` of that order are returned.
    ``projected=False`` is the plain ratio of the unbiased supports, with unclipped
    intervals (the estimator before consistency; for comparison only).
    """
    check_mining_query(result.min_support, None, 0.0, min_confidence, result.confidence)
    found: list[AssociationRule] = []
    for level in result.levels[1:]:
        if len(level):
            found += _level_rules(result, level, min_confidence, projected)
    found.sort(
        key=lambda r: (not r.informative, -r.confidence, -r.support, r.antecedent, r.consequent)
    )
    return found if max_rules is None else found[:max_rules]


def itemsets_table(
    result: FrequentItemsets, names: Sequence[str] | None = None
) -> dict[str, list[Any]]:
    """The itemsets as the columns mlxtend's ``association_rules`` accepts.

    ``{"support": [...], "itemsets": [frozenset, ...]}``: ``pandas.DataFrame(table)`` is
    the data frame ``mlxtend.frequent_patterns.apriori`` returns (items as names when
    ``names`` is given, else as indices), so
    ``association_rules(DataFrame(table), num_itemsets=result.n)`` works on it. The
    supports are the raw unbiased estimates.
    """
    supports: list[float] = []
    itemsets: list[frozenset[Any]] = []
    for items, support, _ in result.records():
        supports.append(support)
        itemsets.append(frozenset(items if names is None else (names[i] for i in items)))
    return {"support": supports, "itemsets": itemsets}
