"""Association rules from mined itemsets, and the itemsets as mlxtend's table.

The rules of Rizvi and Haritsa (VLDB 2002) are those of Apriori, computed from the
estimated supports: ``confidence = ŝ(A ∪ C)/ŝ(A)`` and ``lift = confidence/ŝ(C)``,
as mlxtend's ``association_rules`` computes them from the same supports (tested).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ldp_shared.analyses.itemsets.apriori import _subset_masks
from ldp_shared.analyses.itemsets.mining import FrequentItemsets
from ldp_shared.itemset_wire import check_mining_query


@dataclass(frozen=True)
class AssociationRule:
    """``antecedent → consequent`` with the estimated support of their union.

    ``confidence = ŝ(A ∪ C)/ŝ(A)`` and ``lift = confidence/ŝ(C)`` (as mlxtend's
    ``association_rules`` computes them from the same supports).
    """

    antecedent: tuple[int, ...]
    consequent: tuple[int, ...]
    support: float
    confidence: float
    lift: float
    antecedent_support: float
    consequent_support: float


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
