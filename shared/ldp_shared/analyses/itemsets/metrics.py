"""The accuracy metrics of Rizvi and Haritsa (VLDB 2002, §5) per itemset length.

The support error ``ρ = (1/|F∩R|) Σ |ŝ - s|/s · 100`` over the correctly identified
itemsets, and the identity errors ``σ+ = |R \\ F|/|F| · 100`` (false positives) and
``σ- = |F \\ R|/|F| · 100`` (false negatives), per itemset length, where ``F`` are the
true frequent itemsets (Apriori on the undistorted baskets) and ``R`` the reported ones.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ldp_shared.analyses.itemsets.mining import FrequentItemsets
from ldp_shared.errors import InvalidQueryError


@dataclass(frozen=True)
class LengthAccuracy:
    """The paper's metrics for the itemsets of one length (percentages).

    ``rho`` is ``None`` when no itemset was identified correctly; ``sigma_plus`` and
    ``sigma_minus`` are ``None`` when there is no true frequent itemset of that length.
    """

    length: int
    true_frequent: int
    reported: int
    correct: int
    rho: float | None
    sigma_plus: float | None
    sigma_minus: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "rho": self.rho,
            "sigma_plus": self.sigma_plus,
            "sigma_minus": self.sigma_minus,
            "true_frequent": self.true_frequent,
            "reported": self.reported,
            "correct": self.correct,
        }


def evaluate(estimate: FrequentItemsets, truth: FrequentItemsets) -> list[LengthAccuracy]:
    """Support error ρ and identity errors σ+, σ- per length (Rizvi and Haritsa §5).

    ``truth`` is Apriori on the undistorted baskets (``BitChannel.exact()``) at the
    estimate's ``min_support`` without reduction; the estimate reports every itemset at
    or above its (possibly reduced) threshold. ``truth`` must not be limited to shorter
    itemsets than ``estimate``.
    """
    if truth.threshold != estimate.min_support:
        raise InvalidQueryError(
            f"the truth was mined at {truth.threshold}, the estimate's min_support is "
            f"{estimate.min_support}"
        )
    if truth.max_size is not None and (
        estimate.max_size is None or estimate.max_size > truth.max_size
    ):
        raise InvalidQueryError("the truth must be mined up to the estimate's max_size")
    return evaluate_supports(estimate.as_dict(), truth.as_dict())


def evaluate_supports(
    reported: Mapping[frozenset[Any], float], true: Mapping[frozenset[Any], float]
) -> list[LengthAccuracy]:
    """ρ, σ+ and σ- per length from ``{itemset: support}`` mappings (any item labels).

    ``true`` holds the true frequent itemsets with their true supports, ``reported``
    the reported ones with their estimates (see :func:`evaluate`).
    """
    true_sets: dict[int, dict[frozenset[Any], float]] = {}
    for itemset, support in true.items():
        true_sets.setdefault(len(itemset), {})[itemset] = support
    found: dict[int, dict[frozenset[Any], float]] = {}
    for itemset, support in reported.items():
        found.setdefault(len(itemset), {})[itemset] = support
    out: list[LengthAccuracy] = []
    for k in sorted(set(true_sets) | set(found)):
        f = true_sets.get(k, {})
        r = found.get(k, {})
        correct = [itemset for itemset in r if itemset in f]
        rho = (
            100.0 * float(np.mean([abs(r[i] - f[i]) / f[i] for i in correct])) if correct else None
        )
        plus = 100.0 * (len(r) - len(correct)) / len(f) if f else None
        minus = 100.0 * (len(f) - len(correct)) / len(f) if f else None
        out.append(LengthAccuracy(k, len(f), len(r), len(correct), rho, plus, minus))
    return out


def accuracy_json(metrics: Sequence[LengthAccuracy]) -> dict[str, dict[str, Any]]:
    """``{"1": {"rho": ..., "sigma_plus": ..., "sigma_minus": ..., ...}, ...}``."""
    return {str(m.length): m.to_json() for m in metrics}
