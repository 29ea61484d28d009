"""Association rules from mined itemsets, with standard errors, and the itemsets as
mlxtend's table.

The rules of Rizvi and Haritsa (VLDB 2002) are those of Apriori, computed from the
estimated supports: ``confidence = ŝ(A ∪ C)/ŝ(A)`` and ``lift = confidence/ŝ(C)``,
as mlxtend's ``association_rules`` computes them from the same supports (tested).

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
``g = (1/ŝ_A, −ŝ_U/ŝ_A²)`` over ``(U, A)``, and ``Var(lift)`` with
``g = (1/(ŝ_A ŝ_C), −ŝ_U/(ŝ_A² ŝ_C), −ŝ_U/(ŝ_A ŝ_C²))`` over ``(U, A, C)``. The
intervals ``estimate ± z·stderr`` are first-order: they need ``ŝ_A`` and ``ŝ_C`` many
standard errors away from 0 (``tests/statistical/test_itemsets.py`` measures their
coverage).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ldp_shared.analyses.itemsets.apriori import _subset_masks
from ldp_shared.analyses.itemsets.bits import FloatArray, IntArray
from ldp_shared.analyses.itemsets.mining import FrequentItemsets
from ldp_shared.itemset_wire import check_mining_query


@dataclass(frozen=True)
class AssociationRule:
    """``antecedent → consequent`` with the estimated support of their union.

    ``confidence = ŝ(A ∪ C)/ŝ(A)`` and ``lift = confidence/ŝ(C)`` (as mlxtend's
    ``association_rules`` computes them from the same supports), with delta-method
    standard errors (see the module docstring).
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


def _rule_stderrs(
    result: FrequentItemsets, antecedent: IntArray, consequent: IntArray, union: IntArray
) -> tuple[FloatArray, FloatArray]:
    """Delta-method standard errors of confidence and lift for each rule row."""
    n = result.n
    su, vu = _supports(result, union)
    sa, va = _supports(result, antecedent)
    sc, vc = _supports(result, consequent)
    u = np.clip(su, 0.0, 1.0)
    cov_ua = (_squared_moment(result, antecedent, consequent) - u) / n
    cov_uc = (_squared_moment(result, consequent, antecedent) - u) / n
    var_u, var_a, var_c = vu**2, va**2, vc**2
    with np.errstate(divide="ignore", invalid="ignore"):
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


def association_rules(
    result: FrequentItemsets, min_confidence: float = 0.0, max_rules: int | None = None
) -> list[AssociationRule]:
    """Every rule ``A → C`` (``A``, ``C`` non-empty, disjoint, ``A ∪ C`` frequent) with
    ``confidence ≥ min_confidence``, strongest first (confidence, then support).

    With ``max_rules`` only the first ``max_rules`` of that order are returned.
    """
    check_mining_query(result.min_support, None, 0.0, min_confidence, result.confidence)
    found: list[AssociationRule] = []
    for level in result.levels[1:]:
        if len(level) == 0:
            continue
        k = level.k
        masks = _subset_masks(k)[1:-1]
        for positions in masks:
            rest = [i for i in range(k) if i not in positions]
            antecedent = level.items[:, list(positions)]
            consequent = level.items[:, rest]
            a_support = result.levels[len(positions) - 1].support[result.positions(antecedent)]
            c_support = result.levels[len(rest) - 1].support[result.positions(consequent)]
            with np.errstate(divide="ignore", invalid="ignore"):
                conf = level.support / a_support
                lift = conf / c_support
            conf_se, lift_se = _rule_stderrs(result, antecedent, consequent, level.items)
            for i in np.flatnonzero(conf >= min_confidence).tolist():
                found.append(
                    AssociationRule(
                        antecedent=tuple(antecedent[i].tolist()),
                        consequent=tuple(consequent[i].tolist()),
                        support=float(level.support[i]),
                        confidence=float(conf[i]),
                        lift=float(lift[i]),
                        antecedent_support=float(a_support[i]),
                        consequent_support=float(c_support[i]),
                        confidence_stderr=float(conf_se[i]),
                        lift_stderr=float(lift_se[i]),
                    )
                )
    found.sort(key=lambda r: (-r.confidence, -r.support, r.antecedent, r.consequent))
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
